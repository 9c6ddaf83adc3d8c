package server

import (
	"net/http"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/metrics"
)

// ResourceList is one page of resources.
type ResourceList struct {
	Items []ResourceItem `json:"items"`
	// Summary totals the last minute of every resource but Sluice's own
	// API routes, whatever q and the page.
	Summary  RecentFigures `json:"summary"`
	Total    int64         `json:"total" example:"1"`
	Page     int           `json:"page" example:"1"`
	PageSize int           `json:"pageSize" example:"50"`
}

// ResourceItem is a resource with its rules, when it was seen and its
// traffic now and in the last minute.
type ResourceItem struct {
	Name string `json:"name" example:"GET:/api/orders"`
	// Rules counts the rules that name the resource, disabled ones too.
	Rules int `json:"rules" example:"2"`
	// FirstSeen and LastSeen bound the resource's traffic; null while it
	// had none.
	FirstSeen  *time.Time    `json:"firstSeen" extensions:"x-nullable" format:"date-time"`
	LastSeen   *time.Time    `json:"lastSeen" extensions:"x-nullable" format:"date-time"`
	Live       LiveStats     `json:"live"`
	LastMinute MinuteFigures `json:"lastMinute"`
	// Recent is the last 60 seconds, what sort=-blockedShare ranks by.
	Recent RecentFigures `json:"recent"`
}

// RecentFigures is traffic over the last 60 seconds the server sampled
// (the live backlog of the metric stream): rates are the calls of those
// seconds divided by 60.
type RecentFigures struct {
	PassQps        float64 `json:"passQps" example:"117.5" format:"double"`
	BlockQps       float64 `json:"blockQps" example:"2.5" format:"double"`
	ShadowBlockQps float64 `json:"shadowBlockQps" example:"0" format:"double"`
	// BlockedShare is blocked calls over passed and blocked ones, 0 to 1;
	// 0 without calls.
	BlockedShare float64 `json:"blockedShare" example:"0.0208" format:"double"`
}

// recentFiguresOf is r as the API answers it.
func recentFiguresOf(r metrics.Recent) RecentFigures {
	perSecond := func(n uint64) float64 { return float64(n) / metrics.RecentSeconds }
	return RecentFigures{
		PassQps: perSecond(r.Pass), BlockQps: perSecond(r.Block), ShadowBlockQps: perSecond(r.ShadowBlock),
		BlockedShare: r.BlockedShare(),
	}
}

// MinuteFigures is a resource's traffic in the last finished UTC minute.
type MinuteFigures struct {
	Calls
	// AvgRtMs is the mean response time of the completed calls, 0 if none.
	AvgRtMs float64 `json:"avgRtMs" example:"12.5" format:"double"`
	// BlockedBy splits block by rule and reason, as a history point's;
	// absent when nothing was blocked.
	BlockedBy []RuleBlocks `json:"blockedBy,omitempty"`
}

type resourceHandler struct {
	metrics *metrics.Pipeline
}

func bindResources(api apiRoutes, h *resourceHandler) {
	api.get("/resources", viewers, h.list)
	api.get("/resources/:name/metrics", viewers, h.history)
}

// list answers one page of every resource the engine has seen, a rule names
// or the history holds, idle ones included.
//
//	@Summary		List resources
//	@ID				listResources
//	@Description	Every resource that had traffic (within retention) or that a rule names, paged in the database: a page costs what it holds, not what the list holds. live is the last second; lastMinute the last finished UTC minute, stored and not yet flushed alike, its blocks split by rule and reason in blockedBy (absent without blocks). q matches a substring of the name, ASCII letters in either case. sort=name orders by name (byte-wise); -blockQps and -passQps put the resources with that live rate first, highest first (ties by name), then every other resource by name. -blockedShare puts first the resources with calls in the last 60 seconds (recent), by their blocked share, highest first, ties by blocked calls, then by name, then every other resource by name: a resource blocking all its calls never ranks below one blocking some. summary totals the last 60 seconds of every resource but Sluice's own API routes ("METHOD /api/v1/…").
//	@Tags			resources
//	@Produce		json
//	@Param			q			query		string	false	"substring of the name, ASCII letters in either case"
//	@Param			sort		query		string	false	"order: by name, by live block or pass rate, or by blocked share over the last 60 seconds, highest first"	Enums(name, -blockQps, -passQps, -blockedShare)	default(name)
//	@Param			page		query		int		false	"page, from 1"													default(1)							minimum(1)
//	@Param			pageSize	query		int		false	"resources per page, 1 to 500"									default(50)							minimum(1)	maximum(500)
//	@Success		200			{object}	ResourceList
//	@Failure		400			{object}	ErrorResponse	"bad query parameters, every one named in details"
//	@Failure		401			{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/resources [get]
func (h *resourceHandler) list(c *fiber.Ctx) error {
	var bad badParams
	page, err := pageParams(c)
	bad.note(err)
	order := metrics.Order(c.Query("sort", string(metrics.ByName)))
	switch order {
	case metrics.ByName, metrics.ByBlockQps, metrics.ByPassQps, metrics.ByBlockedShare:
	default:
		bad.add("sort", "must be one of name, -blockQps, -passQps, -blockedShare")
	}
	q, err := searchParam(c, "q")
	bad.note(err)
	if err := bad.err(); err != nil {
		return err
	}
	views, total, err := h.metrics.Resources(c.UserContext(), q, order, page)
	if err != nil {
		return err
	}
	items := make([]ResourceItem, len(views))
	for i, v := range views {
		items[i] = ResourceItem{
			Name: v.Name, Rules: v.Rules, FirstSeen: v.FirstSeen, LastSeen: v.LastSeen, Live: liveStatsOf(v.Live),
			LastMinute: MinuteFigures{Calls: callsOf(v.LastMinute.Calls), AvgRtMs: v.LastMinute.AvgRtMs(), BlockedBy: ruleBlocksOf(v.LastMinuteBlocks)},
			Recent:     recentFiguresOf(v.Recent),
		}
	}
	return writeJSON(c, http.StatusOK, ResourceList{
		Items: items, Summary: recentFiguresOf(h.metrics.RecentTotals()), Total: total, Page: page.Number, PageSize: page.Size,
	})
}

// history answers one resource's history, rolled up to the step.
//
//	@Summary		Metric history of a resource
//	@ID				getResourceMetrics
//	@Description	Counts are totalled per step; steps are UTC-aligned (1d starts at 00:00 UTC). from is rounded down and to up to the step; from is inclusive, to exclusive. At most 10,000 points ((to - from) / step), else 400 naming step. A to that rounds up past 9999-12-31T23:59:59Z (the last time RFC 3339 writes) is 400 naming to. Steps without traffic are absent, not zero-filled; covered says which steps a server was up in (a heartbeat each minute, kept as long as the metrics), so that a step without a point inside covered had no traffic, and one outside it is unknown: an outage, or a time before Sluice kept heartbeats (migration 00019). Data is as fresh as the last flush (--metrics-flush-interval). A resource never seen is 404; a known one without rows in the range answers "points": []. blockedBy splits a point's block by rule and reason (docs/api.md#blocks-by-rule), summed over the server and every instance; it is absent without blocks and with instance.
//	@Tags			resources
//	@Produce		json
//	@Param			name	path		string	true	"resource name, URL-escaped (GET%3A%2Fapi%2Forders)"
//	@Param			from	query		string	false	"start, inclusive: RFC 3339 or Unix milliseconds (default: 60 steps before to)"
//	@Param			to		query		string	false	"end, exclusive: RFC 3339 or Unix milliseconds (default: now)"
//	@Param			step		query		string	false	"step"	Enums(1m, 5m, 15m, 1h, 1d)	default(1m)
//	@Param			instance	query		string	false	"only what the instance of this id reported (GET /instances); absent: the sum over the server's own engine and every instance"
//	@Success		200		{object}	MetricHistory
//	@Failure		400		{object}	ErrorResponse	"bad query parameters, every one named in details"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404		{object}	ErrorResponse	"the resource was never seen, or no instance has that id"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/resources/{name}/metrics [get]
func (h *resourceHandler) history(c *fiber.Ctx) error {
	q, err := h.historyQuery(c)
	if err != nil {
		return err
	}
	history, err := h.metrics.History(c.UserContext(), q)
	if err != nil {
		return err
	}
	return writeHistory(c, q, history)
}

// historyQuery reads the history's path and query parameters: one 400
// names every bad one.
func (h *resourceHandler) historyQuery(c *fiber.Ctx) (metrics.HistoryQuery, error) {
	name, err := url.PathUnescape(c.Params("name"))
	if err != nil {
		return metrics.HistoryQuery{}, BadRequest("name must be a URL-escaped resource name", FieldError{"name", "must be URL-escaped"})
	}
	var bad badParams
	step, err := metrics.StepNamed(c.Query("step", "1m"))
	bad.note(err)
	toMs, err := timeParam(c, "to", h.metrics.NowMs())
	bad.note(err)
	fromMs, err := timeParam(c, "from", max(0, toMs-metrics.DefaultHistorySteps*step.Ms))
	bad.note(err)
	if err := bad.err(); err != nil {
		return metrics.HistoryQuery{}, err
	}
	if err := checkRange(fromMs, toMs); err != nil {
		return metrics.HistoryQuery{}, err
	}
	return metrics.HistoryQuery{Resource: name, Step: step, FromMs: fromMs, ToMs: toMs, Instance: c.Query("instance")}, nil
}
