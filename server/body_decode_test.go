package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// bodyRoutes are the routes that decode a JSON object body, each with a
// body it takes; %s in it is where a string value goes.
var bodyRoutes = []struct {
	method, path, body string
}{
	{http.MethodPost, rulesPath, `{"kind": "flow", "resource": "%s", "threshold": 5}`},
	{http.MethodPut, rulesPath + "/1", `{"kind": "flow", "resource": "%s", "threshold": 5}`},
	{http.MethodPatch, rulesPath + "/1", `{"description": "%s"}`},
	{http.MethodPost, applyPath + "?dryRun=true", `{"rules": [{"name": "a", "kind": "flow", "resource": "%s", "threshold": 5}]}`},
	{http.MethodPost, "/api/v1/check", `{"resource": "%s"}`},
	{http.MethodPost, "/api/v1/check/batch", `{"checks": [{"resource": "%s"}]}`},
	{http.MethodPost, "/api/v1/complete", `{"resource": "%s"}`},
	{http.MethodPost, "/api/v1/auth/login", `{"username": "%s", "password": "x"}`},
	{http.MethodPost, "/api/v1/users", `{"username": "%s", "role": "viewer", "password": "a long enough password"}`},
	{http.MethodPatch, "/api/v1/users/1", `{"role": "%s"}`},
	{http.MethodPost, "/api/v1/tokens", `{"name": "%s", "role": "viewer"}`},
	{http.MethodPost, "/api/v1/instances/report", `{"instance": {"id": "%s", "app": "shop"}}`},
}

// TestBodyTextMustBeUTF8 checks that a body whose string holds bytes that
// are not UTF-8, or escapes half of a surrogate pair, is a 400 on every
// route that decodes a body, instead of storing U+FFFD; a whole pair
// escaped is a character like any other.
func TestBodyTextMustBeUTF8(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name": "one", "kind": "flow", "resource": "r", "threshold": 5}`)
	bad := []struct{ name, value string }{
		{"a byte that is not UTF-8", "caf\xe9"},
		{"a truncated sequence", "caf\xc3"},
		{"an encoded surrogate", "\xed\xa0\x80"},
		{"an escaped high surrogate alone", `\ud800`},
		{"an escaped low surrogate alone", `x\udc00y`},
		{"an escaped high surrogate before a letter", `\ud83dA`},
	}
	for _, route := range bodyRoutes {
		for _, tt := range bad {
			t.Run(route.method+" "+route.path+" "+tt.name, func(t *testing.T) {
				resp, got := ts.call(t, route.method, route.path, fmt.Sprintf(route.body, tt.value), nil)
				wantError(t, resp, got, http.StatusBadRequest, "bad_request")
			})
		}
	}
	t.Run("YAML", func(t *testing.T) {
		body := "rules:\n  - {name: a, kind: flow, resource: \"caf\xe9\", threshold: 5}\n"
		resp, got := ts.call(t, http.MethodPost, applyPath+"?dryRun=true", body, reqHeader{"Content-Type": "application/yaml"})
		wantError(t, resp, got, http.StatusBadRequest, "bad_request")
	})
	t.Run("import", func(t *testing.T) {
		resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&dryRun=true", "[{\"resource\": \"caf\xe9\", \"threshold\": 1}]", nil)
		wantError(t, resp, got, http.StatusBadRequest, "bad_request")
	})
	t.Run("a whole pair escaped", func(t *testing.T) {
		r := ts.createRule(t, `{"kind": "flow", "resource": "smile \ud83d\ude00 \\ud800", "threshold": 5}`)
		if r.Resource != `smile 😀 \ud800` {
			t.Errorf("resource = %q, want %q", r.Resource, `smile 😀 \ud800`)
		}
	})
}

// TestBodyOfAnotherJSONType checks that JSON of another type where an
// object belongs (an array where the import wants one) is a 422 naming
// the body, as any field of a wrong JSON type, and that a body that is
// not JSON at all stays a 400.
func TestBodyOfAnotherJSONType(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name": "one", "kind": "flow", "resource": "r", "threshold": 5}`)
	for _, route := range bodyRoutes {
		for _, body := range []string{`[]`, `[{}]`, `null`, `"x"`, `1`, `true`, ` [ ] `} {
			t.Run(route.method+" "+route.path+" "+body, func(t *testing.T) {
				resp, got := ts.call(t, route.method, route.path, body, nil)
				e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "body")
				if len(e.Details) != 1 {
					t.Errorf("details = %+v, want one", e.Details)
				}
			})
		}
		for _, body := range []string{``, `{`, `{}}`, `{} {}`, `[] ]`, `nul`, `{"a": 1,}`} {
			t.Run(route.method+" "+route.path+" "+body, func(t *testing.T) {
				resp, got := ts.call(t, route.method, route.path, body, nil)
				wantError(t, resp, got, http.StatusBadRequest, "bad_request")
			})
		}
	}
	yaml := reqHeader{"Content-Type": "application/yaml"}
	for _, tt := range []struct {
		name, path, body string
		header           reqHeader
		wantStatus       int
	}{
		{"an import of an object", importPath + "?format=sentinel&dryRun=true", `{"resource": "r", "threshold": 1}`, nil, 422},
		{"an import of null", importPath + "?format=sentinel&dryRun=true", `null`, nil, 422},
		{"an import of a string", importPath + "?format=sentinel&dryRun=true", `"rules"`, nil, 422},
		{"an import that is not JSON", importPath + "?format=sentinel&dryRun=true", `[{"resource": "r"`, nil, 400},
		{"a YAML list", applyPath + "?dryRun=true", "- rules\n", yaml, 422},
		{"a YAML string", applyPath + "?dryRun=true", "rules\n", yaml, 422},
		{"a YAML document of nothing", applyPath + "?dryRun=true", "---\n", yaml, 422},
		{"YAML that is not YAML", applyPath + "?dryRun=true", "rules: [\n", yaml, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodPost, tt.path, tt.body, tt.header)
			if tt.wantStatus == http.StatusBadRequest {
				wantError(t, resp, got, tt.wantStatus, "bad_request")
				return
			}
			wantError(t, resp, got, tt.wantStatus, "validation_failed", "body")
		})
	}
}

// TestBadFieldNamedOnce checks that a field of the wrong JSON type is
// named once in details, not again as missing.
func TestBadFieldNamedOnce(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	tests := []struct {
		name, path, body string
		want             []FieldError
	}{
		{"login password", "/api/v1/auth/login", `{"username": "x", "password": 123}`,
			[]FieldError{{"password", "must be a string"}}},
		{"login username", "/api/v1/auth/login", `{"username": false, "password": "x"}`,
			[]FieldError{{"username", "must be a string"}}},
		{"token name and role", "/api/v1/tokens", `{"name": 7, "role": ["viewer"]}`,
			[]FieldError{{"name", "must be a string"}, {"role", "must be a string"}}},
		{"rule kind", rulesPath, `{"kind": 1, "resource": "r", "threshold": 5}`,
			[]FieldError{{"kind", "must be a string"}}},
		{"an applied rule's name", applyPath + "?dryRun=true", `{"rules": [{"name": 1, "kind": "flow", "resource": "r", "threshold": 5}]}`,
			[]FieldError{{"rules[0].name", `rule "#0": must be a string`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodPost, tt.path, tt.body, nil)
			mustStatus(t, resp, got, http.StatusUnprocessableEntity)
			if e := decodeEnvelope(t, resp, got); fmt.Sprint(e.Details) != fmt.Sprint(tt.want) {
				t.Errorf("details = %v, want %v", e.Details, tt.want)
			}
		})
	}
}

// TestYAMLStringFieldsTakeNoNumbers checks that a YAML rule file's string
// field refuses a number, true or false, as JSON does, and takes it
// quoted.
func TestYAMLStringFieldsTakeNoNumbers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	yaml := reqHeader{"Content-Type": "application/yaml"}
	tests := []struct {
		name, rule, wantField string
	}{
		{"a number name", `{name: 123, kind: flow, resource: x, threshold: 5}`, "rules[0].name"},
		{"a fraction name", `{name: 1.0, kind: flow, resource: x, threshold: 5}`, "rules[0].name"},
		{"a true name", `{name: true, kind: flow, resource: x, threshold: 5}`, "rules[0].name"},
		{"an octal resource", `{name: a, kind: flow, resource: 0755, threshold: 5}`, "rules[0].resource"},
		{"a number description", `{name: a, kind: flow, resource: x, description: 1e3, threshold: 5}`, "rules[0].description"},
		{"a number origin", `{name: a, kind: authority, resource: x, strategy: allow, origins: [shop, 42]}`, "rules[0].origins[1]"},
		{"a number paramKey", `{name: a, kind: hotspot, resource: x, paramKey: 1, threshold: 5}`, "rules[0].paramKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodPost, applyPath+"?dryRun=true", "rules:\n  - "+tt.rule+"\n", yaml)
			e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", tt.wantField)
			// A rule's own field says how to quote it; an item of a
			// list, that it must be a string.
			want := "must be a string (in YAML, quote it"
			if strings.Contains(tt.wantField, "[1]") {
				want = "must be a string"
			}
			if len(e.Details) != 1 || !strings.Contains(e.Details[0].Message, want) {
				t.Errorf("details = %+v, want one saying %q", e.Details, want)
			}
		})
	}
	body := "rules:\n  - {name: \"123\", kind: flow, resource: '0755', description: \"1e3\", threshold: 1.50}\n"
	resp, got := ts.call(t, http.MethodPost, applyPath, body, yaml)
	mustStatus(t, resp, got, http.StatusOK)
	list := ts.listRules(t, "")
	if len(list.Items) != 1 {
		t.Fatalf("rules = %+v, want one", list.Items)
	}
	if r := list.Items[0]; r.Name != "123" || r.Resource != "0755" || r.Description != "1e3" || *r.Threshold != 1.5 {
		t.Errorf("rule = %+v, want name 123, resource 0755, description 1e3 and threshold 1.5", r)
	}
}

// TestJSONDuplicateKeys: a key twice in a JSON body is a 400 naming it, on
// every route that takes JSON (the scanner itself is tested in server/codec).
func TestJSONDuplicateKeys(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	tests := []struct{ path, body, wantField string }{
		{applyPath + "?dryRun=true", `{"rules":[{"name":"a","kind":"flow","resource":"x","threshold":1,"threshold":2}]}`, "rules[0].threshold"},
		{applyPath + "?dryRun=true", `{"rules":[],"rules":[]}`, "rules"},
		{"/api/v1/rules", `{"kind":"flow","resource":"x","threshold":1,"resource":"y"}`, "resource"},
		{"/api/v1/check", `{"resource":"a","resource":"b"}`, "resource"},
		{"/api/v1/check/batch", `{"checks":[{"resource":"a"},{"resource":"a","count":1,"count":2}]}`, "checks[1].count"},
		{"/api/v1/rules/import?format=sentinel&dryRun=true", `[{"resource":"a","threshold":1,"threshold":2}]`, "[0].threshold"},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.wantField, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodPost, tt.path, tt.body, nil)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400: %s", resp.StatusCode, got)
			}
			if e := decodeEnvelope(t, resp, got); len(e.Details) != 1 || e.Details[0].Field != tt.wantField {
				t.Errorf("details = %+v, want the field %s", e.Details, tt.wantField)
			}
		})
	}
}
