package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
)

// TestProtectParams: the guard of the API's own routes names each
// request's client IP ("ip") and caller ("identity", also the origin),
// so hotspot rules limit each client or caller of a route apart and
// authority rules allow or deny callers; an admin is served all the same,
// and health and logging in are never guarded. The rules are created
// through POST /api/v1/rules, as an operator would. Every request of the test
// comes from one client, 127.0.0.1; the callers are the viewer token ci,
// the viewer user carol through a session, and the admin token.
func TestProtectParams(t *testing.T) {
	t.Parallel()
	type call struct {
		who, method, path string
		wantStatus        int
	}
	const rules = "/api/v1/rules"
	tests := []struct {
		name        string
		rules       []string // bodies of POST /api/v1/rules
		calls       []call
		wantMessage string
	}{
		{
			name:  "a hotspot rule on ip limits each client",
			rules: []string{`{"name":"per-ip","kind":"hotspot","resource":"GET /api/v1/rules","paramKey":"ip","threshold":1}`},
			calls: []call{
				{"ci", "GET", rules, 200}, {"ci", "GET", rules, 429}, {"carol", "GET", rules, 429},
				{"admin", "GET", rules, 200}, {"ci", "GET", "/api/v1/me", 200},
			},
			wantMessage: "too many requests: blocked by hotspot rule per-ip",
		},
		{
			name:  "a hotspot rule on identity limits each caller",
			rules: []string{`{"name":"per-caller","kind":"hotspot","resource":"GET /api/v1/rules","paramKey":"identity","threshold":1}`},
			calls: []call{
				{"ci", "GET", rules, 200}, {"ci", "GET", rules, 429},
				{"carol", "GET", rules, 200}, {"carol", "GET", rules, 429},
			},
			wantMessage: "too many requests: blocked by hotspot rule per-caller",
		},
		{
			name: "the caller is the origin of authority rules",
			rules: []string{
				`{"name":"no-ci","kind":"authority","resource":"GET /api/v1/rules","strategy":"deny","origins":["token:ci"]}`,
				`{"name":"carol-only","kind":"authority","resource":"GET /api/v1/me","strategy":"allow","origins":["carol"]}`,
			},
			calls: []call{
				{"ci", "GET", rules, 429}, {"carol", "GET", rules, 200}, {"carol", "GET", "/api/v1/me", 200},
			},
			wantMessage: "too many requests: blocked by authority rule no-ci",
		},
		{
			name:  "a system rule guards every route of the API",
			rules: []string{`{"name":"api-inbound","kind":"system","metricType":"inboundQps","triggerCount":2}`},
			calls: []call{
				{"ci", "GET", rules, 200}, {"carol", "GET", "/api/v1/me", 200}, {"ci", "GET", "/api/v1/me", 429},
				{"admin", "GET", rules, 200}, {"", "GET", "/api/v1/health", 200},
			},
			wantMessage: "too many requests: blocked by system rule api-inbound",
		},
		{
			name: "health and logging in are never guarded",
			rules: []string{
				`{"name":"health-ip","kind":"hotspot","resource":"GET /api/v1/health","paramKey":"ip","threshold":0}`,
				`{"name":"login-ip","kind":"hotspot","resource":"POST /api/v1/auth/login","paramKey":"ip","threshold":0}`,
				`{"name":"health-nobody","kind":"authority","resource":"GET /api/v1/health","strategy":"allow","origins":["nobody"]}`,
			},
			calls: []call{
				{"", "GET", "/api/v1/health", 200}, {"ci", "GET", "/api/v1/health", 200},
				{"", "POST", "/api/v1/auth/login", 200}, {"", "POST", "/api/v1/auth/login", 200},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := engine.NewManualClock(1_700_000_000_000)
			n := &authNode{testServer: startServer(t, func(cfg *Config) { cfg.AdminPassword = adminPassword }, nil,
				servertest.EngineOptions(engine.Options{Clock: clock}))}
			ci, _ := n.newToken(t, "ci", roleViewer, "")
			if status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/users",
				`{"username":"carol","role":"viewer","password":"carol-password-1"}`); status != http.StatusCreated {
				t.Fatalf("create carol: %d %s", status, data)
			}
			cookie, csrf := n.login(t, "carol", "carol-password-1")
			callers := map[string]http.Header{
				"":      nil,
				"ci":    bearer(ci),
				"carol": withCookie(cookie, csrf),
				"admin": bearer(servertest.AdminToken),
			}
			for _, rule := range tt.rules {
				if status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/rules", rule); status != http.StatusCreated {
					t.Fatalf("create %s: %d %s", rule, status, data)
				}
			}

			for i, c := range tt.calls {
				body := ""
				if c.path == "/api/v1/auth/login" {
					body = fmt.Sprintf(`{"username":"admin","password":%q}`, adminPassword)
				}
				resp, data := n.DoWith(t, c.method, c.path, strings.NewReader(body), callers[c.who])
				if resp.StatusCode != c.wantStatus {
					t.Fatalf("call %d: %s %s as %q: %d, want %d (%s)", i, c.method, c.path, c.who, resp.StatusCode, c.wantStatus, data)
				}
				if c.wantStatus != http.StatusTooManyRequests {
					continue
				}
				if got := resp.Header.Get("Retry-After"); got != "1" {
					t.Errorf("call %d: Retry-After %q, want 1", i, got)
				}
				if env := decodeEnvelope(t, resp, data); env.Code != "too_many_requests" || env.Message != tt.wantMessage {
					t.Errorf("call %d: %+v, want too_many_requests %q", i, env, tt.wantMessage)
				}
			}
		})
	}
}

// TestProtectRetryAfter: a guarded API call that a window rule blocks is
// told when the window has room again (Retry-After from the rule, not a
// constant second); an admin's call, served all the same, carries no
// Retry-After.
func TestProtectRetryAfter(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(1_700_000_000_000)
	n := &authNode{testServer: startServer(t, nil, nil, servertest.EngineOptions(engine.Options{Clock: clock}))}
	ci, _ := n.newToken(t, "ci", roleViewer, "")
	const rules = "/api/v1/rules"
	rule := `{"name":"rules-per-10s","kind":"flow","resource":"GET /api/v1/rules","threshold":1,"statIntervalMs":10000}`
	if status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, rules, rule); status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", rule, status, data)
	}
	if resp, data := n.DoWith(t, http.MethodGet, rules, nil, bearer(ci)); resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d (%s)", resp.StatusCode, data)
	}
	clock.Advance(2500)
	resp, data := n.DoWith(t, http.MethodGet, rules, nil, bearer(ci))
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second call: %d, want 429 (%s)", resp.StatusCode, data)
	}
	// 7.5 s until the first call leaves the window, rounded up.
	if got := resp.Header.Get("Retry-After"); got != "8" {
		t.Errorf("Retry-After = %q, want 8", got)
	}
	resp, data = n.DoWith(t, http.MethodGet, rules, nil, bearer(servertest.AdminToken))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("an admin's call: %d, want 200 (%s)", resp.StatusCode, data)
	}
	if got := resp.Header.Values("Retry-After"); len(got) != 0 {
		t.Errorf("an admin's call served: Retry-After %q, want none", got)
	}
}
