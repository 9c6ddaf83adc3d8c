package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

// testClock is a settable clock for sessions, tokens and throttling.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// authNode is a server with a settable clock and a known admin password.
type authNode struct {
	*testServer
	clock *testClock
}

const adminPassword = "admin-password-1"

func startAuthNode(t *testing.T) *authNode {
	t.Helper()
	clock := &testClock{now: time.Date(2026, 11, 20, 14, 5, 0, 0, time.UTC)}
	ts := startServer(t, func(cfg *Config) {
		cfg.Now = clock.Now
		cfg.AdminPassword = adminPassword
	}, nil)
	return &authNode{testServer: ts, clock: clock}
}

// as sends a request with the given headers only and returns the status
// and body; of an event stream, only the status.
func (n *authNode) as(t *testing.T, header http.Header, method, path, body string) (int, []byte) {
	t.Helper()
	if strings.HasSuffix(path, "/stream") {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, n.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	resp, data := n.DoWith(t, method, path, strings.NewReader(body), header)
	return resp.StatusCode, data
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// newToken creates a token with role as the admin and returns its secret.
func (n *authNode) newToken(t *testing.T, name, role, expiresAt string) (string, int64) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"role":%q}`, name, role)
	if expiresAt != "" {
		body = fmt.Sprintf(`{"name":%q,"role":%q,"expiresAt":%q}`, name, role, expiresAt)
	}
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/tokens", body)
	if status != http.StatusCreated {
		t.Fatalf("create token: %d %s", status, data)
	}
	var created NewAPIToken
	if err := json.Unmarshal(data, &created); err != nil {
		t.Fatal(err)
	}
	return created.Token, created.ID
}

// login logs in and returns the session cookie and the CSRF token.
func (n *authNode) login(t *testing.T, user, password string) (*http.Cookie, string) {
	t.Helper()
	resp, data := n.DoWith(t, http.MethodPost, "/api/v1/auth/login",
		strings.NewReader(fmt.Sprintf(`{"username":%q,"password":%q}`, user, password)), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %s", resp.StatusCode, data)
	}
	var answer LoginResponse
	if err := json.Unmarshal(data, &answer); err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			return c, answer.CSRFToken
		}
	}
	t.Fatalf("login set no %s cookie", sessionCookie)
	return nil, ""
}

func withCookie(c *http.Cookie, csrf string) http.Header {
	h := http.Header{"Cookie": {c.Name + "=" + c.Value}}
	if csrf != "" {
		h.Set(csrfHeader, csrf)
	}
	return h
}

var routeParam = regexp.MustCompile(`:[a-zA-Z]+`)

// TestEveryRouteIsGuarded walks every registered route: without
// credentials it is 401 (unless docs/api.md lists it as public), a viewer on a
// write is 403, a revoked or expired token is 401, and the role the route
// needs gets past authorisation. A route added without a policy fails it.
func TestEveryRouteIsGuarded(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	viewer, _ := n.newToken(t, "viewer", roleViewer, "")
	editor, _ := n.newToken(t, "editor", roleEditor, "")
	revoked, revokedID := n.newToken(t, "revoked", roleAdmin, "")
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodDelete, fmt.Sprintf("/api/v1/tokens/%d", revokedID), ""); status != http.StatusNoContent {
		t.Fatalf("revoke: %d", status)
	}
	expiring, _ := n.newToken(t, "expiring", roleAdmin, n.clock.Now().Add(time.Hour).Format(time.RFC3339))
	n.clock.Advance(time.Hour)
	tokens := map[string]string{roleViewer: viewer, roleEditor: editor, roleAdmin: servertest.AdminToken}
	session, csrf := n.login(t, "admin", adminPassword)

	publicOutsideAPI := map[string]bool{"/": true, "/swagger/doc.json": true, "/swagger/*": true}
	seen := map[string]bool{}
	for _, route := range n.app.GetRoutes(true) {
		key := route.Method + " " + route.Path
		if seen[key] || route.Method == http.MethodHead || route.Method == "CONNECT" || route.Method == "TRACE" {
			continue
		}
		seen[key] = true
		if route.Path == "/metrics" {
			if status, _ := n.as(t, nil, route.Method, route.Path, ""); status != http.StatusUnauthorized {
				t.Errorf("%s without credentials: %d, want 401 (no --public-metrics)", key, status)
			}
			if status, _ := n.as(t, bearer(viewer), route.Method, route.Path, ""); status != http.StatusOK {
				t.Errorf("%s with a token: %d, want 200", key, status)
			}
			continue
		}
		if !strings.HasPrefix(route.Path, "/api/v1") {
			if !publicOutsideAPI[route.Path] {
				t.Errorf("%s: a route outside /api/v1 that is not known to be public", key)
			}
			continue
		}
		// An id no row has: the walk must not delete what it relies on.
		path := routeParam.ReplaceAllString(route.Path, "999999")
		t.Run(key, func(t *testing.T) {
			if publicPaths[route.Path] {
				if status, _ := n.as(t, nil, route.Method, path, "{}"); status == http.StatusUnauthorized {
					t.Fatalf("a public route answered 401")
				}
				return
			}
			if status, _ := n.as(t, nil, route.Method, path, "{}"); status != http.StatusUnauthorized {
				t.Errorf("no credentials: %d, want 401", status)
			}
			for name, token := range map[string]string{"revoked": revoked, "expired": expiring, "unknown": "nope"} {
				if status, _ := n.as(t, bearer(token), route.Method, path, "{}"); status != http.StatusUnauthorized {
					t.Errorf("%s token: %d, want 401", name, status)
				}
			}
			need, ok := routePolicy[key]
			if !ok {
				t.Fatalf("not in routePolicy: add the rule docs/api.md gives it")
			}
			if need != roleViewer {
				if status, _ := n.as(t, bearer(viewer), route.Method, path, "{}"); status != http.StatusForbidden {
					t.Errorf("viewer on a route for %s: %d, want 403", need, status)
				}
			}
			creds := bearer(tokens[need])
			if route.Path == "/api/v1/me/password" { // a user's own; tokens have none
				creds = withCookie(session, csrf)
			}
			if status, body := n.as(t, creds, route.Method, path, "{}"); status == http.StatusUnauthorized || status == http.StatusForbidden {
				t.Errorf("%s: %d %s, want past authorisation", need, status, body)
			}
		})
	}
	if status, _ := n.as(t, nil, http.MethodGet, "/api/v1/no-such-route", ""); status != http.StatusUnauthorized {
		t.Errorf("an unknown /api/v1 path without credentials: %d, want 401", status)
	}
}

func TestSessions(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	resp, data := n.DoWith(t, http.MethodPost, "/api/v1/auth/login",
		strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %s", resp.StatusCode, data)
	}
	setCookie := resp.Header.Get("Set-Cookie")
	for _, flag := range []string{"httponly", "samesite=strict", "path=/", sessionCookie + "="} {
		if !strings.Contains(strings.ToLower(setCookie), flag) {
			t.Errorf("Set-Cookie %q lacks %s", setCookie, flag)
		}
	}
	if strings.Contains(strings.ToLower(setCookie), "secure") {
		t.Errorf("Set-Cookie %q is Secure without TLS", setCookie)
	}
	cookie, csrf := n.login(t, "admin", adminPassword)

	var me Me
	status, data := n.as(t, withCookie(cookie, ""), http.MethodGet, "/api/v1/me", "")
	if status != http.StatusOK || json.Unmarshal(data, &me) != nil || me.Type != "user" || me.Name != "admin" || me.CSRFToken != csrf {
		t.Fatalf("me: %d %s", status, data)
	}
	rule := `{"kind":"flow","resource":"orders","threshold":5}`
	if status, _ := n.as(t, withCookie(cookie, ""), http.MethodPost, "/api/v1/rules", rule); status != http.StatusForbidden {
		t.Fatalf("cookie write without X-CSRF-Token: %d, want 403", status)
	}
	if status, _ := n.as(t, withCookie(cookie, "wrong"), http.MethodPost, "/api/v1/rules", rule); status != http.StatusForbidden {
		t.Fatalf("cookie write with a wrong X-CSRF-Token: %d, want 403", status)
	}
	status, data = n.as(t, withCookie(cookie, csrf), http.MethodPost, "/api/v1/rules", rule)
	if status != http.StatusCreated {
		t.Fatalf("cookie write with X-CSRF-Token: %d %s", status, data)
	}
	var revs RevisionList
	n.send(t, http.MethodGet, "/api/v1/rules/1/revisions", "", &revs)
	if revs.Items[0].Actor != "admin" {
		t.Fatalf("revision actor %q, want admin", revs.Items[0].Actor)
	}

	// Idle expiry: used within the idle time it lives on; left longer, it
	// ends.
	n.clock.Advance(defaultSessionIdle - time.Minute)
	if status, _ := n.as(t, withCookie(cookie, ""), http.MethodGet, "/api/v1/me", ""); status != http.StatusOK {
		t.Fatalf("session used within its idle time: %d", status)
	}
	n.clock.Advance(defaultSessionIdle)
	if status, _ := n.as(t, withCookie(cookie, ""), http.MethodGet, "/api/v1/me", ""); status != http.StatusUnauthorized {
		t.Fatalf("idle session: %d, want 401", status)
	}

	// Absolute expiry, even when used all along.
	cookie, _ = n.login(t, "admin", adminPassword)
	for range int(defaultSessionMax / time.Hour) {
		n.clock.Advance(time.Hour)
		n.as(t, withCookie(cookie, ""), http.MethodGet, "/api/v1/me", "")
	}
	if status, _ := n.as(t, withCookie(cookie, ""), http.MethodGet, "/api/v1/me", ""); status != http.StatusUnauthorized {
		t.Fatalf("session past its absolute expiry: %d, want 401", status)
	}

	// Logout needs the CSRF token, then ends the session.
	cookie, csrf = n.login(t, "admin", adminPassword)
	if status, _ := n.as(t, withCookie(cookie, ""), http.MethodPost, "/api/v1/auth/logout", ""); status != http.StatusForbidden {
		t.Fatalf("logout without X-CSRF-Token: %d, want 403", status)
	}
	if status, _ := n.as(t, withCookie(cookie, csrf), http.MethodPost, "/api/v1/auth/logout", ""); status != http.StatusNoContent {
		t.Fatalf("logout: %d", status)
	}
	if status, _ := n.as(t, withCookie(cookie, ""), http.MethodGet, "/api/v1/me", ""); status != http.StatusUnauthorized {
		t.Fatalf("after logout: %d, want 401", status)
	}

	// A password change ends every session of the user.
	first, _ := n.login(t, "admin", adminPassword)
	second, csrf := n.login(t, "admin", adminPassword)
	status, data = n.as(t, withCookie(second, csrf), http.MethodPatch, "/api/v1/me/password",
		`{"currentPassword":"`+adminPassword+`","newPassword":"a-new-password-2"}`)
	if status != http.StatusNoContent {
		t.Fatalf("password change: %d %s", status, data)
	}
	for _, c := range []*http.Cookie{first, second} {
		if status, _ := n.as(t, withCookie(c, ""), http.MethodGet, "/api/v1/me", ""); status != http.StatusUnauthorized {
			t.Fatalf("a session after the password change: %d, want 401", status)
		}
	}
	n.login(t, "admin", "a-new-password-2")
}

func TestLoginErrors(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	tests := []struct {
		name, body string
		status     int
	}{
		{"wrong password", `{"username":"admin","password":"nope-nope-nope"}`, http.StatusUnauthorized},
		{"unknown user", `{"username":"mallory","password":"nope-nope-nope"}`, http.StatusUnauthorized},
		{"not JSON", `username=admin`, http.StatusBadRequest},
		{"missing password", `{"username":"admin"}`, http.StatusUnprocessableEntity},
		{"unknown field", `{"username":"admin","password":"x","otp":"1"}`, http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := n.as(t, nil, http.MethodPost, "/api/v1/auth/login", tt.body); status != tt.status {
				t.Fatalf("%d %s, want %d", status, body, tt.status)
			}
		})
	}
}

// TestLoginThrottling: repeated failures for a username, or from one
// address, are answered 429, even with the right password, until the
// window has passed.
func TestLoginThrottling(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	wrong := `{"username":"admin","password":"wrong-password"}`
	right := `{"username":"admin","password":"` + adminPassword + `"}`
	for i := range maxFailuresPerUser {
		if status, _ := n.as(t, nil, http.MethodPost, "/api/v1/auth/login", wrong); status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, status)
		}
	}
	resp, body := n.DoWith(t, http.MethodPost, "/api/v1/auth/login", strings.NewReader(right), nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the right password after %d failures: %d %s (Retry-After %q), want 429 with Retry-After",
			maxFailuresPerUser, resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	n.clock.Advance(loginWindowMs * time.Millisecond)
	n.login(t, "admin", adminPassword)

	// Per address: many usernames from one client.
	for i := range maxFailuresPerClient {
		n.as(t, nil, http.MethodPost, "/api/v1/auth/login", fmt.Sprintf(`{"username":"user-%d","password":"x-x-x-x-x-x"}`, i))
	}
	if status, _ := n.as(t, nil, http.MethodPost, "/api/v1/auth/login", right); status != http.StatusTooManyRequests {
		t.Fatalf("after %d failures from one address: %d, want 429", maxFailuresPerClient, status)
	}
}

func TestTokensAndUsers(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	secret, id := n.newToken(t, "ci-deploy", roleEditor, "")
	if !strings.HasPrefix(secret, "slc_") {
		t.Fatalf("token secret %q", secret)
	}
	var me Me
	status, data := n.as(t, bearer(secret), http.MethodGet, "/api/v1/me", "")
	if status != http.StatusOK || json.Unmarshal(data, &me) != nil || me.Type != "token" || me.Name != "ci-deploy" || me.Role != roleEditor {
		t.Fatalf("me as a token: %d %s", status, data)
	}
	if status, _ := n.as(t, bearer(secret), http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"r","threshold":1}`); status != http.StatusCreated {
		t.Fatalf("editor token writes a rule: %d", status)
	}
	var revs RevisionList
	n.send(t, http.MethodGet, "/api/v1/rules/1/revisions", "", &revs)
	if revs.Items[0].Actor != "token:ci-deploy" {
		t.Fatalf("revision actor %q, want token:ci-deploy", revs.Items[0].Actor)
	}
	status, data = n.as(t, bearer(servertest.AdminToken), http.MethodGet, "/api/v1/tokens", "")
	if status != http.StatusOK || strings.Contains(string(data), secret) || strings.Contains(string(data), hashSecret(secret)) ||
		!strings.Contains(string(data), `"lastUsedAt":"2026-11-20T14:05:00Z"`) || !strings.Contains(string(data), `"createdBy":"token:bootstrap"`) {
		t.Fatalf("token list: %d %s", status, data)
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/tokens", `{"name":"ci-deploy","role":"viewer"}`); status != http.StatusConflict {
		t.Fatalf("a taken token name: %d, want 409", status)
	}
	for _, body := range []string{`{"name":"","role":"viewer"}`, `{"name":"x","role":"root"}`, `{"name":"x","role":"viewer","expiresAt":"2000-01-01T00:00:00Z"}`} {
		if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/tokens", body); status != http.StatusUnprocessableEntity {
			t.Fatalf("token %s: %d, want 422", body, status)
		}
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodDelete, fmt.Sprintf("/api/v1/tokens/%d", id), ""); status != http.StatusNoContent {
		t.Fatalf("revoke: %d", status)
	}
	if status, _ := n.as(t, bearer(secret), http.MethodGet, "/api/v1/me", ""); status != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d, want 401", status)
	}

	// Users: create, log in, demote, the last admin kept.
	status, data = n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/users", `{"username":"alice","role":"viewer","password":"alice-password"}`)
	if status != http.StatusCreated || strings.Contains(string(data), "password") {
		t.Fatalf("create user: %d %s", status, data)
	}
	var alice User
	if err := json.Unmarshal(data, &alice); err != nil {
		t.Fatal(err)
	}
	cookie, csrf := n.login(t, "alice", "alice-password")
	if status, _ := n.as(t, withCookie(cookie, csrf), http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"r","threshold":1}`); status != http.StatusForbidden {
		t.Fatalf("viewer writes a rule: %d, want 403", status)
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodPatch, fmt.Sprintf("/api/v1/users/%d", alice.ID), `{"role":"editor","password":"alice-password-2"}`); status != http.StatusOK {
		t.Fatalf("update user: %d", status)
	}
	if status, _ := n.as(t, withCookie(cookie, ""), http.MethodGet, "/api/v1/me", ""); status != http.StatusUnauthorized {
		t.Fatalf("alice's session after her password was reset: %d, want 401", status)
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/users", `{"username":"alice","role":"viewer","password":"alice-password"}`); status != http.StatusConflict {
		t.Fatalf("a taken username: %d, want 409", status)
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/users", `{"username":"bob","role":"viewer","password":"short"}`); status != http.StatusUnprocessableEntity {
		t.Fatalf("a short password: %d, want 422", status)
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodPatch, "/api/v1/users/1", `{"role":"viewer"}`); status != http.StatusConflict {
		t.Fatalf("demoting the last admin: %d, want 409", status)
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodDelete, "/api/v1/users/1", ""); status != http.StatusConflict {
		t.Fatalf("deleting the last admin: %d, want 409", status)
	}
	if status, _ := n.as(t, bearer(servertest.AdminToken), http.MethodDelete, fmt.Sprintf("/api/v1/users/%d", alice.ID), ""); status != http.StatusNoContent {
		t.Fatalf("delete user: %d", status)
	}

	// No hash ever reaches an answer or the log.
	status, data = n.as(t, bearer(servertest.AdminToken), http.MethodGet, "/api/v1/users", "")
	logs := n.Logs()
	for _, leak := range []string{"$2a$", hashSecret(secret), hashSecret(servertest.AdminToken)} {
		if strings.Contains(string(data), leak) || strings.Contains(logs, leak) {
			t.Fatalf("%q leaked into an answer or the log", leak)
		}
	}
	if status != http.StatusOK {
		t.Fatalf("users: %d", status)
	}
}

func TestFirstAdmin(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.db")
	n := startServer(t, nil, nil, servertest.DBPath(path))
	m := regexp.MustCompile(`username=admin password=(\S+)`).FindStringSubmatch(n.Logs())
	if m == nil {
		t.Fatalf("no generated password in the log:\n%s", n.Logs())
	}
	auth := &authNode{testServer: n}
	auth.login(t, "admin", m[1])
	n.Stop(t)

	// A second start neither creates another admin nor logs a password.
	again := startServer(t, nil, nil, servertest.DBPath(path))
	if strings.Contains(again.Logs(), "password=") {
		t.Fatalf("a restart logged a password:\n%s", again.Logs())
	}
}

// TestAdminsAreNotLockedOut: a rule on the API's own routes blocks editors
// and viewers, but an admin can still reach the route to remove it.
func TestAdminsAreNotLockedOut(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	editor, _ := n.newToken(t, "editor", roleEditor, "")
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/rules",
		`{"kind":"flow","name":"no-patches","resource":"PATCH /api/v1/rules/:id","threshold":0}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, data)
	}
	if status, _ := n.as(t, bearer(editor), http.MethodPatch, "/api/v1/rules/1", `{"description":"x"}`); status != http.StatusTooManyRequests {
		t.Fatalf("an editor's patch under the rule: %d, want 429", status)
	}
	if status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPatch, "/api/v1/rules/1", `{"enabled":false}`); status != http.StatusOK {
		t.Fatalf("the admin's patch that disables the rule: %d %s, want 200", status, data)
	}
	if status, _ := n.as(t, bearer(editor), http.MethodPatch, "/api/v1/rules/1", `{"description":"x"}`); status != http.StatusOK {
		t.Fatalf("an editor's patch once the rule is off: %d, want 200", status)
	}
}

// TestNoRuleLocksOutLogin: the engine never guards health nor logging in
// and out, so an editor's rule with threshold 0 on them changes nothing.
func TestNoRuleLocksOutLogin(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	editor, _ := n.newToken(t, "editor", roleEditor, "")
	for _, resource := range []string{"POST /api/v1/auth/login", "POST /api/v1/auth/logout", "GET /api/v1/health"} {
		status, data := n.as(t, bearer(editor), http.MethodPost, "/api/v1/rules",
			fmt.Sprintf(`{"kind":"flow","resource":%q,"threshold":0}`, resource))
		if status != http.StatusCreated {
			t.Fatalf("create a rule on %s: %d %s", resource, status, data)
		}
	}
	for range 3 {
		cookie, csrf := n.login(t, "admin", adminPassword)
		if status, data := n.as(t, withCookie(cookie, csrf), http.MethodPost, "/api/v1/auth/logout", ""); status != http.StatusNoContent {
			t.Fatalf("logout under a threshold-0 rule: %d %s", status, data)
		}
		if status, data := n.as(t, nil, http.MethodGet, "/api/v1/health", ""); status != http.StatusOK {
			t.Fatalf("health under a threshold-0 rule: %d %s", status, data)
		}
	}
}
