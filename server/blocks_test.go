package server

import (
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/remote"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// TestHistoryBlocksByRuleOverTheFleet: a resource blocked by a flow rule
// and a hotspot rule, on the server's engine and on two instances that
// report through the API, has a history whose every minute gives each
// rule's blocks, summed over the three, and sums to the minute's block;
// the Prometheus exposition counts them by reason.
func TestHistoryBlocksByRuleOverTheFleet(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 10_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	n.createRule(t, map[string]any{"kind": "flow", "name": "cap", "resource": "orders", "threshold": 3})
	n.createRule(t, map[string]any{"kind": "hotspot", "name": "per-user", "resource": "orders", "paramKey": "user", "threshold": 1})
	token := n.instanceToken(t)
	var instances []*remote.Client
	var clocks []*engine.ManualClock
	for _, id := range []string{"i1", "i2"} {
		ic := engine.NewManualClock(metricsT0 + 10_000)
		c, err := remote.New(remote.Config{ServerURL: n.URL, Token: token, App: "shop", InstanceID: id,
			PollWait: time.Second, Engine: engine.Options{Clock: ic}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		instances, clocks = append(instances, c), append(clocks, ic)
	}
	for _, c := range instances {
		pollUntil(t, "an instance to run the rules", 10*time.Second, func() bool {
			return len(c.Engine().FlowRules()) == 1 && len(c.Engine().HotspotRules()) == 1
		})
	}

	// Each engine, in a second of minute 0: ann passes, ann again meets
	// the hotspot rule, bob and carl pass, dan meets the flow rule; in
	// minute 1, ann twice.
	calls := func(eng *engine.Engine, users ...string) {
		for _, user := range users {
			if en, blk := eng.Entry("orders", engine.WithParam("user", user)); blk == nil {
				en.Exit()
			}
		}
	}
	engines := []*engine.Engine{n.Engine, instances[0].Engine(), instances[1].Engine()}
	for _, eng := range engines {
		calls(eng, "ann", "ann", "bob", "carl", "dan")
	}
	clock.Set(metricsT0 + store.MinuteMs + 10_000)
	for _, c := range clocks {
		c.Set(metricsT0 + store.MinuteMs + 10_000)
	}
	for _, eng := range engines {
		calls(eng, "ann", "ann")
	}
	for _, c := range instances {
		if err := c.Close(); err != nil {
			t.Fatalf("an instance's last report: %v", err)
		}
	}
	n.flush(t)

	got := n.history(t, "orders", rangeQuery(metricsT0, metricsT0+2*store.MinuteMs, "1m"))
	flow := RuleBlocks{Reason: "flow", Rule: "cap", Blocked: 3}
	hot := RuleBlocks{Reason: "hotspot", Rule: "per-user", Blocked: 3}
	want := map[int64][]RuleBlocks{metricsT0: {flow, hot}, metricsT0 + store.MinuteMs: {hot}}
	for _, p := range got.Points {
		var sum int64
		for _, b := range p.BlockedBy {
			sum += b.Blocked
		}
		if sum != p.Block {
			t.Errorf("%s: blockedBy sums to %d, block is %d", p.Time, sum, p.Block)
		}
		if w := want[p.Time.UnixMilli()]; !reflect.DeepEqual(p.BlockedBy, w) {
			t.Errorf("%s: blockedBy = %+v, want %+v", p.Time, p.BlockedBy, w)
		}
		delete(want, p.Time.UnixMilli())
	}
	if len(want) > 0 {
		t.Errorf("minutes missing from the history: %v (points %+v)", want, got.Points)
	}

	// Prometheus: the server's engine's and the fleet's blocks by reason,
	// a reason only once it blocked.
	resp, body := n.call(t, http.MethodGet, "/metrics", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	for _, line := range []string{
		`sluice_resource_blocked_by_reason_total{resource="orders",reason="flow"} 1`,
		`sluice_resource_blocked_by_reason_total{resource="orders",reason="hotspot"} 2`,
		`sluice_fleet_blocked_by_reason_total{app="shop",resource="orders",reason="flow"} 2`,
		`sluice_fleet_blocked_by_reason_total{app="shop",resource="orders",reason="hotspot"} 4`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("the exposition lacks %q", line)
		}
	}
	if strings.Contains(string(body), `resource="orders",reason="system"`) {
		t.Errorf("the exposition has a series of a reason that never blocked:\n%s", body)
	}
}

// TestReportBlocksBounds: a report's blocks by rule are bounded and
// checked, each bad one named by its field, and nothing of the report is
// recorded; one without them, as older instances send, is taken.
func TestReportBlocksBounds(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	now := time.Now().UTC().Truncate(time.Minute).Format(time.RFC3339)
	minute := func(fields string) string {
		return `{"instance":{"id":"a"},"minutes":[{"resource":"r","time":"` + now + `","block":5` + fields + `}]}`
	}
	many := strings.TrimSuffix(strings.Repeat(`{"reason":"flow","rule":"r","blocked":0},`, 65), ",")
	for _, tt := range []struct {
		body   string
		fields []string
	}{
		{minute(`,"blockedBy":[{"reason":"nope","rule":"r1","blocked":1},{"rule":"Bad Name","blocked":6},` +
			`{"reason":"flow","rule":"r1","blocked":1,"extra":1},{"reason":"flow","rule":"r1","blocked":-1}]`),
			[]string{"minutes[0].blockedBy[0].reason", "minutes[0].blockedBy[1].reason", "minutes[0].blockedBy[1].rule",
				"minutes[0].blockedBy[1].blocked", "minutes[0].blockedBy[2].extra", "minutes[0].blockedBy[3].rule",
				"minutes[0].blockedBy[3].blocked"}},
		{minute(`,"blockedBy":[` + many + `]`), []string{"minutes[0].blockedBy"}},
		{minute(`,"blockedBy":{}`), []string{"minutes[0].blockedBy"}},
	} {
		resp, body := ts.report(t, servertest.AdminToken, tt.body)
		wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", tt.fields...)
	}
	for _, body := range []string{
		minute(`,"blockedBy":[{"reason":"flow","rule":"r1","blocked":3},{"reason":"system","rule":"","blocked":2}]`),
		minute(``),
	} {
		if resp, got := ts.report(t, servertest.AdminToken, body); resp.StatusCode != http.StatusNoContent {
			t.Errorf("report %s: %d %s, want 204", body, resp.StatusCode, got)
		}
	}
}
