package server

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/impact"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/store"
)

// TestImpactOfARuleOverHTTP: over seeded history with a burst, a dry run
// of apply names the burst's minute for the rule it would create and the
// rule it would change, not for one whose description alone changes, nor
// in a real apply; POST /rules/impact answers the same estimate and
// refuses a kind it cannot estimate, naming kind.
func TestImpactOfARuleOverHTTP(t *testing.T) {
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	burst := metricsT0 - store.HourMs + 5*store.MinuteMs
	var deltas []store.MinuteDelta
	for m := metricsT0 - 2*store.HourMs; m < metricsT0; m += store.MinuteMs {
		c := engine.Counts{Calls: engine.Calls{Pass: 60}, BusiestSecond: 2}
		if m == burst {
			c = engine.Counts{Calls: engine.Calls{Pass: 3_000}, BusiestSecond: 400}
		}
		deltas = append(deltas, store.MinuteDelta{Resource: "orders", StartMs: m, Counts: c})
	}
	if err := n.Store.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatal(err)
	}
	n.createRule(t, map[string]any{"name": "orders-old", "kind": "flow", "resource": "orders", "threshold": 1000})
	n.createRule(t, map[string]any{"name": "orders-doc", "kind": "flow", "resource": "orders", "threshold": 1000})

	file := map[string]any{"rules": []map[string]any{
		{"name": "orders-new", "kind": "flow", "resource": "orders", "threshold": 100},
		{"name": "orders-old", "kind": "flow", "resource": "orders", "threshold": 200},
		{"name": "orders-doc", "kind": "flow", "resource": "orders", "threshold": 1000, "description": "only this"},
	}}
	resp, body := n.call(t, http.MethodPost, "/api/v1/rules/apply?dryRun=true", file, nil)
	mustStatus(t, resp, body, http.StatusOK)
	plan := decodeStrict[rules.ApplyPlan](t, body)
	wantBurst := func(what string, est *impact.Estimate, low int64) {
		t.Helper()
		if est == nil || len(est.Ranges) != 2 {
			t.Fatalf("%s: impact %+v, want the day's and the week's", what, est)
		}
		day := est.Ranges[0]
		if day.MinutesBlocked != 1 || day.Minutes[0].Time.UnixMilli() != burst || day.BlockedLow != low {
			t.Errorf("%s: %+v, want the burst at %s alone, at least %d blocked", what, day, time.UnixMilli(burst).UTC(), low)
		}
	}
	if len(plan.Created) != 1 || len(plan.Updated) != 2 {
		t.Fatalf("plan %+v, want one created and two updated", plan)
	}
	wantBurst("created", plan.Created[0].Impact, 300)
	for _, u := range plan.Updated {
		switch u.Name {
		case "orders-old":
			wantBurst("updated", u.Impact, 200)
		default:
			if u.Impact != nil {
				t.Errorf("%s, whose description alone changes: impact %+v, want none", u.Name, u.Impact)
			}
		}
	}

	resp, body = n.call(t, http.MethodPost, "/api/v1/rules/apply", file, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if plan := decodeStrict[rules.ApplyPlan](t, body); plan.Created[0].Impact != nil {
		t.Errorf("a real apply's plan has an impact: %+v", plan.Created[0].Impact)
	}

	resp, body = n.call(t, http.MethodPost, "/api/v1/rules/impact", map[string]any{"kind": "flow", "resource": "orders", "threshold": 100}, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(string(body), `"notes":[]`) {
		t.Errorf("the estimate of a plain rule: %s, want notes as an empty list, never null", body)
	}
	est := decodeStrict[impact.Estimate](t, body)
	wantBurst("POST /rules/impact", &est, 300)

	resp, body = n.call(t, http.MethodPost, "/api/v1/rules/impact", map[string]any{"kind": "authority", "resource": "orders", "strategy": "allow", "origins": []string{"a"}}, nil)
	mustStatus(t, resp, body, http.StatusUnprocessableEntity)
	if e := decodeStrict[ErrorResponse](t, body); len(e.Error.Details) != 1 || e.Error.Details[0].Field != "kind" {
		t.Errorf("an authority rule: %s, want a 422 naming kind", body)
	}
	resp, body = n.call(t, http.MethodPost, "/api/v1/rules/impact", map[string]any{"kind": "flow", "resource": "orders", "threshold": -1}, nil)
	mustStatus(t, resp, body, http.StatusUnprocessableEntity)
	if e := decodeStrict[ErrorResponse](t, body); len(e.Error.Details) != 1 || e.Error.Details[0].Field != "threshold" {
		t.Errorf("a bad threshold: %s, want a 422 naming threshold", body)
	}
}
