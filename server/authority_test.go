package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// authorityByName is the engine's authority rule called name.
func (ts *testServer) authorityByName(name string) (engine.AuthorityRule, bool) {
	for _, r := range ts.Server.engine.AuthorityRules() {
		if r.Name == name {
			return r, true
		}
	}
	return engine.AuthorityRule{}, false
}

// TestAuthorityRuleWrites: an authority rule is created, read, replaced
// and patched like any rule, listed by its kind, and the engine holds it
// as stored.
func TestAuthorityRuleWrites(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	created := ts.createRule(t, `{"kind":"authority","resource":"GET:/api/admin","strategy":"allow","origins":["checkout","billing"]}`)
	if created.Name != "authority-get-api-admin" {
		t.Errorf("name = %q, want authority-get-api-admin", created.Name)
	}
	ts.createRule(t, ordersRule)

	_, body := ts.call(t, http.MethodGet, ruleURL(created.ID), nil, nil)
	wantContent(t, jsonObject(t, body), map[string]any{
		"name": "authority-get-api-admin", "kind": "authority", "resource": "GET:/api/admin", "enabled": true, "mode": "enforce",
		"strategy": "allow", "origins": []any{"checkout", "billing"},
	})
	if r, ok := ts.authorityByName(created.Name); !ok || r.Strategy != engine.AuthorityAllow || !slices.Equal(r.Origins, []string{"checkout", "billing"}) {
		t.Errorf("the engine's rule = %+v, %v", r, ok)
	}
	if got := ruleNames(ts.listRules(t, "kind=authority").Items); strings.Join(got, ",") != created.Name {
		t.Errorf("kind=authority lists %q", got)
	}

	resp, body := ts.call(t, http.MethodPut, ruleURL(created.ID), `{"kind":"authority","resource":"GET:/api/admin","strategy":"deny","origins":["scraper"]}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	resp, body = ts.call(t, http.MethodPatch, ruleURL(created.ID), `{"origins":["scraper","crawler"],"mode":"shadow"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	wantContent(t, jsonObject(t, body), map[string]any{
		"name": "authority-get-api-admin", "kind": "authority", "resource": "GET:/api/admin", "enabled": true, "mode": "shadow",
		"strategy": "deny", "origins": []any{"scraper", "crawler"},
	})
	if r, ok := ts.authorityByName(created.Name); !ok || r.Strategy != engine.AuthorityDeny || r.Mode != engine.ModeShadow || len(r.Origins) != 2 {
		t.Errorf("the engine's rule after the patch = %+v, %v", r, ok)
	}

	resp, body = ts.call(t, http.MethodPatch, ruleURL(created.ID), `{"enabled":false}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if _, ok := ts.authorityByName(created.Name); ok {
		t.Error("the engine holds the disabled rule")
	}
}

func TestAuthorityRuleRejects(t *testing.T) {
	t.Parallel()
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf(`"o%d"`, i)
	}
	tests := []struct {
		name       string
		body       string
		wantFields []string
	}{
		{"missing strategy", `{"kind":"authority","resource":"r","origins":["a"]}`, []string{"strategy"}},
		{"unknown strategy", `{"kind":"authority","resource":"r","strategy":"block","origins":["a"]}`, []string{"strategy"}},
		{"a breaker's strategy", `{"kind":"authority","resource":"r","strategy":"errorRatio","origins":["a"]}`, []string{"strategy"}},
		{"missing origins", `{"kind":"authority","resource":"r","strategy":"allow"}`, []string{"origins"}},
		{"null origins", `{"kind":"authority","resource":"r","strategy":"allow","origins":null}`, []string{"origins"}},
		{"no origins", `{"kind":"authority","resource":"r","strategy":"deny","origins":[]}`, []string{"origins"}},
		{"1001 origins", `{"kind":"authority","resource":"r","strategy":"deny","origins":[` + strings.Join(many, ",") + `]}`, []string{"origins"}},
		{"origins a string", `{"kind":"authority","resource":"r","strategy":"deny","origins":"a"}`, []string{"origins"}},
		{"an origin a number", `{"kind":"authority","resource":"r","strategy":"deny","origins":["a",7]}`, []string{"origins[1]"}},
		{"an empty origin", `{"kind":"authority","resource":"r","strategy":"deny","origins":["a",""]}`, []string{"origins[1]"}},
		{"an origin of 257 characters", `{"kind":"authority","resource":"r","strategy":"deny","origins":["` + strings.Repeat("o", 257) + `"]}`, []string{"origins[0]"}},
		{"a field of hotspot rules", `{"kind":"authority","resource":"r","strategy":"deny","origins":["a"],"paramKey":"ip"}`, []string{"paramKey"}},
		{"a threshold", `{"kind":"authority","resource":"r","strategy":"deny","origins":["a"],"threshold":1}`, []string{"threshold"}},
	}
	ts := startServer(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodPost, rulesPath, tt.body, nil)
			wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", tt.wantFields...)
		})
	}
	ts.wantNoRules(t)
	if got := ts.Server.engine.AuthorityRules(); len(got) != 0 {
		t.Errorf("the engine holds %+v", got)
	}
}

// TestAuthorityDecidesByOrigin: through POST /check, an allow rule lets
// only the origins it lists through (a call without an origin is
// blocked), a deny rule blocks only those.
func TestAuthorityDecidesByOrigin(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t,
		`{"name":"only-shops","kind":"authority","resource":"admin","strategy":"allow","origins":["shop-a","shop-b"]}`,
		`{"name":"no-scrapers","kind":"authority","resource":"catalog","strategy":"deny","origins":["scraper"]}`)
	allowOnly := `{"allowed":false,"waitMs":0,"reason":"authority","rule":"only-shops"}`
	denied := `{"allowed":false,"waitMs":0,"reason":"authority","rule":"no-scrapers"}`
	ts.run(t, []exchange{
		{checkPath, `{"resource":"admin","origin":"shop-a"}`, 200, allowed},
		{checkPath, `{"resource":"admin","origin":"shop-b","count":3}`, 200, allowed},
		{checkPath, `{"resource":"admin","origin":"shop-c"}`, 200, allowOnly},
		{checkPath, `{"resource":"admin"}`, 200, allowOnly},
		{checkPath, `{"resource":"admin","origin":null}`, 200, allowOnly},
		{checkPath, `{"resource":"catalog","origin":"scraper"}`, 200, denied},
		{checkPath, `{"resource":"catalog","origin":"shop-a"}`, 200, allowed},
		{checkPath, `{"resource":"catalog"}`, 200, allowed},
		{batchPath, `{"checks":[{"resource":"admin","origin":"shop-a"},{"resource":"admin"},{"resource":"catalog","origin":"scraper"}]}`, 200,
			`{"results":[` + allowed + `,` + allowOnly + `,` + denied + `]}`},
	})
}
