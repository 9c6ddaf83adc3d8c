package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
)

// loadAPIRules gives the server's engine hotspot and authority rules on
// its own routes. The API does not take these kinds yet, so they go to the
// engine directly; once POST /api/v1/rules takes them, create them there.
func loadAPIRules(t *testing.T, n *authNode, hotspot []engine.HotspotRule, authority []engine.AuthorityRule) {
	t.Helper()
	if err := n.Engine.LoadHotspotRules(hotspot); err != nil {
		t.Fatal(err)
	}
	if err := n.Engine.LoadAuthorityRules(authority); err != nil {
		t.Fatal(err)
	}
}

// TestProtectParams: the guard of the API's own routes names each
// request's client IP ("ip") and caller ("identity", also the origin),
// so hotspot rules limit each client or caller of a route apart and
// authority rules allow or deny callers; an admin is served all the same,
// and health and logging in are never guarded. Every request of the test
// comes from one client, 127.0.0.1; the callers are the viewer token ci,
// the viewer user carol through a session, and the admin token.
func TestProtectParams(t *testing.T) {
	type call struct {
		who, method, path string
		wantStatus        int
	}
	const rules = "/api/v1/rules"
	tests := []struct {
		name        string
		hotspot     []engine.HotspotRule
		authority   []engine.AuthorityRule
		calls       []call
		wantMessage string
	}{
		{
			name:    "a hotspot rule on ip limits each client",
			hotspot: []engine.HotspotRule{{Name: "per-ip", Resource: "GET /api/v1/rules", ParamKey: "ip", Threshold: 1}},
			calls: []call{
				{"ci", "GET", rules, 200}, {"ci", "GET", rules, 429}, {"carol", "GET", rules, 429},
				{"admin", "GET", rules, 200}, {"ci", "GET", "/api/v1/me", 200},
			},
			wantMessage: "too many requests: blocked by hotspot rule per-ip",
		},
		{
			name:    "a hotspot rule on identity limits each caller",
			hotspot: []engine.HotspotRule{{Name: "per-caller", Resource: "GET /api/v1/rules", ParamKey: "identity", Threshold: 1}},
			calls: []call{
				{"ci", "GET", rules, 200}, {"ci", "GET", rules, 429},
				{"carol", "GET", rules, 200}, {"carol", "GET", rules, 429},
			},
			wantMessage: "too many requests: blocked by hotspot rule per-caller",
		},
		{
			name: "the caller is the origin of authority rules",
			authority: []engine.AuthorityRule{
				{Name: "no-ci", Resource: "GET /api/v1/rules", Strategy: engine.AuthorityDeny, Origins: []string{"token:ci"}},
				{Name: "carol-only", Resource: "GET /api/v1/me", Strategy: engine.AuthorityAllow, Origins: []string{"carol"}},
			},
			calls: []call{
				{"ci", "GET", rules, 429}, {"carol", "GET", rules, 200}, {"carol", "GET", "/api/v1/me", 200},
			},
			wantMessage: "too many requests: blocked by authority rule no-ci",
		},
		{
			name: "health and logging in are never guarded",
			hotspot: []engine.HotspotRule{
				{Name: "health-ip", Resource: "GET /api/v1/health", ParamKey: "ip", Threshold: 0},
				{Name: "login-ip", Resource: "POST /api/v1/auth/login", ParamKey: "ip", Threshold: 0},
			},
			authority: []engine.AuthorityRule{
				{Name: "health-nobody", Resource: "GET /api/v1/health", Strategy: engine.AuthorityAllow, Origins: []string{"nobody"}},
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
			loadAPIRules(t, n, tt.hotspot, tt.authority)

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
