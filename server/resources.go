package server

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/codec"
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

// MetricHistory is one resource's traffic over a range, step by step.
type MetricHistory struct {
	Resource string `json:"resource" example:"GET:/api/orders"`
	Step     string `json:"step" example:"1m"`
	// From and To are the range answered, rounded out to the step.
	From time.Time `json:"from" format:"date-time"`
	To   time.Time `json:"to" format:"date-time"`
	// Points has one point per step with traffic, oldest first.
	Points []MetricPoint `json:"points"`
	// Covered are the spans of the range, oldest first, made of whole
	// steps in which a Sluice server was up (in at least one minute of
	// the step): a step there without a point had no traffic; a step
	// outside them without a point is unknown (the server was down, or
	// the minute is older than Sluice's heartbeats).
	Covered []CoveredSpan `json:"covered"`
}

// CoveredSpan is a span of a history in which a server was up, from
// inclusive, to exclusive, both on the step.
type CoveredSpan struct {
	From time.Time `json:"from" format:"date-time"`
	To   time.Time `json:"to" format:"date-time"`
}

// MetricPoint is a resource's traffic in the step that starts at Time.
type MetricPoint struct {
	Time time.Time `json:"time" format:"date-time"`
	Calls
	// AvgRtMs is the mean response time of the completed calls, 0 if none.
	AvgRtMs float64 `json:"avgRtMs" example:"12.5" format:"double"`
	// MinRtMs and MaxRtMs are the fastest and slowest completed calls, 0
	// if none.
	MinRtMs int64 `json:"minRtMs" example:"2"`
	MaxRtMs int64 `json:"maxRtMs" example:"340"`
	// MaxConcurrency is the most calls in flight at once.
	MaxConcurrency int64 `json:"maxConcurrency" example:"9"`
	// BusiestSecond is the most calls, passed or blocked, that one engine
	// (the server or an instance) saw in one second of the step: a
	// second counts in the minute it ends in; the step's is its minutes'
	// largest. It is 0 in rows written before Sluice kept it.
	BusiestSecond int64 `json:"busiestSecond" example:"41"`
	// AdaptiveLimitMin, AdaptiveLimitMax and AdaptiveLimitLast are the
	// least, greatest and latest limit of the resource's adaptive
	// concurrency rule in the step (the latest: of its latest minute that
	// had one); 0 when it had none.
	AdaptiveLimitMin  int64 `json:"adaptiveLimitMin" example:"80"`
	AdaptiveLimitMax  int64 `json:"adaptiveLimitMax" example:"120"`
	AdaptiveLimitLast int64 `json:"adaptiveLimitLast" example:"96"`
	// BlockedBy splits block by the rule that blocked and its kind, by
	// reason then rule: its entries sum to block. Absent when nothing
	// was blocked, in rows written before Sluice kept it, and in an
	// instance's own history (?instance=).
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

// writeHistory answers h, the history q asked for, as writeJSON would
// answer historyOf(q, h), byte for byte (a test holds the two equal),
// without reflection: a day of minutes is 1,440 points, and
// encoding/json spent a third of the answer's server time on them.
func writeHistory(c *fiber.Ctx, q metrics.HistoryQuery, h metrics.History) error {
	answer := historyOf(q, h)
	body := appendHistoryJSON(make([]byte, 0, 64+200*len(answer.Points)), answer)
	c.Status(http.StatusOK).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(body)
}

// historyOf is h, the history q asked for, as the API answers it.
func historyOf(q metrics.HistoryQuery, h metrics.History) MetricHistory {
	points := make([]MetricPoint, len(h.Points))
	for i, p := range h.Points {
		points[i] = MetricPoint{
			Time: time.UnixMilli(p.StartMs).UTC(), Calls: callsOf(p.Calls), AvgRtMs: p.AvgRtMs(),
			MinRtMs: p.MinRtMs, MaxRtMs: p.MaxRtMs, MaxConcurrency: p.MaxConcurrency,
			BusiestSecond: p.BusiestSecond, AdaptiveLimitMin: p.AdaptiveLimitMin, AdaptiveLimitMax: p.AdaptiveLimitMax,
			AdaptiveLimitLast: p.AdaptiveLimitLast, BlockedBy: ruleBlocksOf(p.BlockedBy),
		}
	}
	return MetricHistory{
		Resource: q.Resource, Step: q.Step.Name,
		From: time.UnixMilli(h.FromMs).UTC(), To: time.UnixMilli(h.ToMs).UTC(),
		Points: points, Covered: coveredSpans(h.CoveredMs, q.Step.Ms),
	}
}

// coveredSpans merges the covered steps, oldest first, into spans.
func coveredSpans(startsMs []int64, stepMs int64) []CoveredSpan {
	spans := []CoveredSpan{}
	for _, ms := range startsMs {
		from, to := time.UnixMilli(ms).UTC(), time.UnixMilli(ms+stepMs).UTC()
		if n := len(spans); n > 0 && spans[n-1].To.Equal(from) {
			spans[n-1].To = to
			continue
		}
		spans = append(spans, CoveredSpan{From: from, To: to})
	}
	return spans
}

// appendHistoryJSON appends h as marshalJSON encodes it.
func appendHistoryJSON(b []byte, h MetricHistory) []byte {
	b = codec.AppendString(append(b, `{"resource":`...), h.Resource)
	b = codec.AppendString(append(b, `,"step":`...), h.Step)
	b = codec.AppendTime(append(b, `,"from":`...), h.From)
	b = codec.AppendTime(append(b, `,"to":`...), h.To)
	b = append(b, `,"points":[`...)
	for i, p := range h.Points {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendTime(append(b, `{"time":`...), p.Time)
		b = strconv.AppendInt(append(b, `,"pass":`...), p.Pass, 10)
		b = strconv.AppendInt(append(b, `,"block":`...), p.Block, 10)
		b = strconv.AppendInt(append(b, `,"shadowBlock":`...), p.ShadowBlock, 10)
		b = strconv.AppendInt(append(b, `,"complete":`...), p.Complete, 10)
		b = strconv.AppendInt(append(b, `,"error":`...), p.Error, 10)
		b = codec.AppendFloat(append(b, `,"avgRtMs":`...), p.AvgRtMs)
		b = strconv.AppendInt(append(b, `,"minRtMs":`...), p.MinRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxRtMs":`...), p.MaxRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxConcurrency":`...), p.MaxConcurrency, 10)
		b = strconv.AppendInt(append(b, `,"busiestSecond":`...), p.BusiestSecond, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitMin":`...), p.AdaptiveLimitMin, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitMax":`...), p.AdaptiveLimitMax, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitLast":`...), p.AdaptiveLimitLast, 10)
		if len(p.BlockedBy) > 0 {
			b = append(b, `,"blockedBy":[`...)
			for j, rb := range p.BlockedBy {
				if j > 0 {
					b = append(b, ',')
				}
				b = codec.AppendString(append(b, `{"reason":`...), rb.Reason)
				b = codec.AppendString(append(b, `,"rule":`...), rb.Rule)
				b = strconv.AppendInt(append(b, `,"blocked":`...), rb.Blocked, 10)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"covered":[`...)
	for i, c := range h.Covered {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendTime(append(b, `{"from":`...), c.From)
		b = codec.AppendTime(append(b, `,"to":`...), c.To)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
