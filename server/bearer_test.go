package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestBearerSchemeIsCaseInsensitive: the Authorization scheme is
// case-insensitive and followed by one or more spaces (RFC 7235, section
// 2.1), on the API and on /metrics alike; another scheme, or Bearer with
// no token, is 401.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	viewer, _ := n.newToken(t, "scheme", roleViewer, "")
	tests := []struct {
		header string
		want   int
	}{
		{"Bearer " + viewer, http.StatusOK},
		{"bearer " + viewer, http.StatusOK},
		{"BEARER " + viewer, http.StatusOK},
		{"bEaReR " + viewer, http.StatusOK},
		{"Bearer   " + viewer, http.StatusOK},
		{"Basic " + viewer, http.StatusUnauthorized},
		{"Bearer" + viewer, http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"bearer", http.StatusUnauthorized},
		{viewer, http.StatusUnauthorized},
		{"Bearer x" + viewer, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		for _, path := range []string{"/api/v1/me", "/metrics"} {
			if status, body := n.as(t, http.Header{"Authorization": {tt.header}}, http.MethodGet, path, ""); status != tt.want {
				t.Errorf("GET %s with Authorization %q: %d %s, want %d", path, tt.header, status, body, tt.want)
			}
		}
	}
}

// TestEvery401Challenges: every 401 carries the WWW-Authenticate
// challenge RFC 7235 requires of one, whatever the credential was wrong
// with, on every route that needs one, and on a failed login.
func TestEvery401Challenges(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	credentials := map[string]http.Header{
		"none":                  nil,
		"an unknown token":      bearer("slc_unknown"),
		"another scheme":        {"Authorization": {"Basic YWRtaW46YWRtaW4="}},
		"an unknown session":    {"Cookie": {sessionCookie + "=unknown"}},
		"an empty bearer token": {"Authorization": {"Bearer"}},
	}
	check := func(t *testing.T, what string, status int, header http.Header) {
		t.Helper()
		if status != http.StatusUnauthorized || header.Get("WWW-Authenticate") != bearerChallenge {
			t.Errorf("%s: %d with WWW-Authenticate %q, want 401 with %q", what, status, header.Get("WWW-Authenticate"), bearerChallenge)
		}
	}
	seen := map[string]bool{}
	for _, route := range n.app.GetRoutes(true) {
		key := route.Method + " " + route.Path
		need, known := routePolicy[key]
		if !strings.HasPrefix(route.Path, apiPrefix) {
			need, known = outsideAPIPolicy[key]
		}
		if seen[key] || !known || need == "" {
			continue
		}
		seen[key] = true
		path := routeParam.ReplaceAllString(route.Path, "999999")
		for name, h := range credentials {
			resp, _ := n.DoWith(t, route.Method, path, strings.NewReader("{}"), h)
			check(t, key+" with "+name, resp.StatusCode, resp.Header)
		}
	}
	resp, _ := n.DoWith(t, http.MethodPost, "/api/v1/auth/login", strings.NewReader(`{"username":"admin","password":"wrong-password"}`), nil)
	check(t, "a failed login", resp.StatusCode, resp.Header)
}
