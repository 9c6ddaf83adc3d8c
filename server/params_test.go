package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestEveryBadQueryParameterNamed: a request with several bad query
// parameters is answered one 400 whose details name every one of them, on
// each route that reads more than one, not only the first it read.
func TestEveryBadQueryParameterNamed(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name": "one", "kind": "flow", "resource": "r", "threshold": 5}`)
	tests := []struct {
		method, path string
		wantFields   []string
	}{
		{http.MethodGet, rulesPath + "?page=0&pageSize=501&enabled=maybe&app=Shop&kind=bogus&resource=a%01b&q=a%00b",
			[]string{"page", "pageSize", "enabled", "app", "kind", "resource", "q"}},
		{http.MethodGet, rulesPath + "/1/revisions?page=x&pageSize=0", []string{"page", "pageSize"}},
		{http.MethodGet, "/api/v1/users?page=0&pageSize=0", []string{"page", "pageSize"}},
		{http.MethodGet, "/api/v1/tokens?page=-1&pageSize=x", []string{"page", "pageSize"}},
		{http.MethodGet, "/api/v1/resources?pageSize=501&sort=bogus&q=a%01", []string{"pageSize", "sort", "q"}},
		{http.MethodGet, "/api/v1/resources/r/metrics?step=2m&from=yesterday&to=never", []string{"step", "from", "to"}},
		{http.MethodGet, "/api/v1/metrics/top?from=x&to=y&by=bogus&limit=0", []string{"from", "to", "by", "limit"}},
		{http.MethodGet, "/api/v1/breakers/transitions?from=x&to=y&resource=a%01b", []string{"from", "to", "resource"}},
		{http.MethodGet, rulesPath + "/snapshot?app=Shop&wait=forever", []string{"app", "wait"}},
		{http.MethodPost, applyPath + "?dryRun=maybe&prune=perhaps", []string{"dryRun", "prune"}},
		{http.MethodPost, importPath + "?format=nacos&kind=authority&dryRun=maybe", []string{"format", "kind", "dryRun"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, got := ts.call(t, tt.method, tt.path, `{"rules": []}`, nil)
			e := wantError(t, resp, got, http.StatusBadRequest, "bad_request", tt.wantFields...)
			if len(e.Details) != len(tt.wantFields) {
				t.Errorf("details = %+v, want one for each of %q", e.Details, tt.wantFields)
			}
			for _, name := range tt.wantFields {
				if !strings.Contains(e.Message, name) {
					t.Errorf("message %q does not name %s", e.Message, name)
				}
			}
		})
	}
}
