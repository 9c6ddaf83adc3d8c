package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// adaptiveRule is the server engine's adaptive concurrency rule called
// name.
func (ts *testServer) adaptiveRule(name string) (engine.AdaptiveConcurrencyRule, bool) {
	for _, r := range ts.Server.engine.AdaptiveConcurrencyRules() {
		if r.Name == name {
			return r, true
		}
	}
	return engine.AdaptiveConcurrencyRule{}, false
}

// TestAdaptiveRuleEverywhere: an adaptive concurrency rule is created
// with its defaults shown, patched (its algorithm's own field refused
// under the other), listed by kind, exported and applied back unchanged,
// handed to instances in the snapshot, and a check past its limit is
// blocked with reason adaptive and the limit it met.
func TestAdaptiveRuleEverywhere(t *testing.T) {
	ts := startServer(t, nil, nil)
	created := ts.createRule(t, `{"kind":"adaptiveConcurrency","resource":"GET:/api/search","initialLimit":1,"minLimit":1}`)
	if created.Name != "adaptiveconcurrency-get-api-search" {
		t.Errorf("name = %q", created.Name)
	}
	_, body := ts.call(t, http.MethodGet, ruleURL(created.ID), nil, nil)
	wantContent(t, jsonObject(t, body), map[string]any{
		"name": created.Name, "kind": "adaptiveConcurrency", "resource": "GET:/api/search", "enabled": true, "mode": "enforce", "algorithm": "gradient2",
		"initialLimit": 1.0, "minLimit": 1.0, "maxLimit": 1000.0, "tolerance": 1.1, "smoothing": 0.2,
	})
	if r, ok := ts.adaptiveRule(created.Name); !ok || r.InitialLimit != 1 || r.Algorithm != engine.AdaptiveGradient2 {
		t.Fatalf("the engine's rule = %+v, %v", r, ok)
	}

	resp, body := ts.call(t, http.MethodPatch, ruleURL(created.ID), `{"algorithm":"aimd","smoothing":0.5}`, nil)
	wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", "smoothing")
	resp, body = ts.call(t, http.MethodPatch, ruleURL(created.ID), `{"minLimit":2000}`, nil)
	wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", "minLimit")
	resp, body = ts.call(t, http.MethodPatch, ruleURL(created.ID), `{"algorithm":"aimd","backoffRatio":0.8}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if r, _ := ts.adaptiveRule(created.Name); r.Algorithm != engine.AdaptiveAIMD || r.BackoffRatio != 0.8 {
		t.Fatalf("the engine's rule after the patch = %+v", r)
	}
	if got := ruleNames(ts.listRules(t, "kind=adaptiveConcurrency").Items); strings.Join(got, ",") != created.Name {
		t.Errorf("kind=adaptiveConcurrency lists %q", got)
	}

	resp, exported := ts.call(t, http.MethodGet, exportPath+"?format=json", nil, nil)
	mustStatus(t, resp, exported, http.StatusOK)
	resp, body = ts.call(t, http.MethodPost, applyPath+"?prune=true", exported, nil)
	mustStatus(t, resp, body, http.StatusOK)
	wantPlan(t, decodePlan(t, body), planSummary{unchanged: []string{created.Name}})

	resp, body = ts.call(t, http.MethodGet, "/api/v1/rules/snapshot", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	var snap wire.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatal(err)
	}
	set, err := wire.DecodeRules(snap.Rules)
	if err != nil || len(set.AdaptiveConcurrency) != 1 || set.AdaptiveConcurrency[0].BackoffRatio != 0.8 {
		t.Fatalf("the snapshot's rules decode as %+v, %v", set.AdaptiveConcurrency, err)
	}

	resp, body = ts.call(t, http.MethodPost, checkPath, `{"resource":"GET:/api/search"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if first := jsonObject(t, body); first["allowed"] != true || first["entryId"] == nil {
		t.Fatalf("first check: %s, want allowed with an entry to complete", body)
	}
	resp, body = ts.call(t, http.MethodPost, checkPath, `{"resource":"GET:/api/search"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	wantContent(t, jsonObject(t, body), map[string]any{"allowed": false, "waitMs": 0.0, "reason": "adaptive", "rule": created.Name, "limit": 1.0})
}

// TestAdaptiveLimitGauge: /metrics has the limit of every adaptive rule,
// labelled with its rule, resource and mode.
func TestAdaptiveLimitGauge(t *testing.T) {
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	err := n.engine.LoadAdaptiveConcurrencyRules([]engine.AdaptiveConcurrencyRule{
		{Name: "search", Resource: "search", InitialLimit: 30},
		{Name: "orders", Resource: "orders", Mode: engine.ModeShadow},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := n.call(t, http.MethodGet, "/metrics", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range families["sluice_adaptive_limit"].GetMetric() {
		got[label(m, "rule")+"/"+label(m, "resource")+"/"+label(m, "mode")] = m.GetGauge().GetValue()
	}
	if len(got) != 2 || got["search/search/enforce"] != 30 || got["orders/orders/shadow"] != engine.DefaultAdaptiveInitialLimit {
		t.Fatalf("sluice_adaptive_limit = %v", got)
	}
}

// TestAdaptiveLimitHistory: the minute rows of a resource with an
// adaptive rule keep the least, greatest and latest limit the rule held,
// and the history answers them.
func TestAdaptiveLimitHistory(t *testing.T) {
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	rule := engine.AdaptiveConcurrencyRule{Name: "search", Resource: "search", Algorithm: engine.AdaptiveAIMD, InitialLimit: 10, MinLimit: 1}
	if err := n.engine.LoadAdaptiveConcurrencyRules([]engine.AdaptiveConcurrencyRule{rule}); err != nil {
		t.Fatal(err)
	}
	// Ten calls in flight each span, as slow as the no-load latency: the
	// limit, always in use, climbs by one a span.
	for span := range int64(20) {
		clock.Set(metricsT0 + span*100)
		var held []engine.Entry
		for range 10 {
			if e, blk := n.engine.Entry("search"); blk == nil {
				held = append(held, e)
			}
		}
		for _, e := range held {
			e.Exit(engine.WithRtMs(100))
		}
	}
	n.flush(t)
	st, _ := n.engine.Resource("search").AdaptiveLimit()
	h := n.history(t, "search", rangeQuery(metricsT0, metricsT0+60_000, "1m"))
	if len(h.Points) != 1 {
		t.Fatalf("points %+v, want one minute", h.Points)
	}
	if p := h.Points[0]; p.AdaptiveLimitMin != 10 || p.AdaptiveLimitMax != st.Limit || p.AdaptiveLimitLast != st.Limit || st.Limit <= 10 {
		t.Fatalf("minute's limits %d/%d/%d, want 10 and the rule's %d", p.AdaptiveLimitMin, p.AdaptiveLimitMax, p.AdaptiveLimitLast, st.Limit)
	}
}

// TestStreamStatsCarryTheAdaptiveLimit: a resource's live figures carry
// its adaptive rule's limit and latest change in words, and the stream's
// own encoder writes them as encoding/json does.
func TestStreamStatsCarryTheAdaptiveLimit(t *testing.T) {
	change := engine.AdaptiveChange{AtMs: 1, From: 120, To: 96, Cause: engine.AdaptiveLatency, ShortRttMs: 70, NoLoadRttMs: 50}
	live := liveStatsOf(engine.LiveStats{PassQps: 3, Concurrency: 2, AdaptiveLimit: 96, AdaptiveChange: change})
	if live.AdaptiveLimit != 96 || live.AdaptiveChange != "latency rose 40% over its no-load level: limit 120 → 96" {
		t.Fatalf("live %+v", live)
	}
	stats := StreamStats{Time: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC),
		Resources: []StreamResource{{Name: "a", LiveStats: live}, {Name: "b", LiveStats: LiveStats{PassQps: 1}}}}
	want, err := marshalJSON(stats)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendStreamStats(nil, stats); string(got) != string(want) {
		t.Fatalf("stream stats:\n%s\nencoding/json:\n%s", got, want)
	}
}
