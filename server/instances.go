package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/instances"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/store"
)

// Bounds of an instance's report.
const (
	// maxReportRows is the most minute rows, and the most live rows, one
	// report may carry (422 beyond).
	maxReportRows = 10_000
	// maxReportAheadMs is how far past the server's clock a reported
	// minute may start: instances' clocks drift, but not by hours.
	maxReportAheadMs = store.HourMs
	// maxReportedCalls bounds each count of a reported minute: 100
	// million calls a second, beyond any one process. Summed over the
	// default --max-instances of instances and a day's 1,440 minutes it
	// still fits the day rows' 64-bit columns.
	maxReportedCalls = 6_000_000_000
	// maxReportedRtSumMs bounds a reported minute's rtSumMs: its calls'
	// mean response time times maxReportedCalls is 100 ms; it fits the day
	// rows as maxReportedCalls does.
	maxReportedRtSumMs = 600_000_000_000
	// maxReportedRtMs bounds a call's response time, as the check API's
	// rtMs: a day.
	maxReportedRtMs = 86_400_000
	// maxReportedConcurrency bounds the calls in flight one instance
	// reports.
	maxReportedConcurrency = 100_000_000
	// maxReportedQps bounds a live rate: maxReportedCalls a minute.
	maxReportedQps = maxReportedCalls / 60
	// retryNewInstanceSec is the Retry-After of a report refused for a
	// registry full of instances not gone.
	retryNewInstanceSec = 60
)

// InstanceReport is an instance's heartbeat and traffic, posted at most
// every second.
type InstanceReport struct {
	Instance ReportingInstance `json:"instance" validate:"required"`
	// Minutes are finished minutes, each sent until one report of it is
	// answered 204; a minute of a resource reported twice counts once.
	Minutes []ReportedMinute `json:"minutes" validate:"optional"`
	// Live is the instance's live view: the resources with traffic or
	// calls in flight in the last second. It replaces the last report's.
	Live []ReportedLive `json:"live" validate:"optional"`
	// HotValues are the hottest values of the instance's hotspot rules
	// over the last minute, at most 1,000 rules and 20 values a ranking;
	// they replace the last report's, for GET /resources/{name}/hot-values.
	HotValues []ReportedHotValues `json:"hotValues" validate:"optional"`
}

// ReportedHotValues is one hotspot rule's hottest values over the last
// minute on an instance.
type ReportedHotValues struct {
	Resource string `json:"resource" example:"GET:/api/orders" validate:"required"`
	Rule     string `json:"rule" example:"orders-per-user" validate:"required"`
	ParamKey string `json:"paramKey" example:"user" validate:"optional"`
	// Approximate is true when the instance's counts are estimates.
	Approximate bool `json:"approximate" example:"false" validate:"optional"`
	// ByPass and ByBlock are at most 20 values each, most first.
	ByPass  []HotValue `json:"byPass" validate:"optional"`
	ByBlock []HotValue `json:"byBlock" validate:"optional"`
}

// ReportingInstance is who reports.
type ReportingInstance struct {
	// ID is the instance's own id, unique in the fleet: 1 to 128
	// characters, no control characters.
	ID string `json:"id" example:"orders-7f9c4d-xk2lp" validate:"required"`
	// App is the app it runs, whose rules it takes; optional.
	App string `json:"app" example:"orders" validate:"optional"`
	// Hostname is at most 255 characters.
	Hostname string `json:"hostname" example:"orders-7f9c4d-xk2lp" validate:"optional"`
	PID      int64  `json:"pid" example:"1" validate:"optional"`
	// Version is the app's version, at most 64 characters.
	Version string `json:"version" example:"1.4.2" validate:"optional"`
	// RulesRevision is the snapshot revision the instance runs.
	RulesRevision int64 `json:"rulesRevision" example:"42" validate:"optional"`
}

// ReportedMinute is what an instance's engine counted for one resource in
// one finished UTC minute.
type ReportedMinute struct {
	Resource string `json:"resource" example:"GET:/api/orders" validate:"required"`
	// Time is the minute's start, a whole UTC minute.
	Time time.Time `json:"time" example:"2026-11-24T10:15:00Z" validate:"required" format:"date-time"`
	engine.Counts
	// BlockedBy splits block by the rule that blocked: at most 64
	// entries of distinct reason and rule, each at most block (reports
	// without it are accepted).
	BlockedBy []RuleBlocks `json:"blockedBy" validate:"optional"`
}

// ReportedLive is one resource's figures in an instance's last second.
type ReportedLive struct {
	Resource string `json:"resource" example:"GET:/api/orders" validate:"required"`
	engine.LiveStats
}

// InstanceItem is an instance of the registry.
type InstanceItem struct {
	ID            string    `json:"id" example:"orders-7f9c4d-xk2lp"`
	App           string    `json:"app" example:"orders"`
	Hostname      string    `json:"hostname" example:"orders-7f9c4d-xk2lp"`
	PID           int64     `json:"pid" example:"1"`
	Version       string    `json:"version" example:"1.4.2"`
	RulesRevision int64     `json:"rulesRevision" example:"42"`
	FirstSeen     time.Time `json:"firstSeen" format:"date-time"`
	LastSeen      time.Time `json:"lastSeen" format:"date-time"`
	// State is live while it reports, stale after 10 s without a report,
	// gone after 5 min.
	State string `json:"state" enums:"live,stale,gone" example:"live"`
}

// InstanceList is the instances registry.
type InstanceList struct {
	Items []InstanceItem `json:"items"`
}

// instanceHandler answers the instances' routes.
type instanceHandler struct {
	registry *instances.Registry
	metrics  *metrics.Pipeline
	logger   *slog.Logger
	// refused counts the reports of new ids refused for a full registry.
	refused prometheus.Counter
	// refusedWarn gates the refusals' warning.
	refusedWarn metrics.WarnGate
}

func newInstanceHandler(registry *instances.Registry, pipeline *metrics.Pipeline, logger *slog.Logger) *instanceHandler {
	h := &instanceHandler{
		registry: registry, metrics: pipeline, logger: logger,
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_instances_refused_total",
			Help: "Reports of a new instance id refused because --max-instances instances had reported in the last 5 minutes.",
		}),
	}
	pipeline.MustRegister(h.refused)
	return h
}

func bindInstances(api apiRoutes, h *instanceHandler) {
	api.post("/instances/report", instancesOr(editors), h.report)
	api.get("/instances", viewers, h.list)
}

// report records an instance's heartbeat and adds its traffic to the
// history and the live figures.
//
//	@Summary		Report an instance's heartbeat and traffic
//	@ID				reportInstance
//	@Description	An app process that embeds the engine posts, at most every second, who it is, its finished minutes and its live figures. The minutes add to the resources' history at once, summed with the server's own engine and every other instance; a minute of a resource that the instance reported before (a retry) counts once. The live rows replace the instance's last ones and add to the live figures (GET /resources, /metrics/stream) for 3 s. At most 10,000 minute and 10,000 live rows (422 naming the list beyond), 1 MiB. hotValues, optional, are the instance's hotspot rules' hottest values over the last minute (at most 1,000 rules, 20 values a ranking, 256 bytes a value; 422 naming the field beyond, hotValues[0].byPass); they replace the instance's last ones and add to GET /resources/{name}/hot-values for 3 s. Each figure is bounded by what one instance can count (docs/operations.md, "What a leaked instance token can do"): counts at most 6,000,000,000 a minute, rtSumMs at most 600,000,000,000 and complete × maxRtMs, response times at most a day, concurrency at most 100,000,000, live rates at most 100,000,000 a second; a minute must start within the metrics retention and at most an hour ahead; a minute's blockedBy (optional: older instances send none) holds at most 64 entries of distinct reason and rule, each blocked at most the minute's block; else 422 naming the field (minutes[3].pass, minutes[0].time, minutes[1].blockedBy[2].reason, live[2].passQps). While the database holds --max-resources resources, the minutes of a name it lacks are counted under (overflow), once (a retry of them adds nothing), and live rows of new names add to (overflow)'s live figures. A new instance id is answered 429 naming instance.id while --max-instances (10,000) instances have reported in the last 5 minutes; each refusal counts in sluice_instances_refused_total. Tokens of role instance may post it; so may editors and admins. A caller scoped to apps (docs/api.md, "Per-app scopes") reports only for one of them: another instance.app, or none, is 403 naming instance.app.
//	@Tags			instances
//	@Accept			json
//	@Param			report	body	InstanceReport	true	"the instance, its finished minutes and its live figures"
//	@Success		204
//	@Failure		400	{object}	ErrorResponse	"the body is not a JSON object"
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403	{object}	ErrorResponse	"neither an instance token nor an editor or above; or, for a caller scoped to apps, instance.app is not one of them"
//	@Failure		413	{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415	{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422	{object}	ErrorResponse	"bad fields, each named in details (minutes[3].time)"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's), or a new instance id while --max-instances instances have reported in the last 5 minutes (details name instance.id); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/instances/report [post]
func (h *instanceHandler) report(c *fiber.Ctx) error {
	nowMs := h.metrics.NowMs()
	info, minutes, live, hot, err := decodeReport(c.Body(), nowMs-h.metrics.Retention().Milliseconds(), nowMs)
	if err != nil {
		return err
	}
	// A report writes figures under its app, so any caller's scope holds
	// it, an editor's too.
	if p := principalOf(c); !p.mayUseApp(info.App) {
		return outOfScope(p, "instance.app", info.App)
	}
	ctx := c.UserContext()
	key, err := h.registry.Report(ctx, info)
	if errors.Is(err, instances.ErrTooManyInstances) {
		h.refuse(info.ID, err)
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryNewInstanceSec))
		msg := "a new instance id is refused until some are gone (--max-instances)"
		return NewError(http.StatusTooManyRequests, err.Error()+"; "+msg, FieldError{"instance.id", msg})
	}
	if err != nil {
		return err
	}
	if _, err := h.metrics.AddInstanceMinutes(ctx, key, info.App, minutes); err != nil {
		return err
	}
	h.metrics.SetInstanceLive(info.ID, live)
	h.metrics.SetInstanceHot(info.ID, hot)
	return c.SendStatus(http.StatusNoContent)
}

// refuse counts a report of the new id refused for err, and logs it at
// most once a minute.
func (h *instanceHandler) refuse(id string, err error) {
	h.refused.Inc()
	if !h.refusedWarn.Pass(h.metrics.NowMs()) {
		return
	}
	h.logger.Warn("instances: a report of a new instance id was refused (raise --max-instances if the fleet is that large; sluice_instances_refused_total counts them all)",
		"id", id, "err", err)
}

// list answers the instances registry.
//
//	@Summary		List instances
//	@ID				listInstances
//	@Description	Every instance that reported within the metrics retention, by id, with its state: live while it reports, stale after 10 s without a report, gone after 5 min.
//	@Tags			instances
//	@Produce		json
//	@Param			app	query		string	false	"only this app's instances"
//	@Success		200	{object}	InstanceList
//	@Failure		400	{object}	ErrorResponse	"a bad query parameter (app), named in details"
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403	{object}	ErrorResponse	"an instance token"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/instances [get]
func (h *instanceHandler) list(c *fiber.Ctx) error {
	app, err := appParam(c)
	if err != nil {
		return err
	}
	all, err := h.registry.List(c.UserContext(), app)
	if err != nil {
		return err
	}
	items := make([]InstanceItem, len(all))
	for i, in := range all {
		items[i] = InstanceItem{
			ID: in.ID, App: in.App, Hostname: in.Hostname, PID: in.PID, Version: in.Version,
			RulesRevision: in.RulesRevision, FirstSeen: in.FirstSeen, LastSeen: in.LastSeen, State: in.State,
		}
	}
	return writeJSON(c, http.StatusOK, InstanceList{Items: items})
}

// appParam reads ?app=, empty or an app's name.
func appParam(c *fiber.Ctx) (string, error) {
	app := c.Query("app")
	if app != "" && !wire.AppPattern.MatchString(app) {
		msg := "must match " + wire.AppPattern.String()
		return "", BadRequest("app "+msg, FieldError{"app", msg})
	}
	return app, nil
}

// decodeReport decodes and validates a report; every bad field is named
// in the 422. A minute must start at oldestMs or later (older ones would
// be pruned at once), and at most maxReportAheadMs past nowMs.
func decodeReport(body []byte, oldestMs, nowMs int64) (instances.Info, []store.MinuteDelta, map[string]engine.LiveStats, map[string][]engine.HotValues, error) {
	var errs []engine.FieldError
	o, err := codec.ParseBody(body, &errs)
	if err != nil {
		return instances.Info{}, nil, nil, nil, errNotJSONObject(err)
	}
	var info instances.Info
	if item, _ := o.Value("instance"); item == nil {
		o.Fail("instance", "is required: the reporting instance")
	} else if io, err := wire.Parse(item, "instance.", &errs); err != nil {
		o.Fail("instance", "must be an object")
	} else {
		info = decodeReportingInstance(io)
	}
	const rest = ": send the rest in another report"
	minuteItems := objectList(o, "minutes", maxReportRows, rest)
	liveItems := objectList(o, "live", maxReportRows, rest)
	hotItems := objectList(o, "hotValues", wire.MaxReportHotRules, ": report the busiest rules' only")
	o.Rest(func(string) string { return "" })
	minutes := decodeObjects(minuteItems, "minutes", &errs, func(mo *wire.Object) store.MinuteDelta {
		return decodeReportedMinute(mo, oldestMs, nowMs)
	})
	live := make(map[string]engine.LiveStats, len(liveItems))
	decodeObjects(liveItems, "live", &errs, func(lo *wire.Object) struct{} {
		resource, l := decodeReportedLive(lo)
		if _, twice := live[resource]; twice {
			lo.Fail("resource", "appears in two live rows")
		}
		live[resource] = l
		return struct{}{}
	})
	hot := map[string][]engine.HotValues{}
	decodeObjects(hotItems, "hotValues", &errs, func(ho *wire.Object) struct{} {
		resource, rule := decodeReportedHot(ho)
		for _, other := range hot[resource] {
			if other.Rule == rule.Rule {
				ho.Fail("rule", "appears twice for the resource")
			}
		}
		hot[resource] = append(hot[resource], rule)
		return struct{}{}
	})
	if len(errs) > 0 {
		return instances.Info{}, nil, nil, nil, ValidationFailed("the report is not valid; nothing was recorded; see details", fieldErrors(errs)...)
	}
	return info, minutes, live, hot, nil
}

// decodeReportedHot reads one rule's hot values of a report.
func decodeReportedHot(o *wire.Object) (string, engine.HotValues) {
	var resource string
	var hv engine.HotValues
	before := len(*o.Errs)
	o.Str("resource", &resource)
	if len(*o.Errs) == before {
		if msg := engine.ValidateResourceName(resource); msg != "" {
			o.Fail("resource", msg)
		}
	}
	o.Str("rule", &hv.Rule)
	if msg := textProblem(hv.Rule, 1, 256); msg != "" {
		o.Fail("rule", msg)
	}
	o.Str("paramKey", &hv.ParamKey)
	if msg := textProblem(hv.ParamKey, 0, 256); msg != "" {
		o.Fail("paramKey", msg)
	}
	o.Bool("approximate", &hv.Approximate, false)
	hint := fmt.Sprintf(": report the top %d", wire.MaxReportHotValues)
	for _, ranking := range []struct {
		name string
		dst  *[]engine.HotValue
	}{{"byPass", &hv.ByPass}, {"byBlock", &hv.ByBlock}} {
		items := objectList(o, ranking.name, wire.MaxReportHotValues, hint)
		*ranking.dst = decodeObjects(items, o.Path+ranking.name, o.Errs, func(vo *wire.Object) engine.HotValue {
			var v engine.HotValue
			vo.Str("value", &v.Value)
			if len(v.Value) > wire.MaxReportHotValueBytes {
				vo.Fail("value", fmt.Sprintf("must be at most %d bytes", wire.MaxReportHotValueBytes))
			}
			bounded(vo, "pass", &v.Pass, maxReportedCalls)
			bounded(vo, "block", &v.Block, maxReportedCalls)
			vo.Rest(func(string) string { return "" })
			return v
		})
	}
	o.Rest(func(string) string { return "" })
	return resource, hv
}

// objectList reads the optional list field name of o: at most most
// objects, else a failure of the field that says what to do (hint).
func objectList(o *wire.Object, name string, most int, hint string) []json.RawMessage {
	v, _ := o.Value(name)
	if v == nil {
		return nil
	}
	items, ok := wire.Elements(v)
	if !ok {
		o.Fail(name, "must be a list of objects")
		return nil
	}
	if len(items) > most {
		o.Fail(name, fmt.Sprintf("must hold at most %d items, not %d%s", most, len(items), hint))
		return nil
	}
	return items
}

// decodeObjects decodes each of items (objectList's), an object named
// name[i] in the request, with decode, and returns what decode made of
// each; one that is not an object is a failure of errs. The items are
// read one after the other into one wire.Object, which decode keeps no
// reference to.
func decodeObjects[T any](items []json.RawMessage, name string, errs *[]engine.FieldError, decode func(*wire.Object) T) []T {
	out := make([]T, 0, len(items))
	var o wire.Object
	for i, item := range items {
		path := name + "[" + strconv.Itoa(i) + "]."
		if err := o.ReadValid(item, path, errs); err != nil {
			*errs = append(*errs, engine.FieldError{Field: path[:len(path)-1], Message: "must be an object"})
			continue
		}
		out = append(out, decode(&o))
	}
	return out
}

func decodeReportingInstance(o *wire.Object) instances.Info {
	var info instances.Info
	o.Str("id", &info.ID)
	if msg := textProblem(info.ID, 1, 128); msg != "" {
		o.Fail("id", msg)
	}
	if o.Str("app", &info.App) && info.App != "" && !wire.AppPattern.MatchString(info.App) {
		o.Fail("app", "must match "+wire.AppPattern.String())
	}
	o.Str("hostname", &info.Hostname)
	if msg := textProblem(info.Hostname, 0, 255); msg != "" {
		o.Fail("hostname", msg)
	}
	o.Str("version", &info.Version)
	if msg := textProblem(info.Version, 0, 64); msg != "" {
		o.Fail("version", msg)
	}
	nonNegative(o, "pid", &info.PID)
	nonNegative(o, "rulesRevision", &info.RulesRevision)
	o.Rest(func(string) string { return "" })
	return info
}

func decodeReportedMinute(o *wire.Object, oldestMs, nowMs int64) store.MinuteDelta {
	var d store.MinuteDelta
	before := len(*o.Errs)
	o.Str("resource", &d.Resource)
	if len(*o.Errs) == before {
		if msg := engine.ValidateResourceName(d.Resource); msg != "" {
			o.Fail("resource", msg)
		}
	}
	var at string
	o.Str("time", &at)
	t, err := time.Parse(time.RFC3339, at)
	switch {
	case at == "":
		o.Fail("time", "is required: the minute's start, RFC 3339")
	case err != nil:
		o.Fail("time", "must be an RFC 3339 time, such as 2026-11-24T10:15:00Z")
	case t.UnixMilli()%store.MinuteMs != 0 || t.UnixMilli() < 0:
		o.Fail("time", "must be the start of a UTC minute, such as 2026-11-24T10:15:00Z")
	case t.UnixMilli() > nowMs+maxReportAheadMs:
		o.Fail("time", "is more than an hour ahead of the server's clock")
	case t.UnixMilli() < oldestMs:
		o.Fail("time", "is older than the metrics retention (--metrics-retention): its rows would be pruned at once")
	default:
		d.StartMs = t.UnixMilli()
	}
	c := &d.Counts
	for _, f := range []struct {
		name string
		dst  *int64
		most int64
	}{
		{"pass", &c.Pass, maxReportedCalls}, {"block", &c.Block, maxReportedCalls},
		{"shadowBlock", &c.ShadowBlock, maxReportedCalls}, {"complete", &c.Complete, maxReportedCalls},
		{"error", &c.Error, maxReportedCalls}, {"rtSumMs", &c.RtSumMs, maxReportedRtSumMs},
		{"minRtMs", &c.MinRtMs, maxReportedRtMs}, {"maxRtMs", &c.MaxRtMs, maxReportedRtMs},
		{"maxConcurrency", &c.MaxConcurrency, maxReportedConcurrency},
		{"busiestSecond", &c.BusiestSecond, maxReportedCalls},
		{"adaptiveLimitMin", &c.AdaptiveLimitMin, engine.MaxAdaptiveLimit},
		{"adaptiveLimitMax", &c.AdaptiveLimitMax, engine.MaxAdaptiveLimit},
		{"adaptiveLimitLast", &c.AdaptiveLimitLast, engine.MaxAdaptiveLimit},
	} {
		bounded(o, f.name, f.dst, f.most)
	}
	if c.Error > c.Complete {
		o.Fail("error", "must be at most complete: an errored call is a completed one")
	}
	if c.Complete > 0 && c.MinRtMs > c.MaxRtMs {
		o.Fail("minRtMs", "must be at most maxRtMs")
	}
	if c.Complete <= maxReportedCalls && c.MaxRtMs <= maxReportedRtMs && c.RtSumMs > c.Complete*c.MaxRtMs {
		o.Fail("rtSumMs", "must be at most complete × maxRtMs: the sum of the completed calls' response times")
	}
	d.BlockedBy = decodeReportedBlocks(o, c.Block)
	o.Rest(func(string) string { return "" })
	return d
}

// decodeReportedBlocks reads a minute's optional blockedBy: at most
// wire.MaxReportBlocks entries of distinct reason and rule, each of a known
// reason and at most block blocked calls.
func decodeReportedBlocks(o *wire.Object, block int64) []engine.RuleBlocks {
	items := objectList(o, "blockedBy", wire.MaxReportBlocks, ": fold the rules that blocked least per reason under the rule \"\"")
	if len(items) == 0 {
		return nil
	}
	type key struct{ reason, rule string }
	seen := make(map[key]bool, len(items))
	return decodeObjects(items, o.Path+"blockedBy", o.Errs, func(bo *wire.Object) engine.RuleBlocks {
		var b engine.RuleBlocks
		var reason string
		if bo.Str("reason", &reason) && !wire.IsBlockReason(reason) {
			bo.Fail("reason", "must be one of flow, concurrency, circuitBreaker, hotspot, authority, system, adaptive, clusterFallback")
		} else if reason == "" {
			bo.Fail("reason", "is required: the kind of rule that blocked")
		}
		b.Reason = engine.BlockReason(reason)
		if bo.Str("rule", &b.Rule) && b.Rule != "" && !engine.RuleNamePattern.MatchString(b.Rule) {
			bo.Fail("rule", "must be a rule's name, or \"\" for what no one rule of the resource decided")
		}
		if seen[key{reason, b.Rule}] {
			bo.Fail("rule", "appears twice with the same reason")
		}
		seen[key{reason, b.Rule}] = true
		bounded(bo, "blocked", &b.Blocked, block)
		bo.Rest(func(string) string { return "" })
		return b
	})
}

func decodeReportedLive(o *wire.Object) (string, engine.LiveStats) {
	var resource string
	var l engine.LiveStats
	before := len(*o.Errs)
	o.Str("resource", &resource)
	if len(*o.Errs) == before {
		if msg := engine.ValidateResourceName(resource); msg != "" {
			o.Fail("resource", msg)
		}
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{
		{"passQps", &l.PassQps}, {"blockQps", &l.BlockQps}, {"shadowBlockQps", &l.ShadowBlockQps},
		{"completeQps", &l.CompleteQps}, {"errorQps", &l.ErrorQps}, {"avgRtMs", &l.AvgRtMs},
	} {
		most := float64(maxReportedQps)
		if f.name == "avgRtMs" {
			most = maxReportedRtMs
		}
		if o.Number(f.name, f.dst) && (*f.dst < 0 || *f.dst > most) {
			o.Fail(f.name, fmt.Sprintf("must be between 0 and %.0f", most))
		}
	}
	bounded(o, "concurrency", &l.Concurrency, maxReportedConcurrency)
	o.Rest(func(string) string { return "" })
	return resource, l
}

// nonNegative reads the optional whole number name into dst, >= 0.
func nonNegative(o *wire.Object, name string, dst *int64) {
	before := len(*o.Errs)
	if o.Integer(name, dst) && len(*o.Errs) == before && *dst < 0 {
		o.Fail(name, "must be >= 0")
	}
}

// bounded reads the optional whole number name into dst, 0 to most.
func bounded(o *wire.Object, name string, dst *int64, most int64) {
	before := len(*o.Errs)
	if o.Integer(name, dst) && len(*o.Errs) == before && (*dst < 0 || *dst > most) {
		o.Fail(name, fmt.Sprintf("must be between 0 and %d", most))
	}
}

// textProblem says what is wrong with s as a text of minLen to maxLen
// characters without control characters, or "".
func textProblem(s string, minLen, maxLen int) string {
	if n := utf8.RuneCountInString(s); n < minLen || n > maxLen {
		if minLen > 0 {
			return fmt.Sprintf("is required, %d to %d characters", minLen, maxLen)
		}
		return fmt.Sprintf("must be at most %d characters", maxLen)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "must not hold control characters"
		}
	}
	return ""
}
