package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestImpactEstimate: on a resource whose history has one burst two hours
// ago, the rule form estimates, as the threshold is typed, what the rule
// would have blocked and names the burst's minute, and a threshold above
// the burst would have blocked nothing; a dry run of apply shows the same
// estimate under the rule it would create.
func TestImpactEstimate(t *testing.T) {
	t.Parallel()
	const resource = "e2e:bursty"
	burst := time.Now().Truncate(time.Minute).Add(-2 * time.Hour)
	n := startNode(t, nodeConfig{seed: func(t *testing.T, st *store.Store) {
		var rows []store.MinuteDelta
		for at := burst.Add(-3 * time.Hour); at.Before(burst.Add(time.Hour)); at = at.Add(time.Minute) {
			c := engine.Counts{Calls: engine.Calls{Pass: 60}, BusiestSecond: 2}
			if at.Equal(burst) {
				c = engine.Counts{Calls: engine.Calls{Pass: 3_000}, BusiestSecond: 400}
			}
			rows = append(rows, store.MinuteDelta{Resource: resource, StartMs: at.UnixMilli(), Counts: c})
		}
		if err := st.AddMetrics(context.Background(), rows); err != nil {
			t.Fatalf("seed the history: %v", err)
		}
	}})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/apply", "Apply a rule file")
	tb.fill("#apply-text", "rules:\n  - name: bursty\n    kind: flow\n    resource: "+resource+"\n    threshold: 100\n")
	tb.click("#apply-dry-run")
	tb.waitText("#plan-created", "would have blocked about 300 to 2,200 calls")

	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-resource", resource)
	tb.fill("#rule-flow-threshold", "100")
	tb.waitText("#rule-impact", "Last 24 hours: would have blocked about 300 to 2,200 calls of 17,340 calls, in 1 minute.")
	tb.waitText("#rule-impact .impact-minutes", "400 in the busiest second")
	if got, err := eval[string](tb, `document.querySelector('#rule-impact .impact-minutes time').getAttribute('datetime')`); err != nil || got != burst.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("the minute named: %q %v, want the burst's, %s", got, err, burst.UTC())
	}
	tb.screenshot("rule-impact")
	tb.fill("#rule-flow-threshold", "500")
	tb.waitText("#rule-impact", "Last 24 hours: would have blocked nothing of 17,340 calls.")

}
