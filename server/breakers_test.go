package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/servertest"
)

func TestCircuitBreakerRules(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	var created rules.APIRule
	status := n.send(t, http.MethodPost, "/api/v1/rules",
		`{"kind":"circuitBreaker","name":"pay-errors","resource":"pay","strategy":"errorRatio","threshold":0.5,"retryTimeoutMs":5000}`, &created)
	if status != http.StatusCreated {
		t.Fatalf("create: %d", status)
	}
	if created.Strategy == nil || *created.Strategy != "errorRatio" || *created.MinRequestAmount != 5 ||
		*created.StatIntervalMs != 1000 || *created.ProbeNum != 1 || created.MaxAllowedRtMs != nil || created.Metric != nil {
		t.Fatalf("created = %+v, want defaults filled and no flow fields", created)
	}
	if got := n.engine.CircuitBreakerRules(); len(got) != 1 || got[0].Name != "pay-errors" {
		t.Fatalf("engine breakers = %+v, want pay-errors", got)
	}

	invalid := []struct {
		name   string
		body   string
		fields []string
	}{
		{"flow fields", `{"kind":"circuitBreaker","resource":"r","strategy":"errorCount","threshold":3,"retryTimeoutMs":1,"metric":"qps","refResource":"x"}`, []string{"metric", "refResource"}},
		{"breaker fields on a flow rule", `{"kind":"flow","resource":"r","threshold":3,"retryTimeoutMs":1,"probeNum":2}`, []string{"probeNum", "retryTimeoutMs"}},
		{"missing retry timeout and strategy", `{"kind":"circuitBreaker","resource":"r","threshold":0.5}`, []string{"retryTimeoutMs", "strategy"}},
		{"ratio above 1", `{"kind":"circuitBreaker","resource":"r","strategy":"errorRatio","threshold":1.5,"retryTimeoutMs":1}`, []string{"threshold"}},
		{"slow without max rt", `{"kind":"circuitBreaker","resource":"r","strategy":"slowRequestRatio","threshold":0.5,"retryTimeoutMs":1}`, []string{"maxAllowedRtMs"}},
		{"fractional count", `{"kind":"circuitBreaker","resource":"r","strategy":"errorCount","threshold":2.5,"retryTimeoutMs":1}`, []string{"threshold"}},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := n.Do(t, http.MethodPost, "/api/v1/rules", strings.NewReader(tt.body))
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422: %s", resp.StatusCode, body)
			}
			var envelope ErrorResponse
			if err := json.Unmarshal(body, &envelope); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, d := range envelope.Error.Details {
				got[d.Field] = true
			}
			for _, f := range tt.fields {
				if !got[f] {
					t.Errorf("details %+v lack %s", envelope.Error.Details, f)
				}
			}
		})
	}

	// The breaker opens on reported errors; GET /breakers shows it.
	res := n.engine.Resource("pay")
	res.RecordComplete(5, 10, true)
	var list BreakerList
	if status := n.send(t, http.MethodGet, "/api/v1/breakers", "", &list); status != http.StatusOK {
		t.Fatalf("breakers: %d", status)
	}
	if len(list.Items) != 1 {
		t.Fatalf("breakers = %+v, want one", list)
	}
	b := list.Items[0]
	if b.Rule != "pay-errors" || b.Resource != "pay" || b.State != "open" || b.Strategy != "errorRatio" ||
		b.Window.Total != 5 || b.Window.Errors != 5 || b.Since.IsZero() {
		t.Fatalf("breaker = %+v, want pay-errors open with 5 of 5 errors", b)
	}
	if _, blk := res.Entry(); blk == nil || blk.Reason() != "circuitBreaker" {
		t.Fatalf("entry on an open breaker: %v", blk)
	}

	// Disabling the rule removes the breaker from the engine.
	if status := n.send(t, http.MethodPatch, "/api/v1/rules/1", `{"enabled":false}`, nil); status != http.StatusOK {
		t.Fatalf("disable: %d", status)
	}
	if got := n.engine.Breakers(); len(got) != 0 {
		t.Fatalf("breakers after disabling = %+v, want none", got)
	}
}

func TestImportSentinelCircuitBreakers(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	file := `[
		{"id": "1", "resource": "POST:/pay", "strategy": 1, "retryTimeoutMs": 3000, "minRequestAmount": 10, "statIntervalMs": 5000, "statSlidingWindowBucketCount": 10, "threshold": 0.4},
		{"resource": "POST:/pay", "strategy": 0, "retryTimeoutMs": 3000, "maxAllowedRtMs": 50, "threshold": 0.5, "probeNum": 2},
		{"resource": "GET:/stock", "strategy": 2, "retryTimeoutMs": 1000, "maxAllowedRtMs": 99, "threshold": 3}
	]`
	var plan rules.ApplyPlan
	if status := n.send(t, http.MethodPost, "/api/v1/rules/import?format=sentinel&kind=circuitBreaker", file, &plan); status != http.StatusOK {
		t.Fatalf("import: %d", status)
	}
	if len(plan.Created) != 3 || plan.Created[0].Name != "circuitbreaker-post-pay" || plan.Created[1].Name != "circuitbreaker-post-pay-2" ||
		plan.Created[2].Name != "circuitbreaker-get-stock" {
		t.Fatalf("plan = %+v", plan)
	}
	got := n.engine.CircuitBreakerRules()
	want := []string{"errorRatio 0.4 10 5000 1 0", "slowRequestRatio 0.5 5 1000 2 50", "errorCount 3 5 1000 1 0"}
	for i, r := range got {
		if s := fmt.Sprintf("%s %g %d %d %d %d", r.Strategy, r.Threshold, r.MinRequestAmount, r.StatIntervalMs, r.ProbeNum, r.MaxAllowedRtMs); s != want[i] {
			t.Errorf("breaker %d = %s, want %s", i, s, want[i])
		}
	}
	if status := n.send(t, http.MethodPost, "/api/v1/rules/import?format=sentinel&kind=circuitBreaker", file, &plan); status != http.StatusOK || len(plan.Unchanged) != 3 {
		t.Fatalf("second import: %d %+v, want all unchanged", status, plan)
	}
	resp, body := n.Do(t, http.MethodPost, "/api/v1/rules/import?format=sentinel&kind=circuitBreaker", strings.NewReader(`[{"resource":"x","strategy":7,"retryTimeoutMs":1,"threshold":1}]`))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), "rules[0].strategy") {
		t.Fatalf("bad strategy: %d %s", resp.StatusCode, body)
	}
}

// TestBreakerOverHTTP is the whole cycle through the check API: errors
// reported with complete open the breaker, checks are then blocked with
// reason circuitBreaker, after retryTimeoutMs one probe goes through (held
// under an entryId), and its success closes the breaker.
func TestBreakerOverHTTP(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(1_000_000)
	ts := startServer(t, func(cfg *Config) { cfg.UnguardedAPI = true }, nil,
		servertest.EngineOptions(engine.Options{Clock: clock}))
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, data := ts.Do(t, http.MethodPost, path, strings.NewReader(body))
		var answer map[string]any
		if len(data) > 0 {
			if err := json.Unmarshal(data, &answer); err != nil {
				t.Fatalf("%s: %v: %s", path, err, data)
			}
		}
		return resp.StatusCode, answer
	}
	if status, _ := post("/api/v1/rules", `{"kind":"circuitBreaker","name":"pay-errors","resource":"pay",
		"strategy":"errorCount","threshold":2,"minRequestAmount":2,"retryTimeoutMs":5000}`); status != http.StatusCreated {
		t.Fatalf("create: %d", status)
	}
	for range 2 {
		if _, answer := post("/api/v1/check", `{"resource":"pay"}`); answer["allowed"] != true {
			t.Fatalf("check while closed: %v", answer)
		}
		if status, _ := post("/api/v1/complete", `{"resource":"pay","rtMs":12,"error":true}`); status != http.StatusNoContent {
			t.Fatalf("complete: %d", status)
		}
	}
	if _, answer := post("/api/v1/check", `{"resource":"pay"}`); answer["allowed"] != false || answer["reason"] != "circuitBreaker" || answer["rule"] != "pay-errors" {
		t.Fatalf("check while open: %v, want blocked by pay-errors", answer)
	}
	clock.Advance(5000)
	_, probe := post("/api/v1/check", `{"resource":"pay"}`)
	entryID, _ := probe["entryId"].(string)
	if probe["allowed"] != true || entryID == "" {
		t.Fatalf("the probe after retryTimeoutMs: %v, want allowed with an entryId", probe)
	}
	if _, answer := post("/api/v1/check", `{"resource":"pay"}`); answer["allowed"] != false || answer["reason"] != "circuitBreaker" {
		t.Fatalf("a second call while the probe is out: %v, want blocked", answer)
	}
	if status, _ := post("/api/v1/complete", `{"entryId":"`+entryID+`","rtMs":8}`); status != http.StatusNoContent {
		t.Fatalf("complete the probe: %d", status)
	}
	if _, answer := post("/api/v1/check", `{"resource":"pay"}`); answer["allowed"] != true || answer["entryId"] != nil {
		t.Fatalf("check after a successful probe: %v, want allowed, nothing held", answer)
	}
	var list BreakerList
	resp, data := ts.Do(t, http.MethodGet, "/api/v1/breakers", nil)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &list) != nil || len(list.Items) != 1 || list.Items[0].State != "closed" {
		t.Fatalf("breakers: %d %s, want pay-errors closed", resp.StatusCode, data)
	}
}
