package e2e

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
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

// TestAdaptiveLimitOnTheResourcePage: a resource with an adaptive rule
// draws the limit of its stored minutes beside the calls in flight and
// latency, and its rule's row says the limit now and its last change, as
// the metric stream tells them.
func TestAdaptiveLimitOnTheResourcePage(t *testing.T) {
	t.Parallel()
	const resource = "e2e:adaptive"
	n := startNode(t, nodeConfig{seed: func(t *testing.T, st *store.Store) {
		end := time.Now().Truncate(time.Minute)
		var rows []store.MinuteDelta
		for i := range int64(50) {
			rows = append(rows, store.MinuteDelta{Resource: resource, StartMs: end.Add(-time.Duration(50-i) * time.Minute).UnixMilli(),
				Counts: engine.Counts{Calls: engine.Calls{Pass: 600, Complete: 600}, RtSumMs: 600 * 40, MaxConcurrency: 30 + i%5,
					AdaptiveLimitMin: 20 + i, AdaptiveLimitMax: 30 + i, AdaptiveLimitLast: 25 + i}})
		}
		if err := st.AddMetrics(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
	}})
	n.createRule(t, `{"kind":"adaptiveConcurrency","name":"adaptive-e2e","resource":"`+resource+`","algorithm":"aimd"}`)
	// Ten calls in flight at a time, as slow as ever: the limit in use and
	// latency within tolerance, it grows by one a span.
	r := n.engine.Resource(resource)
	deadline := time.Now().Add(10 * time.Second)
	for st, _ := r.AdaptiveLimit(); st.LastChange.AtMs == 0; st, _ = r.AdaptiveLimit() {
		if time.Now().After(deadline) {
			t.Fatalf("no change of the limit after 10 s: %+v", st)
		}
		var held []engine.Entry
		for range 10 {
			if e, blk := r.Entry(); blk == nil {
				held = append(held, e)
			}
		}
		for _, e := range held {
			e.Exit(engine.WithRtMs(40))
		}
	}

	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	tb.waitFor("the stored limits on the adaptive chart", `Number(document.querySelector('#adaptive-history-chart')?.dataset.limits ?? 0) >= 50`)
	tb.waitFor("the live in-flight chart drawn", `Number(document.querySelector('#inflight-chart')?.dataset.points ?? 0) > 0`)
	tb.waitText(`tr[data-rule="adaptive-e2e"] .adaptive-explanation`, "Limit now ")
	tb.waitText(`tr[data-rule="adaptive-e2e"] .adaptive-explanation`, "last change: latency held within")
	tb.checkAccessibility("the resource page with an adaptive rule")
}
