package server

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// BreakerList is every loaded circuit breaker's state.
type BreakerList struct {
	Items []Breaker `json:"items"`
}

// Breaker is one circuit breaker's state and its window's figures.
type Breaker struct {
	Rule     string `json:"rule" example:"pay-errors"`
	Resource string `json:"resource" example:"POST:/api/pay"`
	Strategy string `json:"strategy" enums:"slowRequestRatio,errorRatio,errorCount" example:"errorRatio"`
	State    string `json:"state" enums:"closed,open,halfOpen" example:"open"`
	// Since is when the breaker entered its state.
	Since  time.Time     `json:"since" format:"date-time"`
	Window BreakerWindow `json:"window"`
}

// BreakerWindow counts the calls completed in a breaker's window
// (statIntervalMs).
type BreakerWindow struct {
	Total  int64 `json:"total" example:"40"`
	Errors int64 `json:"errors" example:"22"`
	// Slow counts calls slower than maxAllowedRtMs (slowRequestRatio only).
	Slow int64 `json:"slow" example:"0"`
}

// BreakerTransitionList is the stored circuit breaker transitions of a
// range, oldest first; those of one millisecond in the order they
// happened.
type BreakerTransitionList struct {
	Items []BreakerEvent `json:"items"`
	// From and To are the range answered: from inclusive, to exclusive.
	From time.Time `json:"from" format:"date-time"`
	To   time.Time `json:"to" format:"date-time"`
	// Truncated is true when the range held more than maxBreakerTransitions:
	// Items are then the newest of them.
	Truncated bool `json:"truncated" example:"false"`
}

// maxBreakerTransitions is the most transitions one answer holds.
const maxBreakerTransitions = 1000

// defaultBreakerRangeMs is the range answered without from: a day.
const defaultBreakerRangeMs = 24 * 3600 * 1000

type breakerHandler struct {
	engine *engine.Engine
	store  *store.Store
}

func bindBreakers(api apiRoutes, h *breakerHandler) {
	api.get("/breakers", viewers, h.list)
	api.get("/breakers/transitions", viewers, h.transitions)
}

// list answers the state of every enabled circuit breaker rule.
//
//	@Summary	Circuit breaker states
//	@ID			listBreakers
//	@Tags		breakers
//	@Produce	json
//	@Success	200	{object}	BreakerList
//	@Failure	401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/breakers [get]
func (h *breakerHandler) list(c *fiber.Ctx) error {
	statuses := h.engine.Breakers()
	items := make([]Breaker, len(statuses))
	for i, s := range statuses {
		items[i] = Breaker{
			Rule: s.Rule, Resource: s.Resource, Strategy: string(s.Strategy), State: string(s.State),
			Since:  time.UnixMilli(s.SinceMs).UTC(),
			Window: BreakerWindow{Total: s.Total, Errors: s.Errors, Slow: s.Slow},
		}
	}
	return writeJSON(c, http.StatusOK, BreakerList{Items: items})
}

// transitions answers the stored transitions of a range.
//
//	@Summary		Circuit breaker transitions
//	@ID				listBreakerTransitions
//	@Description	Every circuit breaker state change stored in the range, oldest first, those of one millisecond in the order they happened; of one resource if resource is given. At most 1,000: when the range holds more, the newest 1,000 and "truncated": true. Kept as long as the metrics (--metrics-retention).
//	@Tags			breakers
//	@Produce		json
//	@Param			resource	query		string	false	"only this resource (exact name)"
//	@Param			from		query		string	false	"start, inclusive: RFC 3339 or Unix milliseconds (default: 24 h before to)"
//	@Param			to			query		string	false	"end, exclusive: RFC 3339 or Unix milliseconds (default: now)"
//	@Success		200			{object}	BreakerTransitionList
//	@Failure		400			{object}	ErrorResponse	"bad query parameters, every one named in details"
//	@Failure		401			{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/breakers/transitions [get]
func (h *breakerHandler) transitions(c *fiber.Ctx) error {
	var bad badParams
	toMs, err := timeParam(c, "to", h.engine.Clock().NowMs()+1)
	bad.note(err)
	fromMs, err := timeParam(c, "from", toMs-defaultBreakerRangeMs)
	bad.note(err)
	resource, err := resourceParam(c)
	bad.note(err)
	if err := bad.err(); err != nil {
		return err
	}
	if err := checkRange(fromMs, toMs); err != nil {
		return err
	}
	rows, err := h.store.BreakerTransitions(c.UserContext(), resource, fromMs, toMs, maxBreakerTransitions+1)
	if err != nil {
		return err
	}
	truncated := len(rows) > maxBreakerTransitions
	if truncated {
		rows = rows[1:]
	}
	items := make([]BreakerEvent, len(rows))
	for i, r := range rows {
		items[i] = BreakerEvent{Rule: r.Rule, Resource: r.Resource, From: r.From, To: r.To, Time: time.UnixMilli(r.AtMs).UTC()}
	}
	return writeJSON(c, http.StatusOK, BreakerTransitionList{
		Items: items, From: time.UnixMilli(fromMs).UTC(), To: time.UnixMilli(toMs).UTC(), Truncated: truncated,
	})
}
