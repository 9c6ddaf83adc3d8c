package server

import (
	"net/http"
	"testing"
)

// TestRuleExpiresAt: expiresAt is an optional RFC 3339 time of every
// kind, shown in UTC as written, cleared by null, refused when it is not a
// time; the engine gets it with the rule.
func TestRuleExpiresAt(t *testing.T) {
	ts := startServer(t, nil, nil)
	flow := ts.createRule(t, `{"name":"incident","kind":"flow","resource":"r","threshold":1,"expiresAt":"2026-12-01T01:00:00+01:00"}`)
	if flow.ExpiresAt == nil || flow.ExpiresAt.Format("2006-01-02T15:04:05Z07:00") != "2026-12-01T00:00:00Z" {
		t.Fatalf("expiresAt = %v, want 2026-12-01T00:00:00Z", flow.ExpiresAt)
	}
	breaker := ts.createRule(t, `{"name":"cb","kind":"circuitBreaker","resource":"r","strategy":"errorRatio","threshold":0.5,"retryTimeoutMs":1000,"expiresAt":"2030-01-01T00:00:00Z"}`)
	if breaker.ExpiresAt == nil || breaker.ExpiresAt.Year() != 2030 {
		t.Fatalf("breaker expiresAt = %v", breaker.ExpiresAt)
	}
	for _, rule := range ts.Server.engine.FlowRules() {
		if rule.Name == "incident" && rule.ExpiresAtMs != flow.ExpiresAt.UnixMilli() {
			t.Errorf("the engine's rule expires at %d, want %d", rule.ExpiresAtMs, flow.ExpiresAt.UnixMilli())
		}
	}

	resp, body := ts.call(t, http.MethodPatch, ruleURL(flow.ID), `{"threshold":2}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if got, _ := ts.getRule(t, flow.ID); got.ExpiresAt == nil {
		t.Fatal("a patch of another field dropped expiresAt")
	}
	resp, body = ts.call(t, http.MethodPatch, ruleURL(flow.ID), `{"expiresAt":null}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if got, _ := ts.getRule(t, flow.ID); got.ExpiresAt != nil {
		t.Fatalf("expiresAt = %v after null, want it absent", got.ExpiresAt)
	}

	for _, bad := range []string{`"tomorrow"`, `"2026-12-01"`, `42`, `"1960-01-01T00:00:00Z"`} {
		resp, body := ts.call(t, http.MethodPost, rulesPath, `{"kind":"flow","resource":"r","threshold":1,"expiresAt":`+bad+`}`, nil)
		wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", "expiresAt")
	}
}
