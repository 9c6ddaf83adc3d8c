package server

import (
	"net/http"
	"testing"
)

// TestBearerSchemeIsCaseInsensitive: the Authorization scheme is
// case-insensitive and followed by one or more spaces (RFC 7235, section
// 2.1), on the API and on /metrics alike; another scheme, or Bearer with
// no token, is 401.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
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
