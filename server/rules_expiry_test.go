package server

import (
	"net/http"
	"testing"
)

// TestRuleExpiresAt: expiresAt is an optional RFC 3339 time of every
// kind, shown in UTC as written, cleared by null, refused when it is not a
// time; the engine gets it with the rule.
func TestRuleExpiresAt(t *testing.T) {
	t.Parallel()
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

// TestExpiredRulesAreFlagged: a rule past its expiresAt, by the engine's
// clock, is listed and read with "expired": true and stops applying; it
// stays stored, and GET's body may be PUT back with the flag in it.
func TestExpiredRulesAreFlagged(t *testing.T) {
	t.Parallel()
	ts, clock := newCheckServer(t,
		`{"name":"incident","kind":"flow","resource":"orders","threshold":0,"expiresAt":"2026-03-01T12:00:01Z"}`,
		`{"name":"incident-users","kind":"hotspot","resource":"orders","paramKey":"user","threshold":0,"expiresAt":"2026-03-01T12:00:02Z"}`,
		`{"name":"forever","kind":"authority","resource":"admin","strategy":"deny","origins":["x"]}`)
	expired := func() map[string]any {
		flags := map[string]any{}
		for _, r := range ts.listRules(t, "").Items {
			flags[r.Name] = r.Expired
		}
		resp, body := ts.call(t, http.MethodGet, ruleURL(ts.ruleIDByName(t, "incident")), nil, nil)
		mustStatus(t, resp, body, http.StatusOK)
		flags["GET incident"] = jsonObject(t, body)["expired"]
		return flags
	}
	if got := expired(); got["incident"] != false || got["incident-users"] != false || got["forever"] != false || got["GET incident"] != nil {
		t.Errorf("before expiresAt: %v, want none expired and the flag absent", got)
	}
	// A rule of threshold 0 tells a limit of 0, for the whole window.
	flowBlock := `{"allowed":false,"waitMs":0,"reason":"flow","rule":"incident","limit":0,"intervalMs":1000,"remaining":0,"resetMs":1000}`
	ts.run(t, []exchange{{checkPath, `{"resource":"orders","params":{"user":"a"}}`, 200, flowBlock}})

	clock.Advance(1000)
	if got := expired(); got["incident"] != true || got["incident-users"] != false || got["GET incident"] != true {
		t.Errorf("at the flow rule's expiresAt: %v", got)
	}
	hotspotBlock := `{"allowed":false,"waitMs":0,"reason":"hotspot","rule":"incident-users","limit":0,"intervalMs":1000,"remaining":0,"resetMs":1000}`
	ts.run(t, []exchange{{checkPath, `{"resource":"orders","params":{"user":"a"}}`, 200, hotspotBlock}})

	clock.Advance(1000)
	if got := expired(); got["incident"] != true || got["incident-users"] != true || got["forever"] != false {
		t.Errorf("past both: %v", got)
	}
	ts.run(t, []exchange{{checkPath, `{"resource":"orders","params":{"user":"a"}}`, 200, allowed}})

	id := ts.ruleIDByName(t, "incident")
	_, body := ts.call(t, http.MethodGet, ruleURL(id), nil, nil)
	resp, body := ts.call(t, http.MethodPut, ruleURL(id), body, nil)
	mustStatus(t, resp, body, http.StatusOK)
	resp, body = ts.call(t, http.MethodPatch, ruleURL(id), `{"expiresAt":null}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if _, flagged := jsonObject(t, body)["expired"]; flagged {
		t.Errorf("a rule without expiresAt is flagged: %s", body)
	}
	ts.run(t, []exchange{{checkPath, `{"resource":"orders"}`, 200, flowBlock}})
}
