package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// metricsT0 is 2026-03-02 10:00 UTC in Unix milliseconds.
var metricsT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixMilli()

// metricsNode is a server on a real listener and SQLite file whose engine
// runs on a manual clock. Its flush job never fires by itself: tests flush
// when they mean to.
type metricsNode struct {
	*testServer
	clock *engine.ManualClock
}

// startMetricsNode starts a node on the database at path; before lets a
// test adjust the server before it serves, and engineOpts its engine's
// options.
func startMetricsNode(t *testing.T, path string, clock *engine.ManualClock, before func(*Server), engineOpts ...func(*engine.Options)) *metricsNode {
	t.Helper()
	feed := NewBreakerFeed()
	opts := engine.Options{Clock: clock, OnBreakerStateChange: feed.Notify}
	for _, o := range engineOpts {
		o(&opts)
	}
	// Unguarded: these tests count the resources they made, not the API's.
	ts := startServer(t, func(cfg *Config) {
		cfg.MetricsFlushInterval = time.Hour
		cfg.UnguardedAPI = true
		cfg.BreakerFeed = feed
	}, before, servertest.DBPath(path), servertest.EngineOptions(opts))
	return &metricsNode{testServer: ts, clock: clock}
}

// kill stops the node the way a crash would: no last flush, so whatever
// was counted since the last flush is gone with it.
func (n *metricsNode) kill(t *testing.T) {
	t.Helper()
	n.StopWith(t, func(ctx context.Context) error {
		n.metrics.Stop()
		n.stream.close()
		// As Shutdown does: a Serve that has not reached Fiber yet returns
		// at once, and one that has is stopped by closing its listener.
		n.mu.Lock()
		n.stopped = true
		listeners := n.listeners
		n.mu.Unlock()
		err := n.app.ShutdownWithContext(ctx)
		for _, ln := range listeners {
			_ = ln.Close()
		}
		return err
	})
}

func (n *metricsNode) flush(t *testing.T) {
	t.Helper()
	if err := n.metrics.Flush(t.Context()); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// traffic makes calls to resource: pass of them let through and completed
// in rtMs each (errors of them failed), and the engine's answer to the
// rest.
func traffic(t *testing.T, eng *engine.Engine, resource string, calls, errs int, rtMs int64) (pass, block int) {
	t.Helper()
	for i := range calls {
		e, blk := eng.Entry(resource)
		if blk != nil {
			block++
			continue
		}
		pass++
		var err error
		if i < errs {
			err = errors.New("failed")
		}
		e.Exit(engine.WithRtMs(rtMs), engine.WithError(err))
	}
	return pass, block
}

// history reads a resource's history and fails the test unless it is 200.
func (n *metricsNode) history(t *testing.T, resource, query string) MetricHistory {
	t.Helper()
	resp, body := n.call(t, http.MethodGet, "/api/v1/resources/"+url.PathEscape(resource)+"/metrics?"+query, nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	return decodeStrict[MetricHistory](t, body)
}

func rangeQuery(fromMs, toMs int64, step string) string {
	return fmt.Sprintf("from=%d&to=%d&step=%s", fromMs, toMs, step)
}

func passes(points []MetricPoint) int64 {
	var n int64
	for _, p := range points {
		n += p.Pass
	}
	return n
}

// TestFlushKillRestartMidMinute kills the server mid-minute, restarts it in
// the same minute, then stops and restarts it gracefully: every flushed
// count is there exactly once, the restart adds to the minute instead of
// overwriting it, and the graceful stop flushes the partial minute.
func TestFlushKillRestartMidMinute(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.db")
	clock := engine.NewManualClock(metricsT0 + 10_000)
	minute := rangeQuery(metricsT0, metricsT0+store.MinuteMs, "1m")

	first := startMetricsNode(t, path, clock, nil)
	traffic(t, first.Engine, "orders", 5, 1, 8)
	first.flush(t)
	clock.Advance(5_000)
	traffic(t, first.Engine, "orders", 3, 0, 8) // not flushed: the crash loses it
	first.kill(t)

	clock.Advance(15_000) // 10:00:30, the same minute
	second := startMetricsNode(t, path, clock, nil)
	if got := passes(second.history(t, "orders", minute).Points); got != 5 {
		t.Fatalf("after the kill: %d passes stored, want the 5 flushed before it", got)
	}
	traffic(t, second.Engine, "orders", 4, 2, 2)
	second.flush(t)
	clock.Advance(10_000)
	traffic(t, second.Engine, "orders", 2, 0, 20) // flushed by the graceful stop
	second.Stop(t)

	clock.Advance(5_000)
	third := startMetricsNode(t, path, clock, nil)
	want := []MetricPoint{{
		Time: time.UnixMilli(metricsT0).UTC(), Calls: Calls{Pass: 11, Complete: 11, Error: 3},
		AvgRtMs: float64(5*8+4*2+2*20) / 11, MinRtMs: 2, MaxRtMs: 20, MaxConcurrency: 1,
		// The first node's 5 calls of one second; its next 3 died with it.
		BusiestSecond: 5,
	}}
	for _, step := range []string{"1m", "5m", "15m", "1h", "1d"} {
		got := third.history(t, "orders", rangeQuery(metricsT0, metricsT0+store.MinuteMs, step))
		if step == "1d" {
			want[0].Time = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
		}
		if !reflect.DeepEqual(got.Points, want) {
			t.Errorf("step %s: points = %+v, want %+v", step, got.Points, want)
		}
	}
}

// TestFlusherRunsEveryInterval: with a short interval the background job
// writes the figures without anyone asking.
func TestFlusherRunsEveryInterval(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(cfg *Config) { cfg.MetricsFlushInterval = 10 * time.Millisecond }, nil,
		servertest.EngineOptions(engine.Options{Clock: engine.NewManualClock(metricsT0)}))
	traffic(t, ts.Engine, "orders", 3, 0, 1)
	pollUntil(t, "the flush job to write 3 passes", 10*time.Second, func() bool {
		points, err := ts.Store.ResourceMetrics(t.Context(), "orders", metricsT0, metricsT0+store.MinuteMs, store.MinuteMs)
		if err != nil {
			t.Fatal(err)
		}
		return len(points) == 1 && points[0].Pass == 3
	})
}

// pollUntil checks every 10ms until check reports true, and fails the test
// if it has not by timeout.
func pollUntil(t *testing.T, what string, timeout time.Duration, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// burst is calls made to one resource within one second of a minute.
type burst struct {
	minute int64 // minutes after metricsT0
	calls  int
}

// TestHistoryOfAKnownPattern drives the engine through a known pattern, a
// flow rule letting 2 calls a second through, and reads it back at every
// step, before and after a retention cut in the middle of it.
func TestHistoryOfAKnownPattern(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	n.createRule(t, map[string]any{"kind": "flow", "resource": "GET:/api/orders", "threshold": 2})
	pattern := []burst{{0, 5}, {2, 3}, {14, 1}, {59, 4}, {60, 2}, {76, 7}}
	for _, b := range pattern {
		clock.Set(metricsT0 + b.minute*store.MinuteMs + 30_000)
		traffic(t, n.engine, "GET:/api/orders", b.calls, 0, b.minute)
		n.flush(t)
	}
	clock.Set(metricsT0 + 80*store.MinuteMs)

	// want totals the pattern per step, its own way.
	want := func(stepMs, fromMs int64) []MetricPoint {
		points := []MetricPoint{}
		for _, b := range pattern {
			startMs := metricsT0 + b.minute*store.MinuteMs
			if startMs < fromMs {
				continue
			}
			stepStart := time.UnixMilli(startMs - startMs%stepMs).UTC()
			pass := min(b.calls, 2)
			if len(points) == 0 || !points[len(points)-1].Time.Equal(stepStart) {
				points = append(points, MetricPoint{Time: stepStart, MinRtMs: b.minute})
			}
			p := &points[len(points)-1]
			p.Pass += int64(pass)
			p.Block += int64(b.calls - pass)
			p.Complete += int64(pass)
			p.AvgRtMs += float64(int64(pass) * b.minute) // a sum until the end
			p.MinRtMs = min(p.MinRtMs, b.minute)
			p.MaxRtMs = max(p.MaxRtMs, b.minute)
			p.MaxConcurrency = 1
			p.BusiestSecond = max(p.BusiestSecond, int64(b.calls))
		}
		for i := range points {
			points[i].AvgRtMs /= float64(points[i].Complete)
			if points[i].Block > 0 {
				points[i].BlockedBy = []RuleBlocks{{Reason: "flow", Rule: "flow-get-api-orders", Blocked: points[i].Block}}
			}
		}
		return points
	}
	steps := map[string]int64{"1m": store.MinuteMs, "5m": 5 * store.MinuteMs, "15m": 15 * store.MinuteMs, "1h": store.HourMs, "1d": 24 * store.HourMs}
	check := func(t *testing.T, keptFromMs int64) {
		for step, stepMs := range steps {
			t.Run(step, func(t *testing.T) {
				got := n.history(t, "GET:/api/orders", rangeQuery(metricsT0-store.HourMs, metricsT0+2*store.HourMs, step))
				if w := want(stepMs, keptFromMs); !reflect.DeepEqual(got.Points, w) {
					t.Errorf("points =\n%+v\nwant\n%+v", got.Points, w)
				}
				if got.Resource != "GET:/api/orders" || got.Step != step {
					t.Errorf("resource %q, step %q", got.Resource, got.Step)
				}
			})
		}
	}
	t.Run("all of it", func(t *testing.T) {
		check(t, 0)
		if got := want(store.HourMs, 0); got[0].Pass != 7 || got[0].Block != 6 || got[1].Pass != 4 || got[1].Block != 5 {
			t.Fatalf("the pattern's hours are %+v, want 7 and 4 passes, 6 and 5 blocks", got)
		}
	})
	t.Run("across a retention cut", func(t *testing.T) {
		// 11:20 less 20 minutes, cut at the whole hour: 11:00.
		if err := n.metrics.Prune(t.Context(), 20*time.Minute); err != nil {
			t.Fatal(err)
		}
		check(t, metricsT0+store.HourMs)
	})
}

func TestHistoryRangeRules(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 90*store.MinuteMs) // 11:30
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	n.createRule(t, map[string]any{"kind": "flow", "resource": "idle", "threshold": 1})
	if err := n.Store.AddMetrics(t.Context(), []store.MinuteDelta{
		{Resource: "orders", StartMs: metricsT0 + 5*store.MinuteMs, Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
		{Resource: "orders", StartMs: metricsT0 + 30*store.MinuteMs, Counts: engine.Counts{Calls: engine.Calls{Pass: 2}}},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		resource, query  string
		wantPass         int64
		wantFrom, wantTo string
	}{
		{name: "rounded out to the step", resource: "orders", query: "from=2026-03-02T10:05:30Z&to=2026-03-02T10:30:00.001Z&step=5m", wantPass: 3, wantFrom: "2026-03-02T10:05:00Z", wantTo: "2026-03-02T10:35:00Z"},
		{name: "to is exclusive", resource: "orders", query: "from=2026-03-02T10:05:00Z&to=2026-03-02T10:30:00Z", wantPass: 1, wantFrom: "2026-03-02T10:05:00Z", wantTo: "2026-03-02T10:30:00Z"},
		{name: "Unix milliseconds", resource: "orders", query: rangeQuery(metricsT0, metricsT0+store.HourMs, "1h"), wantPass: 3, wantFrom: "2026-03-02T10:00:00Z", wantTo: "2026-03-02T11:00:00Z"},
		{name: "a zone offset, its + unescaped", resource: "orders", query: "from=2026-03-02T11:00:00+01:00&to=2026-03-02T11:06:00%2B01:00", wantPass: 1, wantFrom: "2026-03-02T10:00:00Z", wantTo: "2026-03-02T10:06:00Z"},
		{name: "defaults: 60 steps up to now", resource: "orders", query: "", wantPass: 2, wantFrom: "2026-03-02T10:30:00Z", wantTo: "2026-03-02T11:30:00Z"},
		{name: "1d is UTC midnight", resource: "orders", query: "step=1d&from=2026-03-02T23:00:00Z&to=2026-03-03T01:00:00Z", wantPass: 3, wantFrom: "2026-03-02T00:00:00Z", wantTo: "2026-03-04T00:00:00Z"},
		{name: "exactly 10,000 points", resource: "orders", query: rangeQuery(metricsT0, metricsT0+10_000*store.MinuteMs, "1m"), wantPass: 3, wantFrom: "2026-03-02T10:00:00Z", wantTo: "2026-03-09T08:40:00Z"},
		{name: "known, no rows in range", resource: "orders", query: "from=2026-03-01T00:00:00Z&to=2026-03-01T01:00:00Z", wantFrom: "2026-03-01T00:00:00Z", wantTo: "2026-03-01T01:00:00Z"},
		{name: "named by a rule, never seen", resource: "idle", query: "step=1h", wantFrom: "2026-02-27T23:00:00Z", wantTo: "2026-03-02T12:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := n.call(t, http.MethodGet, "/api/v1/resources/"+url.PathEscape(tt.resource)+"/metrics?"+tt.query, nil, nil)
			mustStatus(t, resp, body, http.StatusOK)
			if !strings.Contains(string(body), `"points":[`) {
				t.Errorf("points is not an array: %s", body)
			}
			h := decodeStrict[MetricHistory](t, body)
			if got := passes(h.Points); got != tt.wantPass {
				t.Errorf("passes = %d, want %d", got, tt.wantPass)
			}
			if from, to := h.From.Format(time.RFC3339), h.To.Format(time.RFC3339); from != tt.wantFrom || to != tt.wantTo {
				t.Errorf("range = %s to %s, want %s to %s", from, to, tt.wantFrom, tt.wantTo)
			}
		})
	}
}

// TestMetricQueriesRejectBadParameters: every bad parameter is a 400 that
// names it, an unknown resource a 404, all in the error envelope.
func TestMetricQueriesRejectBadParameters(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	traffic(t, n.engine, "orders", 1, 0, 1)
	n.flush(t)
	history := "/api/v1/resources/orders/metrics?"
	tests := []struct {
		name   string
		path   string
		status int
		code   string
		fields []string
	}{
		{name: "unknown step", path: history + "step=2m", status: 400, code: "bad_request", fields: []string{"step"}},
		{name: "unparsable from", path: history + "from=yesterday", status: 400, code: "bad_request", fields: []string{"from"}},
		{name: "unparsable to", path: history + "to=2026-03-02T25:00:00Z", status: 400, code: "bad_request", fields: []string{"to"}},
		{name: "negative time", path: history + "from=-1", status: 400, code: "bad_request", fields: []string{"from"}},
		{name: "from equals to", path: history + rangeQuery(metricsT0, metricsT0, "1m"), status: 400, code: "bad_request", fields: []string{"from"}},
		{name: "from after to", path: history + rangeQuery(metricsT0+1, metricsT0, "1m"), status: 400, code: "bad_request", fields: []string{"from"}},
		{name: "10,001 points", path: history + rangeQuery(metricsT0, metricsT0+10_001*store.MinuteMs, "1m"), status: 400, code: "bad_request", fields: []string{"step"}},
		{name: "years at 1m", path: history + "from=0&step=1m", status: 400, code: "bad_request", fields: []string{"step"}},
		{name: "unknown resource", path: "/api/v1/resources/nobody/metrics", status: 404, code: "not_found"},
		{name: "top: bad by", path: "/api/v1/metrics/top?by=latency", status: 400, code: "bad_request", fields: []string{"by"}},
		{name: "top: limit 0", path: "/api/v1/metrics/top?limit=0", status: 400, code: "bad_request", fields: []string{"limit"}},
		{name: "top: from after to", path: "/api/v1/metrics/top?" + rangeQuery(metricsT0+1, metricsT0, ""), status: 400, code: "bad_request", fields: []string{"from"}},
		{name: "top: unparsable to", path: "/api/v1/metrics/top?to=soon", status: 400, code: "bad_request", fields: []string{"to"}},
		{name: "resources: bad sort", path: "/api/v1/resources?sort=blockQps", status: 400, code: "bad_request", fields: []string{"sort"}},
		{name: "resources: pageSize 501", path: "/api/v1/resources?pageSize=501", status: 400, code: "bad_request", fields: []string{"pageSize"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := n.call(t, http.MethodGet, tt.path, nil, nil)
			wantError(t, resp, body, tt.status, tt.code, tt.fields...)
		})
	}
}

func TestTopResourcesHTTP(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 30_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	n.createRule(t, map[string]any{"kind": "flow", "resource": "a", "threshold": 1})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "b", "threshold": 3})
	traffic(t, n.engine, "a", 4, 0, 30) // 1 pass, 3 blocks
	traffic(t, n.engine, "b", 5, 1, 10) // 3 passes, 2 blocks
	n.flush(t)
	clock.Advance(store.MinuteMs)
	tests := []struct {
		query string
		want  []TopItem
	}{
		{query: "", want: []TopItem{
			{Resource: "a", Calls: Calls{Pass: 1, Block: 3, Complete: 1}, AvgRtMs: 30},
			{Resource: "b", Calls: Calls{Pass: 3, Block: 2, Complete: 3, Error: 1}, AvgRtMs: 10},
		}},
		{query: "by=pass&limit=1", want: []TopItem{{Resource: "b", Calls: Calls{Pass: 3, Block: 2, Complete: 3, Error: 1}, AvgRtMs: 10}}},
		{query: "by=error", want: []TopItem{
			{Resource: "b", Calls: Calls{Pass: 3, Block: 2, Complete: 3, Error: 1}, AvgRtMs: 10},
			{Resource: "a", Calls: Calls{Pass: 1, Block: 3, Complete: 1}, AvgRtMs: 30},
		}},
		{query: "by=avgRt&from=2026-03-02T10:00:00Z&to=2026-03-02T10:01:00Z", want: []TopItem{
			{Resource: "a", Calls: Calls{Pass: 1, Block: 3, Complete: 1}, AvgRtMs: 30},
			{Resource: "b", Calls: Calls{Pass: 3, Block: 2, Complete: 3, Error: 1}, AvgRtMs: 10},
		}},
		{query: "from=2026-03-02T10:01:00Z&to=2026-03-02T11:00:00Z", want: []TopItem{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, body := n.call(t, http.MethodGet, "/api/v1/metrics/top?"+tt.query, nil, nil)
			mustStatus(t, resp, body, http.StatusOK)
			if got := decodeStrict[TopList](t, body); !reflect.DeepEqual(got.Items, tt.want) {
				t.Errorf("items = %+v, want %+v", got.Items, tt.want)
			}
		})
	}
}

// TestResourcesList: resources seen before a restart, seen now and named
// by rules are all listed, with live, last-minute (flushed or not) and
// rule figures, searchable, sorted and paginated.
func TestResourcesList(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 30_000) // 10:00:30
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	if err := n.Store.AddMetrics(t.Context(), []store.MinuteDelta{
		{Resource: "old", StartMs: metricsT0 - store.HourMs, FirstSeenMs: metricsT0 - store.HourMs + 1_000, LastSeenMs: metricsT0 - store.HourMs + 2_000, Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	n.createRule(t, map[string]any{"kind": "flow", "resource": "payments", "threshold": 5})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "orders", "threshold": 2})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "orders", "metric": "concurrency", "threshold": 10, "enabled": false})
	traffic(t, n.engine, "orders", 4, 1, 6) // 10:00: 2 pass, 2 block
	n.flush(t)
	clock.Advance(500)
	traffic(t, n.engine, "orders", 1, 0, 6) // 10:00, not flushed: 1 block
	clock.Set(metricsT0 + store.MinuteMs + 100)
	traffic(t, n.engine, "orders", 1, 0, 4) // 10:01, live
	traffic(t, n.engine, "GET:/api/orders", 3, 0, 1)

	list := func(t *testing.T, query string) ResourceList {
		t.Helper()
		resp, body := n.call(t, http.MethodGet, "/api/v1/resources?"+query, nil, nil)
		mustStatus(t, resp, body, http.StatusOK)
		return decodeStrict[ResourceList](t, body)
	}
	all := list(t, "")
	if all.Total != 4 || all.Page != 1 || all.PageSize != 50 {
		t.Fatalf("total %d, page %d, pageSize %d; want 4, 1, 50", all.Total, all.Page, all.PageSize)
	}
	byName := map[string]ResourceItem{}
	for _, it := range all.Items {
		byName[it.Name] = it
	}
	ms := func(ms int64) *time.Time { t := time.UnixMilli(ms).UTC(); return &t }
	want := map[string]ResourceItem{
		"GET:/api/orders": {Name: "GET:/api/orders", FirstSeen: ms(metricsT0 + store.MinuteMs + 100), LastSeen: ms(metricsT0 + store.MinuteMs + 100),
			Live: LiveStats{PassQps: 3, CompleteQps: 3, AvgRtMs: 1}},
		"old": {Name: "old", FirstSeen: ms(metricsT0 - store.HourMs + 1_000), LastSeen: ms(metricsT0 - store.HourMs + 2_000)},
		"orders": {Name: "orders", Rules: 2, FirstSeen: ms(metricsT0 + 30_000), LastSeen: ms(metricsT0 + store.MinuteMs + 100),
			Live: LiveStats{PassQps: 1, CompleteQps: 1, AvgRtMs: 4},
			// Blocked by its flow rule: 2 flushed, 1 not.
			LastMinute: MinuteFigures{Calls: Calls{Pass: 2, Block: 3, Complete: 2, Error: 1}, AvgRtMs: 6,
				BlockedBy: []RuleBlocks{{Reason: "flow", Rule: "flow-orders", Blocked: 3}}}},
		"payments": {Name: "payments", Rules: 1},
	}
	for name, w := range want {
		if got := byName[name]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s =\n%+v\nwant\n%+v", name, got, w)
		}
	}
	// Flushed again, and read back from the store after a restart, the
	// times stay those of the calls, not of the minutes' starts.
	n.flush(t)
	stored, err := n.Store.GetMetricResource(t.Context(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if stored.FirstSeenMs != metricsT0+30_000 || stored.LastSeenMs != metricsT0+store.MinuteMs+100 {
		t.Errorf("stored orders seen from %d to %d, want %d to %d", stored.FirstSeenMs, stored.LastSeenMs, metricsT0+30_000, metricsT0+store.MinuteMs+100)
	}
	tests := []struct {
		query string
		want  []string
		total int64
	}{
		{query: "", want: []string{"GET:/api/orders", "old", "orders", "payments"}, total: 4},
		{query: "sort=-passQps", want: []string{"GET:/api/orders", "orders", "old", "payments"}, total: 4},
		{query: "sort=-blockQps&q=ORDERS", want: []string{"GET:/api/orders", "orders"}, total: 2},
		{query: "page=2&pageSize=3", want: []string{"payments"}, total: 4},
		{query: "page=3&pageSize=3", want: []string{}, total: 4},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := list(t, tt.query)
			names := []string{}
			for _, it := range got.Items {
				names = append(names, it.Name)
			}
			if !reflect.DeepEqual(names, tt.want) || got.Total != tt.total {
				t.Errorf("names %v (total %d), want %v (total %d)", names, got.Total, tt.want, tt.total)
			}
		})
	}
}

// TestPrometheusExposition: /metrics counts what the engine recorded, flushed
// or not, under Prometheus names, and agrees with the stored history.
func TestPrometheusExposition(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	n.createRule(t, map[string]any{"kind": "flow", "resource": "orders", "threshold": 3})
	traffic(t, n.engine, "orders", 5, 1, 20)
	n.flush(t)
	clock.Advance(2 * store.MinuteMs)
	traffic(t, n.engine, "orders", 1, 0, 40) // not flushed yet
	e, blk := n.engine.Entry("orders")       // in flight
	if blk != nil {
		t.Fatal(blk)
	}
	defer e.Exit()

	resp, body := n.call(t, http.MethodGet, "/metrics", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	for _, line := range []string{
		"# TYPE sluice_resource_passed_total counter",
		`sluice_resource_passed_total{resource="orders"} 5`,
		`sluice_resource_blocked_total{resource="orders"} 2`,
		"# TYPE sluice_resource_blocked_by_reason_total counter",
		`sluice_resource_blocked_by_reason_total{resource="orders",reason="flow"} 2`,
		`sluice_resource_shadow_blocked_total{resource="orders"} 0`,
		`sluice_resource_completed_total{resource="orders"} 4`,
		`sluice_resource_errors_total{resource="orders"} 1`,
		"# TYPE sluice_resource_response_time_seconds histogram",
		`sluice_resource_response_time_seconds_bucket{resource="orders",le="0.01"} 0`,
		`sluice_resource_response_time_seconds_bucket{resource="orders",le="0.025"} 3`,
		`sluice_resource_response_time_seconds_bucket{resource="orders",le="0.05"} 4`,
		`sluice_resource_response_time_seconds_bucket{resource="orders",le="+Inf"} 4`,
		`sluice_resource_response_time_seconds_sum{resource="orders"} 0.1`,
		`sluice_resource_response_time_seconds_count{resource="orders"} 4`,
		"# TYPE sluice_resource_concurrency gauge",
		`sluice_resource_concurrency{resource="orders"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(string(body), line+"\n") && !strings.Contains(string(body), line) {
			t.Errorf("the exposition lacks %q:\n%s", line, body)
		}
	}
	n.flush(t)
	got := n.history(t, "orders", rangeQuery(metricsT0, metricsT0+store.HourMs, "1h"))
	if len(got.Points) != 1 || got.Points[0].Pass != 5 || got.Points[0].Block != 2 || got.Points[0].Complete != 4 {
		t.Errorf("stored history %+v disagrees with the exposition", got.Points)
	}
}

// TestHistoryStepsDescribeTheHistory: GET /metrics/history-steps answers
// the steps the history takes, its cap on points and the flush interval,
// and the history holds to them: every step is accepted up to the cap and
// refused one step past it.
func TestHistoryStepsDescribeTheHistory(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	traffic(t, n.engine, "orders", 1, 0, 1)
	resp, body := n.call(t, http.MethodGet, "/api/v1/metrics/history-steps", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	got := decodeStrict[HistorySteps](t, body)
	want := HistorySteps{
		Steps: []HistoryStep{
			{Name: "1m", StepMs: store.MinuteMs}, {Name: "5m", StepMs: 5 * store.MinuteMs}, {Name: "15m", StepMs: 15 * store.MinuteMs},
			{Name: "1h", StepMs: store.HourMs}, {Name: "1d", StepMs: 24 * store.HourMs},
		},
		MaxPoints: 10_000, FlushIntervalMs: time.Hour.Milliseconds(),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("history steps %+v, want %+v", got, want)
	}
	for _, step := range got.Steps {
		path := "/api/v1/resources/orders/metrics?"
		at := rangeQuery(0, int64(got.MaxPoints)*step.StepMs, step.Name)
		if resp, body := n.call(t, http.MethodGet, path+at, nil, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("step %s, %d points: %d %s", step.Name, got.MaxPoints, resp.StatusCode, body)
		}
		past := rangeQuery(0, int64(got.MaxPoints+1)*step.StepMs, step.Name)
		if resp, body := n.call(t, http.MethodGet, path+past, nil, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("step %s, %d points: %d %s, want 400", step.Name, got.MaxPoints+1, resp.StatusCode, body)
		}
	}
}
