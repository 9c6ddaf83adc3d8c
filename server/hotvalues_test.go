package server

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// hotValuesPath is the hot values of resource.
func hotValuesPath(resource, query string) string {
	p := "/api/v1/resources/" + url.PathEscape(resource) + "/hot-values"
	if query != "" {
		p += "?" + query
	}
	return p
}

// getHotValues reads the hot values of resource; it fails the test unless
// they are 200.
func (ts *testServer) getHotValues(t *testing.T, resource, query string) HotValuesAnswer {
	t.Helper()
	resp, body := ts.call(t, http.MethodGet, hotValuesPath(resource, query), nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	return decodeStrict[HotValuesAnswer](t, body)
}

// TestHotValuesRankTheRulesValues: checks with params are ranked per
// hotspot rule by passes and by blocks over the last minute, exactly at
// this traffic, limited by ?limit=, and gone a minute later.
func TestHotValuesRankTheRulesValues(t *testing.T) {
	t.Parallel()
	const resource = "GET:/api/orders"
	ts, clock := newCheckServer(t,
		`{"name":"per-user","kind":"hotspot","resource":"GET:/api/orders","paramKey":"user","threshold":2}`,
		`{"name":"per-key","kind":"hotspot","resource":"GET:/api/orders","paramKey":"key","threshold":1000}`)

	idle := ts.getHotValues(t, resource, "")
	want := HotValuesAnswer{Resource: resource, Rules: []RuleHotValues{
		{Rule: "per-user", ParamKey: "user", ByPass: []HotValue{}, ByBlock: []HotValue{}},
		{Rule: "per-key", ParamKey: "key", ByPass: []HotValue{}, ByBlock: []HotValue{}},
	}}
	if !reflect.DeepEqual(idle, want) {
		t.Fatalf("before any call: %+v\nwant %+v", idle, want)
	}

	// Within one second: alice 7 calls, bob 3, carol 1; each with a key.
	for user, calls := range map[string]int{"alice": 7, "bob": 3, "carol": 1} {
		for i := range calls {
			body := fmt.Sprintf(`{"resource":%q,"params":{"user":%q,"key":"k%d"}}`, resource, user, i%2)
			resp, got := ts.call(t, http.MethodPost, checkPath, body, nil)
			mustStatus(t, resp, got, http.StatusOK)
		}
	}
	clock.Advance(500)
	want.Rules = []RuleHotValues{
		{Rule: "per-user", ParamKey: "user",
			ByPass:  []HotValue{{"alice", 2, 5}, {"bob", 2, 1}, {"carol", 1, 0}},
			ByBlock: []HotValue{{"alice", 2, 5}, {"bob", 2, 1}}},
		// The calls per-user blocked never reached per-key.
		{Rule: "per-key", ParamKey: "key",
			ByPass:  []HotValue{{"k0", 3, 0}, {"k1", 2, 0}},
			ByBlock: []HotValue{}},
	}
	if got := ts.getHotValues(t, resource, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("after the calls: %+v\nwant %+v", got, want)
	}
	top1 := ts.getHotValues(t, resource, "limit=1")
	if got := top1.Rules[0]; !reflect.DeepEqual(got.ByPass, want.Rules[0].ByPass[:1]) || !reflect.DeepEqual(got.ByBlock, want.Rules[0].ByBlock[:1]) {
		t.Errorf("limit=1: %+v", got)
	}

	clock.Advance(70_000)
	want.Rules = []RuleHotValues{
		{Rule: "per-user", ParamKey: "user", ByPass: []HotValue{}, ByBlock: []HotValue{}},
		{Rule: "per-key", ParamKey: "key", ByPass: []HotValue{}, ByBlock: []HotValue{}},
	}
	if got := ts.getHotValues(t, resource, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("70 s later: %+v\nwant %+v", got, want)
	}
}

// TestHotValuesAnswers: a resource without a hotspot rule answers no
// rules, one the engine does not track 404, and a bad limit 400 naming it.
func TestHotValuesAnswers(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t, `{"name":"orders-qps","kind":"flow","resource":"orders","threshold":10}`)
	if got := ts.getHotValues(t, "orders", "limit=100"); got.Resource != "orders" || got.Rules == nil || len(got.Rules) != 0 {
		t.Errorf("a resource without a hotspot rule: %+v, want no rules", got)
	}
	tests := []struct {
		name, resource, query string
		status                int
		code                  string
		fields                []string
	}{
		{"unknown resource", "never-seen", "", http.StatusNotFound, "not_found", nil},
		{"limit 0", "orders", "limit=0", http.StatusBadRequest, "bad_request", []string{"limit"}},
		{"limit 101", "orders", "limit=101", http.StatusBadRequest, "bad_request", []string{"limit"}},
		{"limit not a number", "orders", "limit=ten", http.StatusBadRequest, "bad_request", []string{"limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, hotValuesPath(tt.resource, tt.query), nil, nil)
			wantError(t, resp, body, tt.status, tt.code, tt.fields...)
		})
	}
}

// TestHotValuesSumTheFleet: the hot values of the server's engine and of
// the instances that report them are summed rule by rule, a rule only
// instances run listed after the server's; a report without hot values
// (an older instance) is still accepted; a ranking beyond its bound is
// refused naming the field; and an instance's values go 3 s after its
// last report.
func TestHotValuesSumTheFleet(t *testing.T) {
	t.Parallel()
	const resource = "GET:/api/orders"
	ts, clock := newCheckServer(t, `{"name":"per-user","kind":"hotspot","resource":"GET:/api/orders","paramKey":"user","threshold":1000}`)
	for range 3 {
		resp, got := ts.call(t, http.MethodPost, checkPath, `{"resource":"GET:/api/orders","params":{"user":"alice"}}`, nil)
		mustStatus(t, resp, got, http.StatusOK)
	}
	token := ts.instanceToken(t)
	report := func(id, hot string) (*http.Response, []byte) {
		body := fmt.Sprintf(`{"instance":{"id":%q}`, id)
		if hot != "" {
			body += `,"hotValues":` + hot
		}
		return ts.report(t, token, body+"}")
	}
	for id, hot := range map[string]string{
		"shop-1": `[{"resource":"GET:/api/orders","rule":"per-user","paramKey":"user","approximate":false,
			"byPass":[{"value":"alice","pass":5,"block":0},{"value":"bob","pass":4,"block":2}],
			"byBlock":[{"value":"bob","pass":4,"block":2}]},
			{"resource":"GET:/api/orders","rule":"per-tenant","paramKey":"tenant","byPass":[{"value":"acme","pass":9}]}]`,
		"shop-2": "",
		"shop-3": `[{"resource":"GET:/api/orders","rule":"per-user","paramKey":"user","byPass":[{"value":"bob","pass":1}],"byBlock":[]}]`,
	} {
		if resp, body := report(id, hot); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("report of %s: %d %s", id, resp.StatusCode, body)
		}
	}
	want := HotValuesAnswer{Resource: resource, Rules: []RuleHotValues{
		{Rule: "per-user", ParamKey: "user",
			ByPass:  []HotValue{{"alice", 8, 0}, {"bob", 5, 2}},
			ByBlock: []HotValue{{"bob", 5, 2}}},
		{Rule: "per-tenant", ParamKey: "tenant", ByPass: []HotValue{{"acme", 9, 0}}, ByBlock: []HotValue{}},
	}}
	if got := ts.getHotValues(t, resource, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("summed: %+v\nwant %+v", got, want)
	}

	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf(`{"value":"v%d","pass":1}`, i)
	}
	for hot, field := range map[string]string{
		`[{"resource":"r","rule":"x","byPass":[` + strings.Join(many, ",") + `]}]`:               "hotValues[0].byPass",
		`[{"resource":"r","rule":"x","byBlock":[{"value":"` + strings.Repeat("v", 257) + `"}]}]`: "hotValues[0].byBlock[0].value",
		`[{"resource":"r","rule":"x"},{"resource":"r","rule":"x"}]`:                              "hotValues[1].rule",
		`[{"resource":"r","rule":""}]`:                                                           "hotValues[0].rule",
	} {
		resp, body := report("shop-4", hot)
		wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", field)
	}

	clock.Advance(4000)
	want.Rules = []RuleHotValues{{Rule: "per-user", ParamKey: "user", ByPass: []HotValue{{"alice", 3, 0}}, ByBlock: []HotValue{}}}
	if got := ts.getHotValues(t, resource, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("4 s later, the server's alone: %+v\nwant %+v", got, want)
	}
}
