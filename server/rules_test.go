package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/servertest"
)

const rulesPath = "/api/v1/rules"

// reqHeader holds the extra headers of one request.
type reqHeader map[string]string

// request sends one request and reads its answer. It takes no testing.T so
// that goroutines may call it. A string or []byte body is sent as it is, any
// other non-nil body as JSON; a body goes with Content-Type
// application/json unless header names another.
func (ts *testServer) request(ctx context.Context, method, path string, body any, header reqHeader) (*http.Response, []byte, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, ts.URL+path, r)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp, got, err
}

// call is request for the test goroutine: it fails the test on a transport
// error.
func (ts *testServer) call(t *testing.T, method, path string, body any, header reqHeader) (*http.Response, []byte) {
	t.Helper()
	resp, got, err := ts.request(t.Context(), method, path, body, header)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, got
}

// mustStatus fails the test now unless resp has status.
func mustStatus(t *testing.T, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status = %d, want %d\n%s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, body)
	}
}

// decodeStrict decodes data into a T, refusing fields T does not have.
func decodeStrict[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %T: %v\n%s", v, err, data)
	}
	return v
}

// jsonObject decodes data as a JSON object.
func jsonObject(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		t.Fatalf("not a JSON object: %v\n%s", err, data)
	}
	return m
}

// ruleContent is a rule's JSON without the fields the server keeps, and
// without an empty description, which may or may not be written.
func ruleContent(m map[string]any) map[string]any {
	c := maps.Clone(m)
	for _, k := range []string{"id", "version", "createdAt", "updatedAt"} {
		delete(c, k)
	}
	if c["description"] == "" {
		delete(c, "description")
	}
	return c
}

// flowRule is the JSON of a flow rule with its defaults, then set, less
// the fields named in drop.
func flowRule(set map[string]any, drop ...string) map[string]any {
	m := map[string]any{
		"kind": "flow", "enabled": true, "mode": "enforce",
		"metric": "qps", "statIntervalMs": 1000.0, "controlBehavior": "reject",
		"tokenCalculateStrategy": "direct", "relationStrategy": "current", "limitApp": "default", "scope": "local",
	}
	maps.Copy(m, set)
	for _, k := range drop {
		delete(m, k)
	}
	return m
}

// wantContent fails the test if the rule JSON got does not hold exactly
// want's content.
func wantContent(t *testing.T, got, want map[string]any) {
	t.Helper()
	g, w := ruleContent(got), ruleContent(want)
	if reflect.DeepEqual(g, w) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if gv, ok := g[k]; !ok {
			t.Errorf("field %s is absent, want %v", k, w[k])
		} else if !reflect.DeepEqual(gv, w[k]) {
			t.Errorf("field %s = %#v, want %#v", k, gv, w[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if _, ok := w[k]; !ok {
			t.Errorf("field %s = %#v, want it absent", k, g[k])
		}
	}
}

// wantError checks an error answer: status, envelope code and exactly the
// set of fields its details name.
func wantError(t *testing.T, resp *http.Response, body []byte, status int, code string, fields ...string) ErrorBody {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status = %d, want %d\n%s", resp.StatusCode, status, body)
	}
	if resp.StatusCode < http.StatusBadRequest {
		return ErrorBody{}
	}
	e := decodeEnvelope(t, resp, body)
	if e.Code != code {
		t.Errorf("code = %q, want %q", e.Code, code)
	}
	var got []string
	for _, d := range e.Details {
		if !slices.Contains(got, d.Field) {
			got = append(got, d.Field)
		}
	}
	slices.Sort(got)
	want := slices.Clone(fields)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("details name %q, want %q\n%s", got, want, body)
	}
	return e
}

// createRule creates a rule and returns it as answered.
func (ts *testServer) createRule(t *testing.T, body any) rules.APIRule {
	t.Helper()
	resp, got := ts.call(t, http.MethodPost, rulesPath, body, nil)
	mustStatus(t, resp, got, http.StatusCreated)
	return decodeStrict[rules.APIRule](t, got)
}

// getRule reads rule id and its ETag; it fails the test unless it is 200.
func (ts *testServer) getRule(t *testing.T, id int64) (rules.APIRule, string) {
	t.Helper()
	resp, got := ts.call(t, http.MethodGet, ruleURL(id), nil, nil)
	mustStatus(t, resp, got, http.StatusOK)
	return decodeStrict[rules.APIRule](t, got), resp.Header.Get("ETag")
}

// listRules answers GET /rules?query; it fails the test unless it is 200.
func (ts *testServer) listRules(t *testing.T, query string) RuleList {
	t.Helper()
	resp, got := ts.call(t, http.MethodGet, rulesPath+"?"+query, nil, nil)
	mustStatus(t, resp, got, http.StatusOK)
	if !bytes.Contains(got, []byte(`"items":[`)) {
		t.Errorf("items is not an array: %s", got)
	}
	return decodeStrict[RuleList](t, got)
}

// ruleIDByName finds a stored rule's id by its exact name.
func (ts *testServer) ruleIDByName(t *testing.T, name string) int64 {
	t.Helper()
	for _, r := range ts.listRules(t, "pageSize=500").Items {
		if r.Name == name {
			return r.ID
		}
	}
	t.Fatalf("no stored rule is named %q", name)
	return 0
}

func ruleURL(id int64) string { return rulesPath + "/" + strconv.FormatInt(id, 10) }

func ruleNames(list []rules.APIRule) []string {
	names := make([]string, 0, len(list))
	for _, r := range list {
		names = append(names, r.Name)
	}
	return names
}

// loadedThresholds is the engine's flow rules as name → threshold.
func (ts *testServer) loadedThresholds() map[string]float64 {
	out := map[string]float64{}
	for _, r := range ts.Server.engine.FlowRules() {
		out[r.Name] = r.Threshold
	}
	return out
}

// wantLoaded checks that the engine holds exactly the rules of want, by
// name and threshold, and that these are exactly the enabled stored rules.
func (ts *testServer) wantLoaded(t *testing.T, want map[string]float64) {
	t.Helper()
	if got := ts.loadedThresholds(); !maps.Equal(got, want) {
		t.Errorf("engine rules = %v, want %v", got, want)
	}
	stored := map[string]float64{}
	for _, r := range ts.listRules(t, "enabled=true&pageSize=500").Items {
		stored[r.Name] = *r.Threshold
	}
	if !maps.Equal(stored, want) {
		t.Errorf("enabled stored rules = %v, want %v", stored, want)
	}
}

// wantNoRules checks that nothing is stored and nothing loaded.
func (ts *testServer) wantNoRules(t *testing.T) {
	t.Helper()
	if list := ts.listRules(t, ""); list.Total != 0 || len(list.Items) != 0 {
		t.Errorf("rules stored: total %d, %v", list.Total, ruleNames(list.Items))
	}
	if got := ts.Server.engine.FlowRules(); len(got) != 0 {
		t.Errorf("engine rules = %+v, want none", got)
	}
}

// wantUTC checks that a JSON time is RFC 3339 in UTC.
func wantUTC(t *testing.T, field string, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !strings.HasSuffix(s, "Z") {
		t.Errorf("%s = %#v, want an RFC 3339 time in UTC", field, v)
	}
	return tm
}

// refusal groups a refused request's subtest by its status: "NotFound: "
// for 404, "Invalid: " for the others.
func refusal(status int) string {
	if status == http.StatusNotFound {
		return "NotFound: "
	}
	return "Invalid: "
}

// TestCreateRule is POST /api/v1/rules: what it answers, and what it
// refuses (the rule domain's own tests, server/rules, hold what a write
// does beyond the answer).
func TestCreateRule(t *testing.T) {
	t.Parallel()
	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			body string
			want map[string]any
		}{
			{
				name: "defaults fill the fields that apply and the others are absent",
				body: `{"name":"orders-qps","kind":"flow","resource":"GET:/api/orders","threshold":100}`,
				want: flowRule(map[string]any{"name": "orders-qps", "resource": "GET:/api/orders", "threshold": 100.0}),
			},
			{
				name: "concurrency rule has no statIntervalMs",
				body: `{"name":"orders-inflight","kind":"flow","resource":"GET:/api/orders","metric":"concurrency","threshold":5}`,
				want: flowRule(map[string]any{"name": "orders-inflight", "resource": "GET:/api/orders", "metric": "concurrency", "threshold": 5.0}, "statIntervalMs"),
			},
			{
				name: "throttling shows maxQueueingTimeMs",
				body: `{"name":"paced","kind":"flow","resource":"r","threshold":10,"statIntervalMs":2000,"controlBehavior":"throttling","maxQueueingTimeMs":500}`,
				want: flowRule(map[string]any{"name": "paced", "resource": "r", "threshold": 10.0, "statIntervalMs": 2000.0, "controlBehavior": "throttling", "maxQueueingTimeMs": 500.0}),
			},
			{
				name: "warmUp gets the default cold factor",
				body: `{"name":"warm","kind":"flow","resource":"r","threshold":10,"tokenCalculateStrategy":"warmUp","warmUpPeriodSec":10}`,
				want: flowRule(map[string]any{"name": "warm", "resource": "r", "threshold": 10.0, "tokenCalculateStrategy": "warmUp", "warmUpPeriodSec": 10.0, "warmUpColdFactor": 3.0}),
			},
			{
				name: "associated shows refResource",
				body: `{"name":"by-stock","kind":"flow","resource":"POST:/api/checkout","threshold":20,"relationStrategy":"associated","refResource":"GET:/api/stock"}`,
				want: flowRule(map[string]any{"name": "by-stock", "resource": "POST:/api/checkout", "threshold": 20.0, "relationStrategy": "associated", "refResource": "GET:/api/stock"}),
			},
			{
				name: "envelope fields are kept",
				body: `{"name":"shadowed","kind":"flow","resource":"r","threshold":0.5,"enabled":false,"mode":"shadow","description":"Black Friday cap"}`,
				want: flowRule(map[string]any{"name": "shadowed", "resource": "r", "threshold": 0.5, "enabled": false, "mode": "shadow", "description": "Black Friday cap"}),
			},
			{
				name: "zero values of fields that do not apply are accepted",
				body: `{"name":"zeros","kind":"flow","resource":"r","threshold":1,"maxQueueingTimeMs":0,"warmUpPeriodSec":0,"refResource":""}`,
				want: flowRule(map[string]any{"name": "zeros", "resource": "r", "threshold": 1.0}),
			},
			{
				name: "lengths are counted in characters",
				body: `{"name":"long-text","kind":"flow","resource":"` + strings.Repeat("й", 256) + `","threshold":1,"description":"` + strings.Repeat("é", 1024) + `"}`,
				want: flowRule(map[string]any{"name": "long-text", "resource": strings.Repeat("й", 256), "threshold": 1.0, "description": strings.Repeat("é", 1024)}),
			},
		}
		ts := startServer(t, nil, nil)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, body := ts.call(t, http.MethodPost, rulesPath, tt.body, nil)

				mustStatus(t, resp, body, http.StatusCreated)
				got := jsonObject(t, body)
				wantContent(t, got, tt.want)
				r := decodeStrict[rules.APIRule](t, body)
				if r.ID <= 0 || r.Version != 1 {
					t.Errorf("id = %d, version = %d; want a positive id and version 1", r.ID, r.Version)
				}
				if etag := resp.Header.Get("ETag"); etag != `"1"` {
					t.Errorf(`ETag = %q, want "1"`, etag)
				}
				created := wantUTC(t, "createdAt", got["createdAt"])
				if updated := wantUTC(t, "updatedAt", got["updatedAt"]); !updated.Equal(created) {
					t.Errorf("updatedAt = %v, want createdAt %v on a new rule", updated, created)
				}
				loc := resp.Header.Get("Location")
				if !strings.HasSuffix(loc, ruleURL(r.ID)) {
					t.Fatalf("Location = %q, want it to end in %s", loc, ruleURL(r.ID))
				}
				resp, again := ts.call(t, http.MethodGet, strings.TrimPrefix(loc, ts.URL), nil, nil)
				mustStatus(t, resp, again, http.StatusOK)
				if !reflect.DeepEqual(jsonObject(t, again), got) {
					t.Errorf("GET Location = %s\nwant what create answered: %s", again, body)
				}
			})
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name       string
			body       string
			wantStatus int
			wantFields []string
		}{
			{name: "not JSON", body: `kind: flow`, wantStatus: http.StatusBadRequest},
			{name: "a JSON array", body: `[{"kind":"flow","resource":"r","threshold":1}]`, wantStatus: 422, wantFields: []string{"body"}},
			{name: "empty body", body: ``, wantStatus: http.StatusBadRequest},
			{name: "JSON null", body: `null`, wantStatus: 422, wantFields: []string{"body"}},
			{name: "a JSON string", body: `"rule"`, wantStatus: 422, wantFields: []string{"body"}},
			{name: "two objects", body: `{"kind":"flow","resource":"r","threshold":1}{}`, wantStatus: http.StatusBadRequest},
			{name: "truncated JSON", body: `{"kind":"flow","resource":"r",`, wantStatus: http.StatusBadRequest},

			{name: "unknown field", body: `{"kind":"flow","resource":"r","threshold":1,"colour":"red"}`, wantStatus: 422, wantFields: []string{"colour"}},
			{name: "cluster scope without a shared count", body: `{"kind":"flow","resource":"r","threshold":1,"scope":"cluster"}`, wantStatus: 422, wantFields: []string{"scope"}},
			{name: "unknown scope", body: `{"kind":"flow","resource":"r","threshold":1,"scope":"global"}`, wantStatus: 422, wantFields: []string{"scope"}},
			{name: "scope on a circuit breaker", body: `{"kind":"circuitBreaker","resource":"r","strategy":"errorCount","threshold":1,"retryTimeoutMs":1,"scope":"local"}`, wantStatus: 422, wantFields: []string{"scope"}},
			{name: "typo of a field", body: `{"kind":"flow","resource":"r","thresold":1}`, wantStatus: 422, wantFields: []string{"thresold", "threshold"}},
			{name: "threshold is a string", body: `{"kind":"flow","resource":"r","threshold":"1"}`, wantStatus: 422, wantFields: []string{"threshold"}},
			{name: "enabled is a string", body: `{"kind":"flow","resource":"r","threshold":1,"enabled":"yes"}`, wantStatus: 422, wantFields: []string{"enabled"}},
			{name: "statIntervalMs is a string", body: `{"kind":"flow","resource":"r","threshold":1,"statIntervalMs":"1000"}`, wantStatus: 422, wantFields: []string{"statIntervalMs"}},
			{name: "statIntervalMs is fractional", body: `{"kind":"flow","resource":"r","threshold":1,"statIntervalMs":1.5}`, wantStatus: 422, wantFields: []string{"statIntervalMs"}},
			{name: "description is a number", body: `{"kind":"flow","resource":"r","threshold":1,"description":7}`, wantStatus: 422, wantFields: []string{"description"}},
			{name: "mode is an object", body: `{"kind":"flow","resource":"r","threshold":1,"mode":{}}`, wantStatus: 422, wantFields: []string{"mode"}},
			{name: "missing kind", body: `{"resource":"r","threshold":1}`, wantStatus: 422, wantFields: []string{"kind"}},
			{name: "unknown kind", body: `{"kind":"isolation","resource":"r","threshold":1}`, wantStatus: 422, wantFields: []string{"kind"}},
			{name: "kind is a number", body: `{"kind":1,"resource":"r","threshold":1}`, wantStatus: 422, wantFields: []string{"kind"}},
			{name: "missing resource", body: `{"kind":"flow","threshold":1}`, wantStatus: 422, wantFields: []string{"resource"}},
			{name: "missing threshold", body: `{"kind":"flow","resource":"r"}`, wantStatus: 422, wantFields: []string{"threshold"}},
			{name: "empty object names kind and resource", body: `{}`, wantStatus: 422, wantFields: []string{"kind", "resource"}},
			{name: "bad envelope fields are named without a kind", body: `{"name":"Not A Name","resource":""}`, wantStatus: 422, wantFields: []string{"kind", "name", "resource"}},

			{name: "negative threshold", body: `{"kind":"flow","resource":"r","threshold":-1}`, wantStatus: 422, wantFields: []string{"threshold"}},
			{name: "fractional concurrency threshold", body: `{"kind":"flow","resource":"r","metric":"concurrency","threshold":1.5}`, wantStatus: 422, wantFields: []string{"threshold"}},
			{name: "statIntervalMs below 100", body: `{"kind":"flow","resource":"r","threshold":1,"statIntervalMs":99}`, wantStatus: 422, wantFields: []string{"statIntervalMs"}},
			{name: "statIntervalMs above a day", body: `{"kind":"flow","resource":"r","threshold":1,"statIntervalMs":86400001}`, wantStatus: 422, wantFields: []string{"statIntervalMs"}},
			{name: "maxQueueingTimeMs above 60000", body: `{"kind":"flow","resource":"r","threshold":1,"controlBehavior":"throttling","maxQueueingTimeMs":60001}`, wantStatus: 422, wantFields: []string{"maxQueueingTimeMs"}},
			{name: "warmUpColdFactor of 1", body: `{"kind":"flow","resource":"r","threshold":1,"tokenCalculateStrategy":"warmUp","warmUpPeriodSec":5,"warmUpColdFactor":1}`, wantStatus: 422, wantFields: []string{"warmUpColdFactor"}},
			{name: "warmUp without warmUpPeriodSec", body: `{"kind":"flow","resource":"r","threshold":1,"tokenCalculateStrategy":"warmUp"}`, wantStatus: 422, wantFields: []string{"warmUpPeriodSec"}},
			{name: "associated without refResource", body: `{"kind":"flow","resource":"r","threshold":1,"relationStrategy":"associated"}`, wantStatus: 422, wantFields: []string{"refResource"}},
			{name: "description of 1025 characters", body: `{"kind":"flow","resource":"r","threshold":1,"description":"` + strings.Repeat("é", 1025) + `"}`, wantStatus: 422, wantFields: []string{"description"}},
			{name: "resource of 257 characters", body: `{"kind":"flow","resource":"` + strings.Repeat("й", 257) + `","threshold":1}`, wantStatus: 422, wantFields: []string{"resource"}},
			{name: "resource with BEL", body: `{"kind":"flow","resource":"GET:/api\u0007","threshold":1}`, wantStatus: 422, wantFields: []string{"resource"}},
			{name: "resource with a C1 control character", body: `{"kind":"flow","resource":"GET:/api\u0085","threshold":1}`, wantStatus: 422, wantFields: []string{"resource"}},
			{name: "name with capitals and spaces", body: `{"name":"Orders QPS","kind":"flow","resource":"r","threshold":1}`, wantStatus: 422, wantFields: []string{"name"}},
			{name: "name of 129 characters", body: `{"name":"` + strings.Repeat("a", 129) + `","kind":"flow","resource":"r","threshold":1}`, wantStatus: 422, wantFields: []string{"name"}},

			{name: "maxQueueingTimeMs on reject", body: `{"kind":"flow","resource":"r","threshold":1,"maxQueueingTimeMs":100}`, wantStatus: 422, wantFields: []string{"maxQueueingTimeMs"}},
			{name: "warmUpPeriodSec with direct", body: `{"kind":"flow","resource":"r","threshold":1,"warmUpPeriodSec":10}`, wantStatus: 422, wantFields: []string{"warmUpPeriodSec"}},
			{name: "warmUpColdFactor with direct", body: `{"kind":"flow","resource":"r","threshold":1,"warmUpColdFactor":3}`, wantStatus: 422, wantFields: []string{"warmUpColdFactor"}},
			{name: "refResource with current", body: `{"kind":"flow","resource":"r","threshold":1,"refResource":"other"}`, wantStatus: 422, wantFields: []string{"refResource"}},
			{name: "statIntervalMs on a concurrency rule", body: `{"kind":"flow","resource":"r","metric":"concurrency","threshold":1,"statIntervalMs":1000}`, wantStatus: 422, wantFields: []string{"statIntervalMs"}},
			{name: "throttling on a concurrency rule", body: `{"kind":"flow","resource":"r","metric":"concurrency","threshold":1,"controlBehavior":"throttling"}`, wantStatus: 422, wantFields: []string{"controlBehavior"}},
			{name: "a circuit-breaker field on a flow rule", body: `{"kind":"flow","resource":"r","threshold":1,"retryTimeoutMs":1000}`, wantStatus: 422, wantFields: []string{"retryTimeoutMs"}},

			{name: "bad metric", body: `{"kind":"flow","resource":"r","threshold":1,"metric":"rps"}`, wantStatus: 422, wantFields: []string{"metric"}},
			{name: "bad mode", body: `{"kind":"flow","resource":"r","threshold":1,"mode":"dry"}`, wantStatus: 422, wantFields: []string{"mode"}},
			{name: "bad controlBehavior", body: `{"kind":"flow","resource":"r","threshold":1,"controlBehavior":"queue"}`, wantStatus: 422, wantFields: []string{"controlBehavior"}},
			{name: "bad tokenCalculateStrategy", body: `{"kind":"flow","resource":"r","threshold":1,"tokenCalculateStrategy":"cold"}`, wantStatus: 422, wantFields: []string{"tokenCalculateStrategy"}},
			{name: "bad relationStrategy", body: `{"kind":"flow","resource":"r","threshold":1,"relationStrategy":"other"}`, wantStatus: 422, wantFields: []string{"relationStrategy"}},

			{
				name:       "several bad fields are all reported",
				body:       `{"kind":"flow","resource":"","threshold":-1,"statIntervalMs":50,"mode":"dry","enabled":"yes","colour":"red","maxQueueingTimeMs":5}`,
				wantStatus: 422,
				wantFields: []string{"resource", "threshold", "statIntervalMs", "mode", "enabled", "colour", "maxQueueingTimeMs"},
			},
		}
		// One server: each case is refused and checks that it wrote nothing.
		ts := startServer(t, nil, nil)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, body := ts.call(t, http.MethodPost, rulesPath, tt.body, nil)

				code := "validation_failed"
				if tt.wantStatus == http.StatusBadRequest {
					code = "bad_request"
				}
				wantError(t, resp, body, tt.wantStatus, code, tt.wantFields...)
				ts.wantNoRules(t)
			})
		}
	})
	t.Run("Invalid: a taken name is a conflict", func(t *testing.T) {
		t.Parallel()
		ts := startServer(t, nil, nil)
		first := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"a","threshold":1}`)

		resp, body := ts.call(t, http.MethodPost, rulesPath, `{"name":"orders","kind":"flow","resource":"b","threshold":2}`, nil)

		wantError(t, resp, body, http.StatusConflict, "conflict")
		list := ts.listRules(t, "")
		if list.Total != 1 || list.Items[0].ID != first.ID || list.Items[0].Resource != "a" {
			t.Errorf("rules = %+v, want only the first", list.Items)
		}
		ts.wantLoaded(t, map[string]float64{"orders": 1})
	})
}

// TestGetRule is GET /api/v1/rules/{id}.
func TestGetRule(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	created := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"GET:/api/orders","threshold":10}`)

	t.Run("Success", func(t *testing.T) {
		resp, body := ts.call(t, http.MethodGet, ruleURL(created.ID), nil, nil)

		mustStatus(t, resp, body, http.StatusOK)
		if etag := resp.Header.Get("ETag"); etag != `"1"` {
			t.Errorf(`ETag = %q, want "1"`, etag)
		}
		if got := decodeStrict[rules.APIRule](t, body); !reflect.DeepEqual(got, created) {
			t.Errorf("GET = %+v\nwant %+v", got, created)
		}
	})
	tests := []struct {
		name       string
		id         string
		wantStatus int
		wantCode   string
		wantFields []string
	}{
		{name: "NotFound: missing id", id: "999", wantStatus: http.StatusNotFound, wantCode: "not_found"},
		{name: "Invalid: id is not a number", id: "abc", wantStatus: http.StatusBadRequest, wantCode: "bad_request", wantFields: []string{"id"}},
		{name: "Invalid: id zero", id: "0", wantStatus: http.StatusBadRequest, wantCode: "bad_request", wantFields: []string{"id"}},
		{name: "Invalid: negative id", id: "-1", wantStatus: http.StatusBadRequest, wantCode: "bad_request", wantFields: []string{"id"}},
		{name: "Invalid: id beyond int64", id: "99999999999999999999", wantStatus: http.StatusBadRequest, wantCode: "bad_request", wantFields: []string{"id"}},
		{name: "Invalid: fractional id", id: "1.5", wantStatus: http.StatusBadRequest, wantCode: "bad_request", wantFields: []string{"id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, rulesPath+"/"+tt.id, nil, nil)

			wantError(t, resp, body, tt.wantStatus, tt.wantCode, tt.wantFields...)
		})
	}
}

// listFixture is a set of rules for the list tests, in creation (id) order.
var listFixture = []string{
	`{"name":"orders-qps","kind":"flow","resource":"GET:/api/orders","threshold":10}`,
	`{"name":"orders-inflight","kind":"flow","resource":"GET:/api/orders","metric":"concurrency","threshold":5,"enabled":false}`,
	`{"name":"checkout","kind":"flow","resource":"POST:/api/checkout","threshold":3,"description":"Protects the ORDERS database"}`,
	`{"name":"stock","kind":"flow","resource":"GET:/api/stock","threshold":7,"enabled":false}`,
	`{"name":"search","kind":"flow","resource":"GET:/api/search","threshold":1}`,
	`{"name":"percent","kind":"flow","resource":"GET:/api/100%","threshold":2}`,
	`{"name":"legacy_api","kind":"flow","resource":"GET:/legacy","threshold":4}`,
}

func newListServer(t *testing.T) *testServer {
	t.Helper()
	ts := startServer(t, nil, nil)
	for _, body := range listFixture {
		ts.createRule(t, body)
	}
	return ts
}

// TestListRules is GET /api/v1/rules: its pages, its filters and the
// queries it refuses.
func TestListRules(t *testing.T) {
	t.Parallel()
	t.Run("Success: pages", func(t *testing.T) {
		t.Parallel()
		all := []string{"orders-qps", "orders-inflight", "checkout", "stock", "search", "percent", "legacy_api"}
		tests := []struct {
			query        string
			wantNames    []string
			wantPage     int
			wantPageSize int
		}{
			{query: "", wantNames: all, wantPage: 1, wantPageSize: 50},
			{query: "pageSize=3", wantNames: all[:3], wantPage: 1, wantPageSize: 3},
			{query: "page=2&pageSize=3", wantNames: all[3:6], wantPage: 2, wantPageSize: 3},
			{query: "page=3&pageSize=3", wantNames: all[6:], wantPage: 3, wantPageSize: 3},
			{query: "page=4&pageSize=3", wantNames: []string{}, wantPage: 4, wantPageSize: 3},
			{query: "page=2", wantNames: []string{}, wantPage: 2, wantPageSize: 50},
			{query: "pageSize=1", wantNames: all[:1], wantPage: 1, wantPageSize: 1},
			{query: "pageSize=500", wantNames: all, wantPage: 1, wantPageSize: 500},
		}
		ts := newListServer(t)
		for _, tt := range tests {
			t.Run("?"+tt.query, func(t *testing.T) {
				resp, body := ts.call(t, http.MethodGet, rulesPath+"?"+tt.query, nil, nil)

				mustStatus(t, resp, body, http.StatusOK)
				var raw map[string]json.RawMessage
				if err := json.Unmarshal(body, &raw); err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(raw["items"], []byte("[")) {
					t.Errorf("items = %s, want an array", raw["items"])
				}
				list := decodeStrict[RuleList](t, body)
				if got := ruleNames(list.Items); !slices.Equal(got, tt.wantNames) {
					t.Errorf("items = %q, want %q", got, tt.wantNames)
				}
				if list.Total != int64(len(all)) || list.Page != tt.wantPage || list.PageSize != tt.wantPageSize {
					t.Errorf("total, page, pageSize = %d, %d, %d; want %d, %d, %d",
						list.Total, list.Page, list.PageSize, len(all), tt.wantPage, tt.wantPageSize)
				}
			})
		}
	})
	t.Run("Success: filters", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name      string
			query     url.Values
			wantNames []string
		}{
			{name: "kind flow", query: url.Values{"kind": {"flow"}}, wantNames: []string{"orders-qps", "orders-inflight", "checkout", "stock", "search", "percent", "legacy_api"}},
			{name: "another kind", query: url.Values{"kind": {"circuitBreaker"}}, wantNames: []string{}},
			{name: "resource is exact", query: url.Values{"resource": {"GET:/api/orders"}}, wantNames: []string{"orders-qps", "orders-inflight"}},
			{name: "resource is not a prefix", query: url.Values{"resource": {"GET:/api"}}, wantNames: []string{}},
			{name: "enabled true", query: url.Values{"enabled": {"true"}}, wantNames: []string{"orders-qps", "checkout", "search", "percent", "legacy_api"}},
			{name: "enabled false", query: url.Values{"enabled": {"false"}}, wantNames: []string{"orders-inflight", "stock"}},
			{name: "q is case-insensitive", query: url.Values{"q": {"ORDERS"}}, wantNames: []string{"orders-qps", "orders-inflight", "checkout"}},
			{name: "q is a substring", query: url.Values{"q": {"Toc"}}, wantNames: []string{"stock"}},
			{name: "q percent is literal", query: url.Values{"q": {"%"}}, wantNames: []string{"percent"}},
			{name: "q underscore is literal", query: url.Values{"q": {"_"}}, wantNames: []string{"legacy_api"}},
			{name: "q matching nothing", query: url.Values{"q": {"nothing-like-it"}}, wantNames: []string{}},
			{name: "q and enabled both apply", query: url.Values{"q": {"orders"}, "enabled": {"false"}}, wantNames: []string{"orders-inflight"}},
			{name: "every filter at once", query: url.Values{"kind": {"flow"}, "resource": {"GET:/api/orders"}, "enabled": {"true"}, "q": {"qps"}}, wantNames: []string{"orders-qps"}},
			{name: "filters and pages", query: url.Values{"enabled": {"true"}, "page": {"2"}, "pageSize": {"2"}}, wantNames: []string{"search", "percent"}},
		}
		ts := newListServer(t)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				list := ts.listRules(t, tt.query.Encode())

				if got := ruleNames(list.Items); !slices.Equal(got, tt.wantNames) {
					t.Errorf("items = %q, want %q", got, tt.wantNames)
				}
				wantTotal := len(tt.wantNames)
				if tt.query.Has("page") {
					wantTotal = 5
				}
				if list.Total != int64(wantTotal) {
					t.Errorf("total = %d, want %d", list.Total, wantTotal)
				}
			})
		}
	})
	// ?app= lists the rules of that app only, with the other filters; a
	// bad app is a 400 naming app.
	t.Run("Success: by app", func(t *testing.T) {
		t.Parallel()
		ts := startServer(t, nil, nil)
		for _, body := range []string{
			`{"name":"everywhere","kind":"flow","resource":"orders","threshold":1}`,
			`{"name":"shop-orders","kind":"flow","app":"shop","resource":"orders","threshold":1}`,
			`{"name":"shop-pay","kind":"circuitBreaker","app":"shop","resource":"pay","strategy":"errorRatio","threshold":0.5,"retryTimeoutMs":1000}`,
			`{"name":"billing-orders","kind":"flow","app":"billing","resource":"orders","threshold":1}`,
		} {
			ts.createRule(t, body)
		}
		tests := []struct {
			query string
			want  []string
		}{
			{query: "", want: []string{"everywhere", "shop-orders", "shop-pay", "billing-orders"}},
			{query: "app=shop", want: []string{"shop-orders", "shop-pay"}},
			{query: "app=shop&kind=flow", want: []string{"shop-orders"}},
			{query: "app=billing&resource=orders", want: []string{"billing-orders"}},
			{query: "app=nobody", want: []string{}},
		}
		for _, tt := range tests {
			t.Run("?"+tt.query, func(t *testing.T) {
				list := ts.listRules(t, tt.query)
				if got := ruleNames(list.Items); !slices.Equal(got, tt.want) || list.Total != int64(len(tt.want)) {
					t.Errorf("listed %v (total %d), want %v", got, list.Total, tt.want)
				}
			})
		}
		t.Run("Invalid: ?app=Shop", func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, rulesPath+"?app=Shop", nil, nil)
			wantError(t, resp, body, http.StatusBadRequest, "bad_request", "app")
		})
	})
	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			query     string
			wantField string
		}{
			{query: "pageSize=0", wantField: "pageSize"},
			{query: "pageSize=501", wantField: "pageSize"},
			{query: "pageSize=-1", wantField: "pageSize"},
			{query: "pageSize=ten", wantField: "pageSize"},
			{query: "page=0", wantField: "page"},
			{query: "page=-1", wantField: "page"},
			{query: "page=first", wantField: "page"},
			{query: "enabled=maybe", wantField: "enabled"},
		}
		ts := startServer(t, nil, nil)
		for _, tt := range tests {
			t.Run(tt.query, func(t *testing.T) {
				resp, body := ts.call(t, http.MethodGet, rulesPath+"?"+tt.query, nil, nil)

				wantError(t, resp, body, http.StatusBadRequest, "bad_request", tt.wantField)
			})
		}
	})
}

func TestReplaceRule(t *testing.T) {
	t.Parallel()
	const original = `{"name":"orders","kind":"flow","resource":"GET:/api/orders","threshold":10,` +
		`"controlBehavior":"throttling","maxQueueingTimeMs":500,"mode":"shadow","description":"sale","enabled":false}`

	t.Run("Success: absent fields take their defaults and the name is kept", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		r := ts.createRule(t, original)

		resp, body := ts.call(t, http.MethodPut, ruleURL(r.ID), `{"kind":"flow","resource":"GET:/api/orders","threshold":7}`, nil)

		mustStatus(t, resp, body, http.StatusOK)
		wantContent(t, jsonObject(t, body), flowRule(map[string]any{"name": "orders", "resource": "GET:/api/orders", "threshold": 7.0}))
		got := decodeStrict[rules.APIRule](t, body)
		if got.ID != r.ID || got.Version != 2 || !got.CreatedAt.Equal(r.CreatedAt) {
			t.Errorf("id, version, createdAt = %d, %d, %v; want %d, 2, %v", got.ID, got.Version, got.CreatedAt, r.ID, r.CreatedAt)
		}
		if etag := resp.Header.Get("ETag"); etag != `"2"` {
			t.Errorf(`ETag = %q, want "2"`, etag)
		}
		if stored, etag := ts.getRule(t, r.ID); !reflect.DeepEqual(stored, got) || etag != `"2"` {
			t.Errorf("GET = %+v, ETag %s\nwant %+v, ETag \"2\"", stored, etag, got)
		}
		ts.wantLoaded(t, map[string]float64{"orders": 7})
	})

	t.Run("Success: GET, edit, PUT back", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		r := ts.createRule(t, original)
		resp, body := ts.call(t, http.MethodGet, ruleURL(r.ID), nil, nil)
		mustStatus(t, resp, body, http.StatusOK)
		edited := jsonObject(t, body)
		edited["threshold"] = 99.0
		edited["enabled"] = true

		resp, body = ts.call(t, http.MethodPut, ruleURL(r.ID), edited, reqHeader{"If-Match": resp.Header.Get("ETag")})

		mustStatus(t, resp, body, http.StatusOK)
		got := jsonObject(t, body)
		wantContent(t, got, edited)
		if got["version"] != 2.0 || got["id"] != float64(r.ID) || got["createdAt"] != edited["createdAt"] {
			t.Errorf("id, version, createdAt = %v, %v, %v; want %d, 2, %v", got["id"], got["version"], got["createdAt"], r.ID, edited["createdAt"])
		}
		if updated := wantUTC(t, "updatedAt", got["updatedAt"]); updated.Before(r.UpdatedAt) {
			t.Errorf("updatedAt = %v, before the create's %v", updated, r.UpdatedAt)
		}
		ts.wantLoaded(t, map[string]float64{"orders": 99})
	})

	t.Run("Success: read-only fields are ignored", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		r := ts.createRule(t, original)
		resp, body := ts.call(t, http.MethodPatch, ruleURL(r.ID), `{"threshold":8}`, nil)
		mustStatus(t, resp, body, http.StatusOK)

		resp, body = ts.call(t, http.MethodPut, ruleURL(r.ID), fmt.Sprintf(`{"id":%d,"version":1,"createdAt":"2000-01-01T00:00:00Z",`+
			`"updatedAt":"2000-01-01T00:00:00Z","kind":"flow","resource":"GET:/api/orders","threshold":9}`, r.ID), nil)

		mustStatus(t, resp, body, http.StatusOK)
		got := decodeStrict[rules.APIRule](t, body)
		if got.Version != 3 || !got.CreatedAt.Equal(r.CreatedAt) || got.UpdatedAt.Year() == 2000 || *got.Threshold != 9 {
			t.Errorf("version %d, createdAt %v, updatedAt %v, threshold %v; want 3, %v, now, 9",
				got.Version, got.CreatedAt, got.UpdatedAt, *got.Threshold, r.CreatedAt)
		}
	})

	t.Run("Success: rename", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		r := ts.createRule(t, original)

		resp, body := ts.call(t, http.MethodPut, ruleURL(r.ID), `{"name":"orders-v2","kind":"flow","resource":"GET:/api/orders","threshold":7}`, nil)

		mustStatus(t, resp, body, http.StatusOK)
		if got := decodeStrict[rules.APIRule](t, body); got.Name != "orders-v2" {
			t.Errorf("name = %q, want orders-v2", got.Name)
		}
		ts.wantLoaded(t, map[string]float64{"orders-v2": 7})
	})

	t.Run("Success: each write is a new version", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		r := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":1}`)
		for v := int64(2); v <= 4; v++ {
			body := fmt.Sprintf(`{"kind":"flow","resource":"r","threshold":%d}`, v)
			resp, got := ts.call(t, http.MethodPut, ruleURL(r.ID), body, nil)
			mustStatus(t, resp, got, http.StatusOK)
			want := strconv.Quote(strconv.FormatInt(v, 10))
			if rule := decodeStrict[rules.APIRule](t, got); rule.Version != v || resp.Header.Get("ETag") != want {
				t.Errorf("version %d, ETag %s; want %d, %s", rule.Version, resp.Header.Get("ETag"), v, want)
			}
			if _, etag := ts.getRule(t, r.ID); etag != want {
				t.Errorf("GET ETag = %s, want %s", etag, want)
			}
		}
	})

	failures := []struct {
		name       string
		id         string // "" for the rule's own
		body       string
		wantStatus int
		wantCode   string
		wantFields []string
	}{
		{name: "another id in the body", body: `{"id":999,"kind":"flow","resource":"r","threshold":1}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"id"}},
		{name: "another kind", body: `{"kind":"circuitBreaker","resource":"r","threshold":1}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"kind"}},
		{name: "renamed to a taken name", body: `{"name":"taken","kind":"flow","resource":"r","threshold":1}`, wantStatus: 409, wantCode: "conflict"},
		{name: "without resource", body: `{"kind":"flow","threshold":1}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"resource"}},
		{name: "without threshold", body: `{"kind":"flow","resource":"r"}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"threshold"}},
		{name: "an unknown field", body: `{"kind":"flow","resource":"r","threshold":1,"colour":"red"}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"colour"}},
		{name: "a field that does not apply", body: `{"kind":"flow","resource":"r","threshold":1,"maxQueueingTimeMs":10}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"maxQueueingTimeMs"}},
		{name: "not JSON", body: `threshold=1`, wantStatus: 400, wantCode: "bad_request"},
		{name: "no such rule", id: "999", body: `{"kind":"flow","resource":"r","threshold":1}`, wantStatus: 404, wantCode: "not_found"},
		{name: "a bad id", id: "abc", body: `{"kind":"flow","resource":"r","threshold":1}`, wantStatus: 400, wantCode: "bad_request", wantFields: []string{"id"}},
	}
	// One server: each case is refused and checks that the rules are as
	// they were.
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name":"taken","kind":"flow","resource":"t","threshold":2}`)
	r := ts.createRule(t, original)
	for _, tt := range failures {
		t.Run(refusal(tt.wantStatus)+tt.name, func(t *testing.T) {
			path := ruleURL(r.ID)
			if tt.id != "" {
				path = rulesPath + "/" + tt.id
			}

			resp, body := ts.call(t, http.MethodPut, path, tt.body, nil)

			wantError(t, resp, body, tt.wantStatus, tt.wantCode, tt.wantFields...)
			if got, _ := ts.getRule(t, r.ID); !reflect.DeepEqual(got, r) {
				t.Errorf("the rule changed: %+v\nwant %+v", got, r)
			}
			ts.wantLoaded(t, map[string]float64{"taken": 2})
		})
	}
}

func TestPatchRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		create string
		patch  string
		want   map[string]any
	}{
		{
			name:   "enabled false keeps the other fields",
			create: `{"name":"paced","kind":"flow","resource":"r","threshold":10,"controlBehavior":"throttling","maxQueueingTimeMs":500,"statIntervalMs":2000,"mode":"shadow","description":"d"}`,
			patch:  `{"enabled": false}`,
			want: flowRule(map[string]any{"name": "paced", "resource": "r", "threshold": 10.0, "controlBehavior": "throttling", "maxQueueingTimeMs": 500.0,
				"statIntervalMs": 2000.0, "mode": "shadow", "description": "d", "enabled": false}),
		},
		{
			name:   "metric concurrency on a default qps rule drops statIntervalMs",
			create: `{"name":"orders","kind":"flow","resource":"r","threshold":10}`,
			patch:  `{"metric": "concurrency"}`,
			want:   flowRule(map[string]any{"name": "orders", "resource": "r", "threshold": 10.0, "metric": "concurrency"}, "statIntervalMs"),
		},
		{
			name:   "switching to throttling with its queueing time",
			create: `{"name":"orders","kind":"flow","resource":"r","threshold":10}`,
			patch:  `{"controlBehavior":"throttling","maxQueueingTimeMs":200}`,
			want:   flowRule(map[string]any{"name": "orders", "resource": "r", "threshold": 10.0, "controlBehavior": "throttling", "maxQueueingTimeMs": 200.0}),
		},
		{
			name:   "threshold and name",
			create: `{"name":"orders","kind":"flow","resource":"r","threshold":10,"description":"kept"}`,
			patch:  `{"threshold": 25.5, "name": "orders-2"}`,
			want:   flowRule(map[string]any{"name": "orders-2", "resource": "r", "threshold": 25.5, "description": "kept"}),
		},
		{
			name:   "the read-only fields as GET answers them",
			create: `{"name":"orders","kind":"flow","resource":"r","threshold":10}`,
			patch:  `{"id": 1, "version": 1, "kind": "flow", "threshold": 11}`,
			want:   flowRule(map[string]any{"name": "orders", "resource": "r", "threshold": 11.0}),
		},
	}
	for _, tt := range tests {
		t.Run("Success: "+tt.name, func(t *testing.T) {
			ts := startServer(t, nil, nil)
			r := ts.createRule(t, tt.create)

			resp, body := ts.call(t, http.MethodPatch, ruleURL(r.ID), tt.patch, nil)

			mustStatus(t, resp, body, http.StatusOK)
			wantContent(t, jsonObject(t, body), tt.want)
			if etag := resp.Header.Get("ETag"); etag != `"2"` {
				t.Errorf(`ETag = %q, want "2"`, etag)
			}
			stored, _ := ts.getRule(t, r.ID)
			if got := decodeStrict[rules.APIRule](t, body); !reflect.DeepEqual(stored, got) || got.Version != 2 {
				t.Errorf("GET = %+v\nPATCH answered %+v (want version 2)", stored, got)
			}
			loaded := map[string]float64{}
			if tt.want["enabled"] == true {
				loaded[tt.want["name"].(string)] = tt.want["threshold"].(float64)
			}
			ts.wantLoaded(t, loaded)
		})
	}

	failures := []struct {
		name       string
		patch      string
		wantStatus int
		wantCode   string
		wantFields []string
	}{
		{name: "negative threshold", patch: `{"threshold": -1}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"threshold"}},
		{name: "wrong type", patch: `{"enabled": "no"}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"enabled"}},
		{name: "threshold as a string", patch: `{"threshold": "5"}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"threshold"}},
		{name: "threshold null", patch: `{"threshold": null}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"threshold"}},
		{name: "unknown field", patch: `{"colour": "red"}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"colour"}},
		{name: "bad enum", patch: `{"metric": "rps"}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"metric"}},
		{name: "a field that does not apply", patch: `{"maxQueueingTimeMs": 100}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"maxQueueingTimeMs"}},
		{name: "another id", patch: `{"id": 999}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"id"}},
		{name: "another kind", patch: `{"kind": "circuitBreaker"}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"kind"}},
		{name: "several bad fields", patch: `{"threshold": -1, "mode": "dry", "colour": 1}`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"threshold", "mode", "colour"}},
		{name: "a taken name", patch: `{"name": "taken"}`, wantStatus: 409, wantCode: "conflict"},
		{name: "not a JSON object", patch: `[{"enabled": false}]`, wantStatus: 422, wantCode: "validation_failed", wantFields: []string{"body"}},
	}
	// One server: each case is refused and checks that the rules are as
	// they were.
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name":"taken","kind":"flow","resource":"t","threshold":2}`)
	r := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":10}`)
	for _, tt := range failures {
		t.Run(refusal(tt.wantStatus)+tt.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodPatch, ruleURL(r.ID), tt.patch, nil)

			wantError(t, resp, body, tt.wantStatus, tt.wantCode, tt.wantFields...)
			if got, etag := ts.getRule(t, r.ID); !reflect.DeepEqual(got, r) || etag != `"1"` {
				t.Errorf("the rule changed: %+v (ETag %s)\nwant %+v", got, etag, r)
			}
			ts.wantLoaded(t, map[string]float64{"taken": 2, "orders": 10})
		})
	}

	t.Run("NotFound", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		resp, body := ts.call(t, http.MethodPatch, ruleURL(42), `{"enabled": false}`, nil)
		wantError(t, resp, body, http.StatusNotFound, "not_found")
	})
}

// ruleAtVersion3 creates a rule with threshold 1 and patches it twice, to
// threshold 3 at version 3.
func (ts *testServer) ruleAtVersion3(t *testing.T, name string) rules.APIRule {
	t.Helper()
	r := ts.createRule(t, fmt.Sprintf(`{"name":%q,"kind":"flow","resource":%q,"threshold":1}`, name, "res-"+name))
	for _, threshold := range []int{2, 3} {
		resp, body := ts.call(t, http.MethodPatch, ruleURL(r.ID), fmt.Sprintf(`{"threshold":%d}`, threshold), nil)
		mustStatus(t, resp, body, http.StatusOK)
		r = decodeStrict[rules.APIRule](t, body)
	}
	if r.Version != 3 {
		t.Fatalf("version = %d after two patches, want 3", r.Version)
	}
	return r
}

func TestRuleWritesHonourIfMatch(t *testing.T) {
	t.Parallel()
	writes := []struct {
		name          string
		method        string
		suffix        string
		body          any
		wantStatus    int
		wantThreshold float64 // after the write; 0 when deleted
	}{
		{name: "PUT", method: http.MethodPut, body: `{"kind":"flow","resource":"r","threshold":42}`, wantStatus: http.StatusOK, wantThreshold: 42},
		{name: "PATCH", method: http.MethodPatch, body: `{"threshold":42}`, wantStatus: http.StatusOK, wantThreshold: 42},
		{name: "DELETE", method: http.MethodDelete, wantStatus: http.StatusNoContent},
		{name: "rollback", method: http.MethodPost, suffix: "/rollback?toVersion=1", wantStatus: http.StatusOK, wantThreshold: 1},
	}
	matches := []struct {
		name   string
		header string
		stale  bool
	}{
		{name: "quoted", header: `"3"`},
		{name: "bare", header: `3`},
		{name: "weak", header: `W/"3"`},
		{name: "in a list", header: `"1", "3"`},
		{name: "absent"},
		{name: "stale quoted", header: `"2"`, stale: true},
		{name: "stale bare", header: `2`, stale: true},
		{name: "stale weak", header: `W/"2"`, stale: true},
		{name: "ahead", header: `"4"`, stale: true},
		{name: "not a version", header: `"abc"`, stale: true},
	}
	ts := startServer(t, nil, nil)
	n := 0
	for _, w := range writes {
		for _, m := range matches {
			t.Run(w.name+"/"+m.name, func(t *testing.T) {
				n++
				name := fmt.Sprintf("rule-%d", n)
				r := ts.ruleAtVersion3(t, name)
				loaded := ts.loadedThresholds()
				header := reqHeader{}
				if m.header != "" {
					header["If-Match"] = m.header
				}

				resp, body := ts.call(t, w.method, ruleURL(r.ID)+w.suffix, w.body, header)

				if m.stale {
					wantError(t, resp, body, http.StatusPreconditionFailed, "precondition_failed")
					if got, etag := ts.getRule(t, r.ID); !reflect.DeepEqual(got, r) || etag != `"3"` {
						t.Errorf("the rule changed: %+v (ETag %s)\nwant %+v", got, etag, r)
					}
					if got := ts.loadedThresholds(); !maps.Equal(got, loaded) {
						t.Errorf("engine rules = %v, want them unchanged: %v", got, loaded)
					}
					return
				}
				mustStatus(t, resp, body, w.wantStatus)
				want := maps.Clone(loaded)
				if w.method == http.MethodDelete {
					delete(want, name)
					resp, body := ts.call(t, http.MethodGet, ruleURL(r.ID), nil, nil)
					wantError(t, resp, body, http.StatusNotFound, "not_found")
				} else {
					want[name] = w.wantThreshold
					got := decodeStrict[rules.APIRule](t, body)
					if got.Version != 4 || resp.Header.Get("ETag") != `"4"` || *got.Threshold != w.wantThreshold {
						t.Errorf("version %d, ETag %s, threshold %v; want 4, \"4\", %v", got.Version, resp.Header.Get("ETag"), *got.Threshold, w.wantThreshold)
					}
				}
				if got := ts.loadedThresholds(); !maps.Equal(got, want) {
					t.Errorf("engine rules = %v, want %v", got, want)
				}
			})
		}
	}
}

func TestDeleteRule(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	r := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":1}`)
	ts.createRule(t, `{"name":"other","kind":"flow","resource":"o","threshold":2}`)

	resp, body := ts.call(t, http.MethodDelete, ruleURL(r.ID), nil, reqHeader{"X-Change-Reason": "retired"})

	mustStatus(t, resp, body, http.StatusNoContent)
	if len(body) != 0 {
		t.Errorf("body = %q, want none", body)
	}
	ts.wantLoaded(t, map[string]float64{"other": 2})

	steps := []struct {
		name       string
		method     string
		path       string
		wantStatus int
	}{
		{name: "GET is 404", method: http.MethodGet, path: ruleURL(r.ID), wantStatus: http.StatusNotFound},
		{name: "DELETE again is 404", method: http.MethodDelete, path: ruleURL(r.ID), wantStatus: http.StatusNotFound},
		{name: "PATCH is 404", method: http.MethodPatch, path: ruleURL(r.ID), wantStatus: http.StatusNotFound},
		{name: "PUT is 404", method: http.MethodPut, path: ruleURL(r.ID), wantStatus: http.StatusNotFound},
		{name: "rollback is 404", method: http.MethodPost, path: ruleURL(r.ID) + "/rollback?toVersion=1", wantStatus: http.StatusNotFound},
		{name: "DELETE of a bad id is 400", method: http.MethodDelete, path: rulesPath + "/abc", wantStatus: http.StatusBadRequest},
	}
	for _, tt := range steps {
		t.Run(refusal(tt.wantStatus)+tt.name, func(t *testing.T) {
			var body any
			if tt.method == http.MethodPatch || tt.method == http.MethodPut {
				body = `{"kind":"flow","resource":"r","threshold":5}`
			}
			resp, got := ts.call(t, tt.method, tt.path, body, nil)

			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d\n%s", resp.StatusCode, tt.wantStatus, got)
			}
			decodeEnvelope(t, resp, got)
		})
	}

	t.Run("Success: revisions stay readable", func(t *testing.T) {
		resp, body := ts.call(t, http.MethodGet, ruleURL(r.ID)+"/revisions", nil, nil)

		mustStatus(t, resp, body, http.StatusOK)
		revs := decodeStrict[RevisionList](t, body)
		if revs.Total < 1 || len(revs.Items) == 0 {
			t.Fatalf("revisions = %+v, want the rule's history", revs)
		}
		oldest := revs.Items[len(revs.Items)-1]
		if oldest.Version != 1 || oldest.Rule.Name != "orders" || *oldest.Rule.Threshold != 1 {
			t.Errorf("oldest revision = %+v, want version 1 of orders", oldest)
		}
	})

	t.Run("Success: the name is free again", func(t *testing.T) {
		again := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":3}`)
		if again.ID == r.ID {
			t.Errorf("id %d was reused", again.ID)
		}
		ts.wantLoaded(t, map[string]float64{"other": 2, "orders": 3})
	})
}

func TestRuleRevisions(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	resp, body := ts.call(t, http.MethodPost, rulesPath, `{"name":"orders","kind":"flow","resource":"r","threshold":10}`, reqHeader{"X-Change-Reason": "first cap"})
	mustStatus(t, resp, body, http.StatusCreated)
	v1 := jsonObject(t, body)
	id := int64(v1["id"].(float64))
	resp, body = ts.call(t, http.MethodPatch, ruleURL(id), `{"threshold":20}`, reqHeader{"X-Change-Reason": "sale"})
	mustStatus(t, resp, body, http.StatusOK)
	v2 := jsonObject(t, body)
	resp, body = ts.call(t, http.MethodPut, ruleURL(id), `{"name":"orders-cap","kind":"flow","resource":"r","threshold":5,"mode":"shadow"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	v3 := jsonObject(t, body)
	versions := map[int64]map[string]any{1: v1, 2: v2, 3: v3}
	reasons := map[int64]string{1: "first cap", 2: "sale", 3: ""}

	tests := []struct {
		query        string
		wantVersions []int64
	}{
		{query: "", wantVersions: []int64{3, 2, 1}},
		{query: "pageSize=2", wantVersions: []int64{3, 2}},
		{query: "page=2&pageSize=2", wantVersions: []int64{1}},
		{query: "page=3&pageSize=2", wantVersions: []int64{}},
	}
	for _, tt := range tests {
		t.Run("Success: ?"+tt.query, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, ruleURL(id)+"/revisions?"+tt.query, nil, nil)

			mustStatus(t, resp, body, http.StatusOK)
			if !bytes.Contains(body, []byte(`"items":[`)) {
				t.Errorf("items is not an array: %s", body)
			}
			revs := decodeStrict[RevisionList](t, body)
			if revs.Total != 3 {
				t.Errorf("total = %d, want 3", revs.Total)
			}
			var raw struct {
				Items []struct {
					Rule      map[string]any `json:"rule"`
					CreatedAt any            `json:"createdAt"`
				} `json:"items"`
			}
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatal(err)
			}
			got := make([]int64, 0, len(revs.Items))
			for i, item := range revs.Items {
				got = append(got, item.Version)
				want := versions[item.Version]
				if want == nil {
					continue
				}
				if item.Rule.Version != item.Version {
					t.Errorf("revision %d holds the rule at version %d", item.Version, item.Rule.Version)
				}
				wantContent(t, raw.Items[i].Rule, want)
				if item.Rule.ID != id {
					t.Errorf("revision %d: rule id = %d, want %d", item.Version, item.Rule.ID, id)
				}
				if item.Reason != reasons[item.Version] {
					t.Errorf("revision %d: reason = %q, want %q", item.Version, item.Reason, reasons[item.Version])
				}
				if item.Actor == "" {
					t.Errorf("revision %d: actor is empty", item.Version)
				}
				wantUTC(t, "createdAt", raw.Items[i].CreatedAt)
			}
			if !slices.Equal(got, tt.wantVersions) {
				t.Errorf("versions = %v, want %v", got, tt.wantVersions)
			}
		})
	}

	failures := []struct {
		name       string
		path       string
		wantStatus int
		wantFields []string
	}{
		{name: "an id that never existed", path: ruleURL(999) + "/revisions", wantStatus: http.StatusNotFound},
		{name: "a bad id", path: rulesPath + "/x/revisions", wantStatus: http.StatusBadRequest, wantFields: []string{"id"}},
		{name: "pageSize 0", path: ruleURL(id) + "/revisions?pageSize=0", wantStatus: http.StatusBadRequest, wantFields: []string{"pageSize"}},
		{name: "pageSize 501", path: ruleURL(id) + "/revisions?pageSize=501", wantStatus: http.StatusBadRequest, wantFields: []string{"pageSize"}},
		{name: "page 0", path: ruleURL(id) + "/revisions?page=0", wantStatus: http.StatusBadRequest, wantFields: []string{"page"}},
	}
	for _, tt := range failures {
		t.Run(refusal(tt.wantStatus)+tt.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, tt.path, nil, nil)

			code := "bad_request"
			if tt.wantStatus == http.StatusNotFound {
				code = "not_found"
			}
			wantError(t, resp, body, tt.wantStatus, code, tt.wantFields...)
		})
	}
}

func TestRollbackRule(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*testServer, rules.APIRule) {
		t.Helper()
		ts := startServer(t, nil, nil)
		r := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":10,"description":"one"}`)
		for _, patch := range []string{`{"threshold":20,"description":"two","controlBehavior":"throttling","maxQueueingTimeMs":300}`, `{"enabled":false,"name":"orders-off"}`} {
			resp, body := ts.call(t, http.MethodPatch, ruleURL(r.ID), patch, nil)
			mustStatus(t, resp, body, http.StatusOK)
		}
		return ts, r
	}

	tests := []struct {
		toVersion  int
		want       map[string]any
		wantLoaded map[string]float64
	}{
		{
			toVersion:  1,
			want:       flowRule(map[string]any{"name": "orders", "resource": "r", "threshold": 10.0, "description": "one"}),
			wantLoaded: map[string]float64{"orders": 10},
		},
		{
			toVersion: 2,
			want: flowRule(map[string]any{"name": "orders", "resource": "r", "threshold": 20.0, "description": "two",
				"controlBehavior": "throttling", "maxQueueingTimeMs": 300.0}),
			wantLoaded: map[string]float64{"orders": 20},
		},
		{
			toVersion: 3,
			want: flowRule(map[string]any{"name": "orders-off", "resource": "r", "threshold": 20.0, "description": "two",
				"controlBehavior": "throttling", "maxQueueingTimeMs": 300.0, "enabled": false}),
			wantLoaded: map[string]float64{},
		},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("Success: to version %d", tt.toVersion), func(t *testing.T) {
			ts, r := setup(t)

			resp, body := ts.call(t, http.MethodPost, fmt.Sprintf("%s/rollback?toVersion=%d", ruleURL(r.ID), tt.toVersion), nil,
				reqHeader{"X-Change-Reason": "undo"})

			mustStatus(t, resp, body, http.StatusOK)
			wantContent(t, jsonObject(t, body), tt.want)
			got := decodeStrict[rules.APIRule](t, body)
			if got.Version != 4 || resp.Header.Get("ETag") != `"4"` || got.ID != r.ID {
				t.Errorf("id %d, version %d, ETag %s; want %d, 4, \"4\"", got.ID, got.Version, resp.Header.Get("ETag"), r.ID)
			}
			if stored, _ := ts.getRule(t, r.ID); !reflect.DeepEqual(stored, got) {
				t.Errorf("GET = %+v\nrollback answered %+v", stored, got)
			}
			resp, body = ts.call(t, http.MethodGet, ruleURL(r.ID)+"/revisions?pageSize=1", nil, nil)
			mustStatus(t, resp, body, http.StatusOK)
			if revs := decodeStrict[RevisionList](t, body); len(revs.Items) != 1 || revs.Items[0].Version != 4 || revs.Items[0].Reason != "undo" {
				t.Errorf("newest revision = %+v, want version 4 with reason undo", revs.Items)
			}
			ts.wantLoaded(t, tt.wantLoaded)
		})
	}

	failures := []struct {
		name       string
		query      string
		id         string
		wantStatus int
		wantFields []string
	}{
		{name: "no such version", query: "toVersion=99", wantStatus: http.StatusNotFound},
		{name: "no such rule", id: "999", query: "toVersion=1", wantStatus: http.StatusNotFound},
		{name: "toVersion missing", query: "", wantStatus: http.StatusBadRequest, wantFields: []string{"toVersion"}},
		{name: "toVersion not a number", query: "toVersion=first", wantStatus: http.StatusBadRequest, wantFields: []string{"toVersion"}},
		{name: "toVersion zero", query: "toVersion=0", wantStatus: http.StatusBadRequest, wantFields: []string{"toVersion"}},
		{name: "toVersion negative", query: "toVersion=-1", wantStatus: http.StatusBadRequest, wantFields: []string{"toVersion"}},
	}
	// One server: each case is refused and checks that the rule is as it
	// was.
	ts, r := setup(t)
	for _, tt := range failures {
		t.Run(refusal(tt.wantStatus)+tt.name, func(t *testing.T) {
			before, _ := ts.getRule(t, r.ID)
			path := ruleURL(r.ID)
			if tt.id != "" {
				path = rulesPath + "/" + tt.id
			}

			resp, body := ts.call(t, http.MethodPost, path+"/rollback?"+tt.query, nil, nil)

			code := "bad_request"
			if tt.wantStatus == http.StatusNotFound {
				code = "not_found"
			}
			wantError(t, resp, body, tt.wantStatus, code, tt.wantFields...)
			if got, _ := ts.getRule(t, r.ID); !reflect.DeepEqual(got, before) {
				t.Errorf("the rule changed: %+v\nwant %+v", got, before)
			}
		})
	}

	t.Run("Invalid: a name taken since", func(t *testing.T) {
		ts, r := setup(t)
		ts.createRule(t, `{"name":"orders","kind":"flow","resource":"other","threshold":1}`)
		before, _ := ts.getRule(t, r.ID)

		resp, body := ts.call(t, http.MethodPost, ruleURL(r.ID)+"/rollback?toVersion=1", nil, nil)

		wantError(t, resp, body, http.StatusConflict, "conflict")
		if got, _ := ts.getRule(t, r.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("the rule changed: %+v\nwant %+v", got, before)
		}
		ts.wantLoaded(t, map[string]float64{"orders": 1})
	})
}

func TestRulesDecideInTheEngine(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	passes := func(t *testing.T) bool {
		t.Helper()
		e, blocked := ts.Server.engine.Entry("x")
		if blocked != nil {
			return false
		}
		e.Exit()
		return true
	}
	if !passes(t) {
		t.Fatal("x is blocked before any rule")
	}
	r := ts.createRule(t, `{"name":"x-closed","kind":"flow","resource":"x","threshold":0}`)

	steps := []struct {
		name       string
		patch      string
		wantPasses bool
	}{
		{name: "threshold 0 blocks", wantPasses: false},
		{name: "disabled lets it pass", patch: `{"enabled":false}`, wantPasses: true},
		{name: "enabled again blocks", patch: `{"enabled":true}`, wantPasses: false},
		{name: "shadow mode lets it pass", patch: `{"mode":"shadow"}`, wantPasses: true},
		{name: "enforce mode blocks", patch: `{"mode":"enforce"}`, wantPasses: false},
		{name: "a threshold above 0 lets it pass", patch: `{"threshold":1000}`, wantPasses: true},
		{name: "an invalid patch keeps the rule", patch: `{"threshold":-1}`, wantPasses: true},
	}
	for _, tt := range steps {
		t.Run(tt.name, func(t *testing.T) {
			if tt.patch != "" {
				ts.call(t, http.MethodPatch, ruleURL(r.ID), tt.patch, nil)
			}
			if got := passes(t); got != tt.wantPasses {
				t.Errorf("Entry(x) passes = %v, want %v", got, tt.wantPasses)
			}
		})
	}

	t.Run("a block names the rule", func(t *testing.T) {
		ts.call(t, http.MethodPatch, ruleURL(r.ID), `{"threshold":0}`, nil)
		_, blocked := ts.Server.engine.Entry("x")
		if blocked == nil || blocked.Rule() != "x-closed" {
			t.Errorf("Entry(x) = %v, want blocked by x-closed", blocked)
		}
	})
	t.Run("deleted lets it pass", func(t *testing.T) {
		resp, body := ts.call(t, http.MethodDelete, ruleURL(r.ID), nil, nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		if !passes(t) {
			t.Error("Entry(x) is blocked after the rule was deleted")
		}
	})
}

// TestRuleFields: the fields endpoint answers the engine's tables, the
// envelope's and each kind's, and the demo's marks, to any role.
func TestRuleFields(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	resp, body := ts.Do(t, http.MethodGet, "/api/v1/rules/fields", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := decodeStrict[RuleSchema](t, body)
	var kinds []string
	for _, k := range got.Kinds {
		kinds = append(kinds, k.Kind)
	}
	if want := []string{"flow", "circuitBreaker", "hotspot", "authority", "system", "adaptiveConcurrency"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %q, want %q", kinds, want)
	}
	want, err := json.Marshal(RuleSchema{
		Envelope: wire.FieldsOf(wire.EnvelopeFields),
		Kinds: []KindSchema{
			{Kind: "flow", Label: "Flow", Title: "Flow rule", Help: "cap requests per second or calls in flight", Fields: wire.FieldsOf(engine.FlowRuleFields), Summary: engine.FlowKind.Summary},
			{Kind: "circuitBreaker", Label: "Circuit breaker", Title: "Circuit breaker", Help: "stop calls to a failing resource", Fields: wire.FieldsOf(engine.BreakerRuleFields), Summary: engine.CircuitBreakerKind.Summary},
			{Kind: "hotspot", Label: "Hotspot", Title: "Hotspot rule", Help: "limit each value of a parameter apart: per user, per key, per IP", Fields: wire.FieldsOf(engine.HotspotRuleFields), Summary: engine.HotspotKind.Summary},
			{Kind: "authority", Label: "Authority", Title: "Authority rule", Help: "allow or deny callers by their origin", Fields: wire.FieldsOf(engine.AuthorityRuleFields), Summary: engine.AuthorityKind.Summary},
			{Kind: "system", Label: "System", Title: "System rule", Help: "protect the whole process: CPU, load, response time, calls in flight",
				Fields: wire.FieldsOf(engine.SystemRuleFields), NoResource: true, Summary: engine.SystemKind.Summary},
			{Kind: "adaptiveConcurrency", Label: "Adaptive concurrency", Title: "Adaptive concurrency rule", Help: engine.AdaptiveConcurrencyKind.Help,
				Fields: wire.FieldsOf(engine.AdaptiveRuleFields), Summary: engine.AdaptiveConcurrencyKind.Summary},
		},
		Demo: DemoMarks{NamePrefix: "demo-", DescriptionPrefix: "Demo data (sluice --demo): "},
	})
	if err != nil {
		t.Fatal(err)
	}
	var gotValue, wantValue any
	if err := errors.Join(json.Unmarshal(body, &gotValue), json.Unmarshal(want, &wantValue)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotValue, wantValue) {
		t.Errorf("answer\n%s\nwant\n%s", body, want)
	}
	interval, _ := engine.FlowRuleFields.Lookup("maxQueueingTimeMs")
	if interval.AppliesWhen == nil || *interval.AppliesWhen != (engine.Condition{Field: "controlBehavior", Value: "throttling"}) || *interval.Max != engine.MaxQueueingTimeMs {
		t.Errorf("maxQueueingTimeMs: %+v", interval)
	}
}

// checkAnswer is POST /check's answer for resource, as sent.
func (ts *testServer) checkAnswer(t *testing.T, resource string) string {
	t.Helper()
	resp, body := ts.call(t, http.MethodPost, checkPath, fmt.Sprintf(`{"resource":%q}`, resource), nil)
	mustStatus(t, resp, body, http.StatusOK)
	return string(bytes.TrimSpace(body))
}

// TestRuleAppWrites: a rule's app is taken on create, shown by GET,
// changed and cleared by PATCH and PUT, kept in every revision and brought
// back by rollback; a rule with an app is never in the server's own
// engine, so it does not block the server's POST /check on its resource,
// and the same rule without an app does.
func TestRuleAppWrites(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	// The answer goes on with the rule's limit, whose resetMs the real
	// clock's slack moves.
	blocked := `{"allowed":false,"waitMs":0,"reason":"flow","rule":"closed",`
	r := ts.createRule(t, `{"name":"closed","kind":"flow","app":"shop","resource":"orders","threshold":0}`)
	if r.App != "shop" {
		t.Fatalf("created app = %q, want shop", r.App)
	}

	steps := []struct {
		name        string
		method      string
		path        string
		body        string
		wantApp     string
		wantVersion int64
	}{
		{name: "created with an app", wantApp: "shop", wantVersion: 1},
		{name: "PATCH without app keeps it", method: http.MethodPatch, body: `{"description":"x"}`, wantApp: "shop", wantVersion: 2},
		{name: "PATCH app null clears it", method: http.MethodPatch, body: `{"app":null}`, wantVersion: 3},
		{name: "PATCH sets another", method: http.MethodPatch, body: `{"app":"billing"}`, wantApp: "billing", wantVersion: 4},
		{name: "PATCH app empty clears it", method: http.MethodPatch, body: `{"app":""}`, wantVersion: 5},
		{name: "PUT with an app", method: http.MethodPut, body: `{"kind":"flow","app":"shop","resource":"orders","threshold":0}`, wantApp: "shop", wantVersion: 6},
		{name: "PUT without app clears it", method: http.MethodPut, body: `{"kind":"flow","resource":"orders","threshold":0}`, wantVersion: 7},
		{name: "rollback to a version with an app", method: http.MethodPost, path: "/rollback?toVersion=4", wantApp: "billing", wantVersion: 8},
		{name: "rollback to a version without", method: http.MethodPost, path: "/rollback?toVersion=3", wantVersion: 9},
		{name: "rollback to the first", method: http.MethodPost, path: "/rollback?toVersion=1", wantApp: "shop", wantVersion: 10},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.method != "" {
				var body any
				if step.body != "" {
					body = step.body
				}
				resp, got := ts.call(t, step.method, ruleURL(r.ID)+step.path, body, nil)
				mustStatus(t, resp, got, http.StatusOK)
				if answered := jsonObject(t, got); answered["app"] != nil && answered["app"] != step.wantApp || answered["app"] == nil && step.wantApp != "" {
					t.Errorf("answered app %v, want %q", answered["app"], step.wantApp)
				}
			}
			stored, _ := ts.getRule(t, r.ID)
			if stored.App != step.wantApp || stored.Version != step.wantVersion {
				t.Errorf("stored app %q at version %d, want %q at %d", stored.App, stored.Version, step.wantApp, step.wantVersion)
			}
			resp, got := ts.call(t, http.MethodGet, ruleURL(r.ID)+"/revisions?pageSize=1", nil, nil)
			mustStatus(t, resp, got, http.StatusOK)
			if revs := decodeStrict[RevisionList](t, got); len(revs.Items) != 1 || revs.Items[0].Rule.App != step.wantApp {
				t.Errorf("newest revision %+v, want it with app %q", revs.Items, step.wantApp)
			}
			_, inEngine := ts.loadedThresholds()["closed"]
			answer := ts.checkAnswer(t, "orders")
			if step.wantApp != "" && (inEngine || answer != allowed) {
				t.Errorf("with app %s: in the server's engine %v, POST /check %s; want out of it, %s", step.wantApp, inEngine, answer, allowed)
			}
			if step.wantApp == "" && (!inEngine || !strings.HasPrefix(answer, blocked)) {
				t.Errorf("without an app: in the server's engine %v, POST /check %s; want in it, %s…", inEngine, answer, blocked)
			}
		})
	}
}

// TestRuleAppValidation: app is a name of at most 64 lower-case letters,
// digits, ".", "_" and "-", starting and ending with a letter or digit;
// anything else is a 422 naming app, and nothing is stored.
func TestRuleAppValidation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	tests := []struct {
		app    string
		wantOK bool
	}{
		{app: `"a"`, wantOK: true},
		{app: `"shop-2.eu_west"`, wantOK: true},
		{app: `"` + strings.Repeat("a", 64) + `"`, wantOK: true},
		{app: `"` + strings.Repeat("a", 65) + `"`},
		{app: `"Shop"`},
		{app: `"-shop"`},
		{app: `"shop."`},
		{app: `"sh op"`},
		{app: `"shöp"`},
		{app: `7`},
		{app: `["shop"]`},
	}
	for i, tt := range tests {
		t.Run(tt.app, func(t *testing.T) {
			body := fmt.Sprintf(`{"name":"r%d","kind":"flow","resource":"orders","threshold":1,"app":%s}`, i, tt.app)

			resp, got := ts.call(t, http.MethodPost, rulesPath, body, nil)

			if tt.wantOK {
				mustStatus(t, resp, got, http.StatusCreated)
				if want := strings.Trim(tt.app, `"`); decodeStrict[rules.APIRule](t, got).App != want {
					t.Errorf("app answered %s, want %s", got, want)
				}
				return
			}
			wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "app")
			if list := ts.listRules(t, "q="+fmt.Sprintf("r%d", i)); list.Total != 0 {
				t.Errorf("stored %v", ruleNames(list.Items))
			}
		})
	}

	t.Run("PATCH", func(t *testing.T) {
		r := ts.createRule(t, `{"name":"patched","kind":"flow","resource":"orders","threshold":1,"app":"shop"}`)

		resp, got := ts.call(t, http.MethodPatch, ruleURL(r.ID), `{"app":"NOPE"}`, nil)

		wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "app")
		if stored, _ := ts.getRule(t, r.ID); stored.App != "shop" || stored.Version != 1 {
			t.Errorf("stored app %q version %d, want shop 1", stored.App, stored.Version)
		}
	})
	t.Run("apply names the rule", func(t *testing.T) {
		resp, got := ts.call(t, http.MethodPost, applyPath, `{"rules":[{"name":"ok","kind":"flow","resource":"a","threshold":1},{"name":"bad","kind":"flow","resource":"a","threshold":1,"app":"A"}]}`, nil)

		wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[1].app")
	})
}

// TestRuleAppRoundTrips: export writes a rule's app, so export → apply is
// a no-op; apply changes and clears an app as it changes any field, and
// the server's engine follows.
func TestRuleAppRoundTrips(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name":"shop-cap","kind":"flow","app":"shop","resource":"orders","threshold":3}`)
	ts.createRule(t, `{"name":"cap","kind":"flow","resource":"orders","threshold":5}`)

	for _, format := range []string{"json", "yaml"} {
		t.Run("export "+format+" then apply", func(t *testing.T) {
			resp, exported := ts.call(t, http.MethodGet, exportPath+"?format="+format, nil, nil)
			mustStatus(t, resp, exported, http.StatusOK)
			if !bytes.Contains(exported, []byte("shop")) {
				t.Fatalf("the export lost the app:\n%s", exported)
			}
			var header reqHeader
			if format == "yaml" {
				header = yamlHeader
			}

			resp, body := ts.call(t, http.MethodPost, applyPath+"?prune=true", exported, header)

			mustStatus(t, resp, body, http.StatusOK)
			wantPlan(t, decodePlan(t, body), planSummary{unchanged: []string{"cap", "shop-cap"}})
		})
	}

	steps := []struct {
		name        string
		app         string
		wantChange  [2]string
		wantLoaded  map[string]float64
		wantSnapFor map[string][]string
	}{
		{name: "another app", app: `"billing"`, wantChange: [2]string{`"shop"`, `"billing"`},
			wantLoaded: map[string]float64{"cap": 5}, wantSnapFor: map[string][]string{"shop": {"cap"}, "billing": {"shop-cap", "cap"}}},
		{name: "no app", app: `null`, wantChange: [2]string{`"billing"`, `null`},
			wantLoaded: map[string]float64{"cap": 5, "shop-cap": 3}, wantSnapFor: map[string][]string{"shop": {"shop-cap", "cap"}, "billing": {"shop-cap", "cap"}}},
		{name: "an app again", app: `"shop"`, wantChange: [2]string{`null`, `"shop"`},
			wantLoaded: map[string]float64{"cap": 5}, wantSnapFor: map[string][]string{"shop": {"shop-cap", "cap"}, "billing": {"cap"}}},
	}
	for _, step := range steps {
		t.Run("apply "+step.name, func(t *testing.T) {
			file := fmt.Sprintf(`{"rules":[{"name":"shop-cap","kind":"flow","app":%s,"resource":"orders","threshold":3},{"name":"cap","kind":"flow","resource":"orders","threshold":5}]}`, step.app)

			resp, body := ts.call(t, http.MethodPost, applyPath, file, nil)

			mustStatus(t, resp, body, http.StatusOK)
			plan := decodePlan(t, body)
			wantPlan(t, plan, planSummary{updated: []string{"shop-cap"}, unchanged: []string{"cap"}})
			if len(plan.Updated) == 1 {
				if got := changes(t, plan.Updated[0]); !maps.Equal(got, map[string][2]string{"app": step.wantChange}) {
					t.Errorf("changes %v, want app %v", got, step.wantChange)
				}
			}
			if got := ts.loadedThresholds(); !maps.Equal(got, step.wantLoaded) {
				t.Errorf("server engine %v, want %v", got, step.wantLoaded)
			}
			for app, want := range step.wantSnapFor {
				_, snap := ts.getSnapshot(t, "app="+app, nil)
				if got := ruleNames(snap.Rules); !slices.Equal(got, want) {
					t.Errorf("snapshot of %s: %v, want %v", app, got, want)
				}
			}
		})
	}
}
