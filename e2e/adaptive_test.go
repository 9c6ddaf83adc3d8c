package e2e

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestAdaptiveRuleForm creates an adaptive concurrency rule through the
// form generated from its kind's table: aimd shows its backoff ratio and
// hides gradient2's smoothing, a minimum over the maximum is refused at
// its field, and the rule saved is the one the server's engine runs,
// summarised in the rule list.
func TestAdaptiveRuleForm(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-kind", "adaptiveConcurrency")
	tb.waitFor("the adaptive fields shown", `!document.querySelector('fieldset[data-kind="adaptiveConcurrency"]').hidden && document.querySelector('fieldset[data-kind="flow"]').hidden`)
	tb.fill("#rule-name", "search-limit")
	tb.fill("#rule-resource", "GET:/api/search")
	tb.fill("#rule-adaptiveConcurrency-algorithm", "aimd")
	tb.waitFor("backoffRatio shown, smoothing hidden",
		`document.querySelector('#rule-adaptiveConcurrency-backoffRatio').closest('[hidden]') === null && document.querySelector('#rule-adaptiveConcurrency-smoothing').closest('[hidden]') !== null`)
	tb.fill("#rule-adaptiveConcurrency-minLimit", "300")
	tb.fill("#rule-adaptiveConcurrency-maxLimit", "200")
	tb.click("#rule-save")
	tb.waitText("#rule-adaptiveConcurrency-minLimit-error", "must be at most Greatest limit (maxLimit): 200")
	tb.fill("#rule-adaptiveConcurrency-minLimit", "10")
	tb.fill("#rule-adaptiveConcurrency-backoffRatio", "0.8")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText("main", "calls in flight at most what latency allows (aimd), 10 to 200")

	r := n.rule(t, 1)
	if r.Kind != engine.KindAdaptiveConcurrency || r.Algorithm == nil || *r.Algorithm != "aimd" || *r.MinLimit != 10 || *r.MaxLimit != 200 || *r.BackoffRatio != 0.8 || r.Smoothing != nil {
		t.Fatalf("stored rule = %+v", r)
	}
	got := n.engine.AdaptiveConcurrencyRules()
	if len(got) != 1 || got[0].Name != "search-limit" || got[0].Algorithm != engine.AdaptiveAIMD {
		t.Fatalf("the server's engine runs %+v", got)
	}
	if !strings.HasPrefix(r.Name, "search") {
		t.Fatalf("name %q", r.Name)
	}
}
