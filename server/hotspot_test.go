package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// hotspotRule is the JSON of a qps hotspot rule with its defaults, then
// set, less the fields named in drop.
func hotspotRule(set map[string]any, drop ...string) map[string]any {
	m := map[string]any{
		"kind": "hotspot", "enabled": true, "mode": "enforce",
		"metric": "qps", "statIntervalMs": 1000.0, "controlBehavior": "reject", "burstCount": 0.0,
		"specificItems": map[string]any{}, "paramsMaxCapacity": 100000.0,
	}
	for k, v := range set {
		m[k] = v
	}
	for _, k := range drop {
		delete(m, k)
	}
	return m
}

// hotspotByName is the engine's hotspot rule called name.
func (ts *testServer) hotspotByName(name string) (engine.HotspotRule, bool) {
	for _, r := range ts.Server.engine.HotspotRules() {
		if r.Name == name {
			return r, true
		}
	}
	return engine.HotspotRule{}, false
}

// TestHotspotRuleWrites: a hotspot rule is created with its defaults
// filled in, read, replaced and patched like any rule, listed by its
// kind, kept in its history, and the engine holds it as stored.
func TestHotspotRuleWrites(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	created := ts.createRule(t, `{"name":"per-user","kind":"hotspot","resource":"GET:/api/orders","paramKey":"header:X-User","threshold":10,"specificItems":{"vip":100,"bot":0}}`)
	ts.createRule(t, ordersRule)

	_, body := ts.call(t, http.MethodGet, ruleURL(created.ID), nil, nil)
	wantContent(t, jsonObject(t, body), hotspotRule(map[string]any{
		"name": "per-user", "resource": "GET:/api/orders", "paramKey": "header:X-User", "threshold": 10.0,
		"specificItems": map[string]any{"vip": 100.0, "bot": 0.0},
	}))
	if r, ok := ts.hotspotByName("per-user"); !ok || r.ParamKey != "header:X-User" || r.Threshold != 10 || r.SpecificItems["vip"] != 100 {
		t.Errorf("the engine's rule = %+v, %v", r, ok)
	}
	if got := ruleNames(ts.listRules(t, "kind=hotspot").Items); strings.Join(got, ",") != "per-user" {
		t.Errorf("kind=hotspot lists %q, want per-user", got)
	}

	resp, body := ts.call(t, http.MethodPut, ruleURL(created.ID),
		`{"kind":"hotspot","resource":"GET:/api/orders","paramKey":"ip","metric":"concurrency","threshold":3}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	wantContent(t, jsonObject(t, body), hotspotRule(map[string]any{
		"name": "per-user", "resource": "GET:/api/orders", "paramKey": "ip", "metric": "concurrency", "threshold": 3.0,
	}, "statIntervalMs", "controlBehavior", "burstCount"))

	resp, body = ts.call(t, http.MethodPatch, ruleURL(created.ID), `{"metric":"qps","controlBehavior":"throttling","maxQueueingTimeMs":200,"specificItems":{"vip":9}}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	wantContent(t, jsonObject(t, body), hotspotRule(map[string]any{
		"name": "per-user", "resource": "GET:/api/orders", "paramKey": "ip", "threshold": 3.0,
		"controlBehavior": "throttling", "maxQueueingTimeMs": 200.0, "specificItems": map[string]any{"vip": 9.0},
	}, "burstCount"))
	if r, ok := ts.hotspotByName("per-user"); !ok || r.ControlBehavior != engine.BehaviorThrottling || r.MaxQueueingTimeMs != 200 || r.SpecificItems["vip"] != 9 {
		t.Errorf("the engine's rule after the patch = %+v, %v", r, ok)
	}

	resp, body = ts.call(t, http.MethodGet, ruleURL(created.ID)+"/revisions", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	revs := decodeStrict[RevisionList](t, body)
	if revs.Total != 3 || revs.Items[2].Rule.ParamKey == nil || *revs.Items[2].Rule.ParamKey != "header:X-User" {
		t.Fatalf("revisions: %s", body)
	}

	resp, body = ts.call(t, http.MethodPost, ruleURL(created.ID)+"/rollback?toVersion=1", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if r, ok := ts.hotspotByName("per-user"); !ok || r.ParamKey != "header:X-User" || r.SpecificItems["bot"] != 0 || len(r.SpecificItems) != 2 {
		t.Errorf("the engine's rule after the rollback = %+v, %v", r, ok)
	}

	resp, body = ts.call(t, http.MethodDelete, ruleURL(created.ID), nil, nil)
	mustStatus(t, resp, body, http.StatusNoContent)
	if _, ok := ts.hotspotByName("per-user"); ok {
		t.Error("the engine holds the deleted rule still")
	}
}

func TestHotspotRuleRejects(t *testing.T) {
	t.Parallel()
	const base = `"kind":"hotspot","resource":"r","paramKey":"user","threshold":1`
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf(`"v%d":1`, i)
	}
	tests := []struct {
		name       string
		body       string
		wantFields []string
	}{
		{"missing paramKey", `{"kind":"hotspot","resource":"r","threshold":1}`, []string{"paramKey"}},
		{"empty paramKey", `{"kind":"hotspot","resource":"r","threshold":1,"paramKey":""}`, []string{"paramKey"}},
		{"paramKey of 65 characters", `{"kind":"hotspot","resource":"r","threshold":1,"paramKey":"` + strings.Repeat("k", 65) + `"}`, []string{"paramKey"}},
		{"paramKey a number", `{"kind":"hotspot","resource":"r","threshold":1,"paramKey":7}`, []string{"paramKey"}},
		{"missing threshold", `{"kind":"hotspot","resource":"r","paramKey":"user"}`, []string{"threshold"}},
		{"negative threshold", `{"kind":"hotspot","resource":"r","paramKey":"user","threshold":-1}`, []string{"threshold"}},
		{"fractional concurrency threshold", `{"kind":"hotspot","resource":"r","paramKey":"user","metric":"concurrency","threshold":1.5}`, []string{"threshold"}},
		{"unknown metric", `{` + base + `,"metric":"rps"}`, []string{"metric"}},
		{"statIntervalMs below 100", `{` + base + `,"statIntervalMs":99}`, []string{"statIntervalMs"}},
		{"statIntervalMs above a day", `{` + base + `,"statIntervalMs":86400001}`, []string{"statIntervalMs"}},
		{"statIntervalMs with concurrency", `{` + base + `,"metric":"concurrency","statIntervalMs":1000}`, []string{"statIntervalMs"}},
		{"unknown controlBehavior", `{` + base + `,"controlBehavior":"queue"}`, []string{"controlBehavior"}},
		{"controlBehavior with concurrency", `{` + base + `,"metric":"concurrency","controlBehavior":"reject"}`, []string{"controlBehavior"}},
		{"negative burstCount", `{` + base + `,"burstCount":-1}`, []string{"burstCount"}},
		{"burstCount when throttling", `{` + base + `,"controlBehavior":"throttling","burstCount":2}`, []string{"burstCount"}},
		{"maxQueueingTimeMs above 60000", `{` + base + `,"controlBehavior":"throttling","maxQueueingTimeMs":60001}`, []string{"maxQueueingTimeMs"}},
		{"maxQueueingTimeMs when rejecting", `{` + base + `,"maxQueueingTimeMs":10}`, []string{"maxQueueingTimeMs"}},
		{"specificItems a list", `{` + base + `,"specificItems":[{"vip":1}]}`, []string{"specificItems"}},
		{"specificItems threshold a string", `{` + base + `,"specificItems":{"vip":"1"}}`, []string{"specificItems"}},
		{"specificItems negative threshold", `{` + base + `,"specificItems":{"vip":-1}}`, []string{"specificItems"}},
		{"specificItems empty value", `{` + base + `,"specificItems":{"":1}}`, []string{"specificItems"}},
		{"specificItems of 1001 entries", `{` + base + `,"specificItems":{` + strings.Join(many, ",") + `}}`, []string{"specificItems"}},
		{"negative paramsMaxCapacity", `{` + base + `,"paramsMaxCapacity":-1}`, []string{"paramsMaxCapacity"}},
		{"paramsMaxCapacity above 10000000", `{` + base + `,"paramsMaxCapacity":10000001}`, []string{"paramsMaxCapacity"}},
		{"a field of authority rules", `{` + base + `,"origins":["a"]}`, []string{"origins"}},
		{"a field of flow rules", `{` + base + `,"limitApp":"a"}`, []string{"limitApp"}},
		{"every bad field", `{"kind":"hotspot","resource":"r","threshold":-1,"burstCount":-2,"paramsMaxCapacity":-1}`, []string{"paramKey", "threshold", "burstCount", "paramsMaxCapacity"}},
	}
	ts := startServer(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodPost, rulesPath, tt.body, nil)
			wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", tt.wantFields...)
		})
	}
	ts.wantNoRules(t)
	if got := ts.Server.engine.HotspotRules(); len(got) != 0 {
		t.Errorf("the engine holds %+v", got)
	}
}

// TestHotspotLimitsEachValue: through POST /check, a hotspot rule counts
// each value of its parameter apart; a value of specificItems has its own
// threshold; a call without the parameter is not limited by the rule.
func TestHotspotLimitsEachValue(t *testing.T) {
	t.Parallel()
	ts, clock := newCheckServer(t,
		`{"name":"per-user","kind":"hotspot","resource":"orders","paramKey":"user","threshold":2,"specificItems":{"vip":3,"banned":0}}`)
	// Each answer tells the value's limit and what remains of it.
	limit := func(threshold, remaining int) string {
		return fmt.Sprintf(`,"limit":%d,"intervalMs":1000,"remaining":%d,"resetMs":1000}`, threshold, remaining)
	}
	passed := func(threshold, remaining int) string {
		return `{"allowed":true,"waitMs":0` + limit(threshold, remaining)
	}
	blocked := func(threshold int) string {
		return `{"allowed":false,"waitMs":0,"reason":"hotspot","rule":"per-user"` + limit(threshold, 0)
	}
	check := func(params string) exchange {
		return exchange{checkPath, `{"resource":"orders","params":` + params + `}`, 200, ""}
	}
	want := func(x exchange, body string) exchange { x.wantBody = body; return x }
	ts.run(t, []exchange{
		want(check(`{"user":"a"}`), passed(2, 1)),
		want(check(`{"user":"a","other":"x"}`), passed(2, 0)),
		want(check(`{"user":"a"}`), blocked(2)),
		want(check(`{"user":"b"}`), passed(2, 1)),
		want(check(`{"user":"b"}`), passed(2, 0)),
		want(check(`{"user":"b"}`), blocked(2)),
		want(check(`{"user":"vip"}`), passed(3, 2)),
		want(check(`{"user":"vip"}`), passed(3, 1)),
		want(check(`{"user":"vip"}`), passed(3, 0)),
		want(check(`{"user":"vip"}`), blocked(3)),
		want(check(`{"user":"banned"}`), blocked(0)),
		want(check(`{"other":"a"}`), allowed),
		want(check(`{}`), allowed),
		{checkPath, `{"resource":"orders"}`, 200, allowed},
		{checkPath, `{"resource":"orders","count":2,"params":{"user":"c"}}`, 200, passed(2, 0)},
		{checkPath, `{"resource":"orders","params":{"user":"c"}}`, 200, blocked(2)},
	})

	clock.Advance(1000)
	ts.run(t, []exchange{want(check(`{"user":"a"}`), passed(2, 1))})

	t.Run("in a batch", func(t *testing.T) {
		clock.Advance(1000)
		resp, body := ts.call(t, http.MethodPost, batchPath, `{"checks":[
			{"resource":"orders","params":{"user":"a"}},
			{"resource":"orders","params":{"user":"a"},"origin":"app-a","prioritized":true},
			{"resource":"orders","params":{"user":"a"}},
			{"resource":"orders","params":{"user":"b"}}]}`, nil)
		mustStatus(t, resp, body, http.StatusOK)
		if got, want := string(body), `{"results":[`+passed(2, 1)+`,`+passed(2, 0)+`,`+blocked(2)+`,`+passed(2, 1)+`]}`; got != want {
			t.Errorf("batch = %s, want %s", got, want)
		}
	})
}

// TestHotspotRulesOfAResource: the engine's verdict on a resource's rules
// together (one concurrency hotspot rule per resource) names the field as
// the request has it: the rule's own in a create, rules[i].field with the
// rule's name in an apply.
func TestHotspotRulesOfAResource(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	const inflight = `"kind":"hotspot","resource":"r","metric":"concurrency","threshold":1`
	ts.createRule(t, `{"name":"by-a",`+inflight+`,"paramKey":"a"}`)

	resp, body := ts.call(t, http.MethodPost, rulesPath, `{"name":"by-b",`+inflight+`,"paramKey":"b"}`, nil)
	wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", "resource")

	resp, body = ts.call(t, http.MethodPost, applyPath, applyRules(
		`"name":"by-a",`+inflight+`,"paramKey":"a"`,
		`"name":"by-c",`+inflight+`,"paramKey":"c"`), nil)
	e := wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", "rules[1].resource")
	if len(e.Details) != 1 || !strings.Contains(e.Details[0].Message, `"by-c"`) {
		t.Errorf("details %+v do not name the rule by-c", e.Details)
	}
	if got := ruleNames(ts.listRules(t, "").Items); strings.Join(got, ",") != "by-a" {
		t.Errorf("stored rules %q, want by-a", got)
	}
}
