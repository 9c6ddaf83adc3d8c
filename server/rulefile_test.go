package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/codec"
)

func TestYAMLBodies(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	yamlHeader := reqHeader{"Content-Type": "application/yaml"}
	tests := []struct {
		name, body string
		wantStatus int
		wantField  string
		wantNames  []string
	}{
		{"a key twice", "rules:\n  - name: a\n    kind: flow\n    resource: x\n    threshold: 1\n    threshold: 2\n", 400, "rules[0].threshold", nil},
		{"rules twice", "rules: []\nrules: []\n", 400, "rules", nil},
		{"a second document", "rules: []\n---\nrules: []\n", 400, "", nil},
		{"empty", "", 400, "", nil},
		{"an alias of its own anchor", "rules: &r [*r]\n", 400, "", nil},
		{"aliases that expand past the bound", "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" +
			"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nrules: []\n", 400, "", nil},
		{"a key that is a list", "? [a]\n: 1\nrules: []\n", 400, "body", nil},
		{"merge keys", "rules:\n  - &base {name: a, kind: flow, resource: x, threshold: 5}\n  - {<<: *base, name: b, threshold: 7}\n", 200, "", []string{"a", "b"}},
		{"YAML 1.1 booleans are strings", "rules:\n  - {name: on, kind: flow, resource: yes, threshold: 5}\n", 200, "", []string{"on"}},
		{"a string field takes no number", "rules:\n  - {name: 1.0, kind: flow, resource: x, threshold: 5}\n", 422, "rules[0].name", nil},
		{"a null name is not set, as in JSON", "rules:\n  - {name: ~, kind: flow, resource: x, threshold: 5}\n", 422, "rules[0].name", nil},
		{"a number field refuses a string", "rules:\n  - {name: a, kind: flow, resource: x, threshold: .inf}\n", 422, "rules[0].threshold", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodPost, applyPath+"?dryRun=true", tt.body, yamlHeader)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.wantStatus, got)
			}
			if tt.wantStatus != http.StatusOK {
				e := decodeEnvelope(t, resp, got)
				if tt.wantField != "" && (len(e.Details) != 1 || e.Details[0].Field != tt.wantField) {
					t.Errorf("details = %+v, want the field %s", e.Details, tt.wantField)
				}
				return
			}
			var names []string
			for _, c := range decodePlan(t, got).Created {
				names = append(names, c.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.wantNames) {
				t.Errorf("created %v, want %v", names, tt.wantNames)
			}
		})
	}
}

// TestRuleFileErrors checks the 400 or 422 of a body that is no rule
// file names what it is, and that a bad name is reported once, not again as the
// rule's label is read.
func TestRuleFileErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	yamlHeader := reqHeader{"Content-Type": "application/yaml"}
	tests := []struct {
		name, body  string
		header      reqHeader
		wantStatus  int
		wantMessage string
		wantDetails []FieldError
	}{
		{name: "empty YAML", body: "", header: yamlHeader, wantStatus: 400, wantMessage: "a YAML mapping"},
		{name: "YAML of comments only", body: "# nothing\n", header: yamlHeader, wantStatus: 400, wantMessage: "a YAML mapping"},
		{name: "a YAML document of nothing", body: "---\n", header: yamlHeader, wantStatus: 422, wantMessage: "a YAML mapping"},
		{name: "a YAML list", body: "- rules\n", header: yamlHeader, wantStatus: 422, wantMessage: "a YAML mapping"},
		{name: "JSON that is no object", body: "[]", header: reqHeader{"Content-Type": "application/json"}, wantStatus: 422, wantMessage: "JSON object"},
		{name: "a JSON number for the name", body: `{"rules": [{"name": 1, "kind": "flow", "resource": "x", "threshold": 5}]}`,
			header: reqHeader{"Content-Type": "application/json"}, wantStatus: 422,
			wantDetails: []FieldError{{"rules[0].name", `rule "#0": must be a string`}}},
		{name: "a YAML list for the name", body: "rules:\n  - {name: [a], kind: flow, resource: x, threshold: 5}\n", header: yamlHeader, wantStatus: 422,
			wantDetails: []FieldError{{"rules[0].name", `rule "#0": must be a string`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodPost, applyPath+"?dryRun=true", tt.body, tt.header)
			mustStatus(t, resp, got, tt.wantStatus)
			e := decodeEnvelope(t, resp, got)
			if !strings.Contains(e.Message, tt.wantMessage) {
				t.Errorf("message = %q, want it to say %q", e.Message, tt.wantMessage)
			}
			if tt.wantDetails != nil && fmt.Sprint(e.Details) != fmt.Sprint(tt.wantDetails) {
				t.Errorf("details = %v, want %v", e.Details, tt.wantDetails)
			}
		})
	}
}

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
	for data, want := range map[string]string{
		`{"a":1,"\u0061":2}`:               "a",
		`{"x":[{"y":{"z":1,"z":2}}]}`:      "x[0].y.z",
		` [ 1 , { "k" : "v\"" , "k":0 } ]`: "[1].k",
	} {
		if path, dup := codec.DuplicateKey([]byte(data)); !dup || path != want {
			t.Errorf("codec.DuplicateKey(%s) = %q, %v; want %q", data, path, dup, want)
		}
	}
	for _, ok := range []string{`{"a":{"x":1},"b":{"x":1}}`, `[{"x":1},{"x":1}]`, `{"a":[{"x":1,"y":2}]}`, `"x"`, `{`} {
		if path, dup := codec.DuplicateKey([]byte(ok)); dup {
			t.Errorf("codec.DuplicateKey(%s) = %s, want none", ok, path)
		}
	}
}
