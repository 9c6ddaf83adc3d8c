package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/store"
)

// Bounds of the metric queries (docs/api.md).
const (
	defaultTopLimit = 10
	maxTopLimit     = 100
)

// TopList ranks resources by their traffic over a range.
type TopList struct {
	Items []TopItem `json:"items"`
}

// TopItem is one resource's traffic summed over the range.
type TopItem struct {
	Resource string `json:"resource" example:"GET:/api/orders"`
	Calls
	// AvgRtMs is the mean response time of the completed calls, 0 if none.
	AvgRtMs float64 `json:"avgRtMs" example:"12.5" format:"double"`
}

// HistorySteps is what a client needs to ask for a history: its steps,
// the most points one answer may hold, and how fresh the stored figures
// are.
type HistorySteps struct {
	// Steps are the history's steps, smallest first.
	Steps []HistoryStep `json:"steps"`
	// MaxPoints is the most steps, (to - from) / step, one answer may span.
	MaxPoints int `json:"maxPoints" example:"10000"`
	// FlushIntervalMs is how often the figures are stored: a history is as
	// fresh as the last flush.
	FlushIntervalMs int64 `json:"flushIntervalMs" example:"10000"`
}

// HistoryStep is a step of the history: its name, as the step parameter
// takes it, and its length. Steps are UTC-aligned.
type HistoryStep struct {
	Name   string `json:"name" example:"5m"`
	StepMs int64  `json:"stepMs" example:"300000"`
}

type metricsHandler struct {
	metrics *metrics.Pipeline
	stream  *streamHub
}

func bindMetrics(api apiRoutes, h *metricsHandler) {
	api.get("/metrics/top", viewers, h.top)
	api.get("/metrics/history-steps", viewers, h.historySteps)
	api.get("/metrics/stream", viewers, h.streamStats)
}

// top ranks the resources by their traffic over a range, as stored by the
// last flush.
//
//	@Summary		Top resources over a range
//	@ID				listTopResources
//	@Description	Ranks the resources with traffic in [from, to), highest first, ties by name. from is rounded down and to up to the minute; the range is read from the rollups (whole UTC days, hours and five minutes) and the minutes at its ends. avgRt ranks resources without completed calls last.
//	@Tags			metrics
//	@Produce		json
//	@Param			from	query		string	false	"start, inclusive: RFC 3339 or Unix milliseconds (default: an hour before to)"
//	@Param			to		query		string	false	"end, exclusive: RFC 3339 or Unix milliseconds (default: now)"
//	@Param			by		query		string	false	"what to rank by"				Enums(block, pass, error, avgRt)	default(block)
//	@Param			limit	query		int		false	"how many resources, 1 to 100"	default(10)							minimum(1)	maximum(100)
//	@Success		200		{object}	TopList
//	@Failure		400		{object}	ErrorResponse	"bad query parameters, every one named in details"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/metrics/top [get]
func (h *metricsHandler) top(c *fiber.Ctx) error {
	var bad badParams
	toMs, err := timeParam(c, "to", h.metrics.NowMs())
	bad.note(err)
	fromMs, err := timeParam(c, "from", max(0, toMs-metrics.DefaultTopRangeMs))
	bad.note(err)
	by := store.TopBy(c.Query("by", string(store.TopByBlock)))
	switch by {
	case store.TopByBlock, store.TopByPass, store.TopByError, store.TopByAvgRt:
	default:
		bad.add("by", "must be one of block, pass, error, avgRt")
	}
	limit := defaultTopLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTopLimit {
			bad.add("limit", fmt.Sprintf("must be a whole number from 1 to %d", maxTopLimit))
		}
		limit = n
	}
	if err := bad.err(); err != nil {
		return err
	}
	if err := checkRange(fromMs, toMs); err != nil {
		return err
	}
	rows, err := h.metrics.Top(c.UserContext(), fromMs, toMs, by, limit)
	if err != nil {
		return err
	}
	items := make([]TopItem, len(rows))
	for i, r := range rows {
		items[i] = TopItem{Resource: r.Resource, Calls: callsOf(r.Calls), AvgRtMs: r.AvgRtMs()}
	}
	return writeJSON(c, http.StatusOK, TopList{Items: items})
}

// historySteps answers the steps and bounds of the history.
//
//	@Summary		Steps and bounds of the history
//	@ID				getHistorySteps
//	@Description	The steps GET /api/v1/resources/{name}/metrics takes, smallest first, with their lengths; the most points one answer may span ((to - from) / step); and the flush interval, how fresh the stored figures are. A client picks the smallest step that fits its range.
//	@Tags			metrics
//	@Produce		json
//	@Success		200	{object}	HistorySteps
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/metrics/history-steps [get]
func (h *metricsHandler) historySteps(c *fiber.Ctx) error {
	steps := make([]HistoryStep, len(metrics.Steps))
	for i, s := range metrics.Steps {
		steps[i] = HistoryStep{Name: s.Name, StepMs: s.Ms}
	}
	return writeJSON(c, http.StatusOK, HistorySteps{
		Steps: steps, MaxPoints: metrics.MaxHistoryPoints, FlushIntervalMs: h.metrics.FlushInterval().Milliseconds(),
	})
}
