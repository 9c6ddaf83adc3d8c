package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
)

const (
	checkPath    = "/api/v1/check"
	batchPath    = "/api/v1/check/batch"
	completePath = "/api/v1/complete"
	testLease    = 5 * time.Second
)

// newCheckServer is a test server whose engine runs on a manual clock, with
// the rules given created through the rules API.
func newCheckServer(t *testing.T, rules ...string) (*testServer, *engine.ManualClock) {
	t.Helper()
	clock := engine.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	ts := startServer(t, func(cfg *Config) { cfg.EntryLease = testLease }, nil,
		servertest.EngineOptions(engine.Options{Clock: clock}))
	for _, r := range rules {
		resp, body := ts.call(t, http.MethodPost, rulesPath, r, nil)
		mustStatus(t, resp, body, http.StatusCreated)
	}
	return ts, clock
}

// entryIDField finds the entryId in a check's answer.
var entryIDField = regexp.MustCompile(`"entryId":"([^"]+)"`)

// exchange is one request of a scenario and the answer it must get.
type exchange struct {
	path, body string
	wantStatus int
	// wantBody is the exact answer; with an entryId in it, "{id}" stands
	// for the id, which later bodies may use as "{id}" too.
	wantBody string
}

// run sends the exchanges in order.
func (ts *testServer) run(t *testing.T, exchanges []exchange) {
	t.Helper()
	var id string
	for i, x := range exchanges {
		resp, body := ts.call(t, http.MethodPost, x.path, strings.ReplaceAll(x.body, "{id}", id), nil)
		if resp.StatusCode != x.wantStatus {
			t.Fatalf("#%d %s %s: status = %d, want %d\n%s", i, x.path, x.body, resp.StatusCode, x.wantStatus, body)
		}
		got := string(body)
		if m := entryIDField.FindStringSubmatch(got); m != nil {
			id = m[1]
			got = entryIDField.ReplaceAllLiteralString(got, `"entryId":"{id}"`)
		}
		if x.wantBody != "" && got != x.wantBody {
			t.Errorf("#%d %s %s: body = %s, want %s", i, x.path, x.body, body, x.wantBody)
		}
		if x.wantStatus == http.StatusOK {
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("#%d: Content-Type = %q", i, ct)
			}
		}
	}
}

const (
	allowed    = `{"allowed":true,"waitMs":0}`
	ordersRule = `{"name": "orders-qps", "kind": "flow", "resource": "orders", "threshold": 2}`
	slotsRule  = `{"name": "reports-slots", "kind": "flow", "resource": "reports", "metric": "concurrency", "threshold": 1}`
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		rules     []string
		exchanges []exchange
		// live is each resource's figures over the last second after the
		// exchanges.
		live map[string]engine.LiveStats
	}{
		{
			name: "a resource without rules is allowed",
			exchanges: []exchange{
				{checkPath, `{"resource": "unknown"}`, 200, allowed},
				{checkPath, `{"resource": "unknown", "count": 1000000}`, 200, allowed},
			},
			live: map[string]engine.LiveStats{"unknown": {PassQps: 1000001}},
		},
		{
			name:  "a flow rule blocks",
			rules: []string{ordersRule},
			// The answers tell the rule's limit, what remains after the call
			// and when the window has room: the first pass leaves it in 1 s.
			exchanges: []exchange{
				{checkPath, `{"resource": "orders"}`, 200, `{"allowed":true,"waitMs":0,"limit":2,"intervalMs":1000,"remaining":1,"resetMs":1000}`},
				{checkPath, `{"resource": "orders"}`, 200, `{"allowed":true,"waitMs":0,"limit":2,"intervalMs":1000,"remaining":0,"resetMs":1000}`},
				{checkPath, `{"resource": "orders"}`, 200,
					`{"allowed":false,"waitMs":0,"reason":"flow","rule":"orders-qps","limit":2,"intervalMs":1000,"remaining":0,"resetMs":1000}`},
			},
			live: map[string]engine.LiveStats{"orders": {PassQps: 2, BlockQps: 1}},
		},
		{
			name:  "a count takes its share",
			rules: []string{ordersRule},
			exchanges: []exchange{
				{checkPath, `{"count": 2, "resource": "orders"}`, 200, `{"allowed":true,"waitMs":0,"limit":2,"intervalMs":1000,"remaining":0,"resetMs":1000}`},
				{checkPath, `{"resource": "orders", "count": 1}`, 200,
					`{"allowed":false,"waitMs":0,"reason":"flow","rule":"orders-qps","limit":2,"intervalMs":1000,"remaining":0,"resetMs":1000}`},
			},
			live: map[string]engine.LiveStats{"orders": {PassQps: 2, BlockQps: 1}},
		},
		{
			name: "throttling answers waitMs without waiting",
			rules: []string{`{"name": "emails-pace", "kind": "flow", "resource": "emails", "threshold": 10,
				"controlBehavior": "throttling", "maxQueueingTimeMs": 250}`},
			exchanges: []exchange{
				{checkPath, `{"resource": "emails"}`, 200, allowed},
				{checkPath, `{"resource": "emails"}`, 200, `{"allowed":true,"waitMs":100}`},
				{checkPath, `{"resource": "emails"}`, 200, `{"allowed":true,"waitMs":200}`},
				{checkPath, `{"resource": "emails"}`, 200, `{"allowed":false,"waitMs":0,"reason":"flow","rule":"emails-pace"}`},
			},
			live: map[string]engine.LiveStats{"emails": {PassQps: 3, BlockQps: 1}},
		},
		{
			name:  "a shadow rule lets calls through and counts them",
			rules: []string{`{"name": "beta-cap", "kind": "flow", "resource": "beta", "threshold": 1, "mode": "shadow"}`},
			exchanges: []exchange{
				{checkPath, `{"resource": "beta"}`, 200, allowed},
				{checkPath, `{"resource": "beta"}`, 200, allowed},
				{checkPath, `{"resource": "beta"}`, 200, allowed},
			},
			live: map[string]engine.LiveStats{"beta": {PassQps: 3, ShadowBlockQps: 2}},
		},
		{
			name: "an open circuit breaker blocks",
			rules: []string{`{"name": "pay-errors", "kind": "circuitBreaker", "resource": "pay", "strategy": "errorCount",
				"threshold": 2, "minRequestAmount": 2, "retryTimeoutMs": 5000}`},
			exchanges: []exchange{
				{checkPath, `{"resource": "pay"}`, 200, allowed},
				{completePath, `{"resource": "pay", "rtMs": 10, "error": true}`, 204, ""},
				{checkPath, `{"resource": "pay"}`, 200, allowed},
				{completePath, `{"resource": "pay", "rtMs": 10, "error": true}`, 204, ""},
				{checkPath, `{"resource": "pay"}`, 200, `{"allowed":false,"waitMs":0,"reason":"circuitBreaker","rule":"pay-errors"}`},
			},
			live: map[string]engine.LiveStats{"pay": {PassQps: 2, BlockQps: 1, CompleteQps: 2, ErrorQps: 2, AvgRtMs: 10}},
		},
		{
			name:  "a concurrency rule holds an entry until complete",
			rules: []string{slotsRule},
			exchanges: []exchange{
				{checkPath, `{"resource": "reports"}`, 200, `{"allowed":true,"waitMs":0,"entryId":"{id}"}`},
				{checkPath, `{"resource": "reports"}`, 200, `{"allowed":false,"waitMs":0,"reason":"concurrency","rule":"reports-slots"}`},
				{completePath, `{"entryId": "{id}", "rtMs": 40}`, 204, ""},
				{checkPath, `{"resource": "reports"}`, 200, `{"allowed":true,"waitMs":0,"entryId":"{id}"}`},
				{completePath, `{"entryId": "{id}", "resource": "reports", "count": 1, "rtMs": 20, "error": true}`, 204, ""},
			},
			live: map[string]engine.LiveStats{"reports": {PassQps: 2, BlockQps: 1, CompleteQps: 2, ErrorQps: 1, AvgRtMs: 30}},
		},
		{
			name:  "a complete that does not match its entry leaves it held",
			rules: []string{slotsRule},
			exchanges: []exchange{
				{checkPath, `{"resource": "reports", "count": 1}`, 200, `{"allowed":true,"waitMs":0,"entryId":"{id}"}`},
				{completePath, `{"entryId": "{id}", "resource": "orders", "count": 2}`, 422, ""},
				{checkPath, `{"resource": "reports"}`, 200, `{"allowed":false,"waitMs":0,"reason":"concurrency","rule":"reports-slots"}`},
				{completePath, `{"entryId": "{id}"}`, 204, ""},
			},
			live: map[string]engine.LiveStats{"reports": {PassQps: 1, BlockQps: 1, CompleteQps: 1}},
		},
		{
			name: "complete without an entry records the outcome",
			exchanges: []exchange{
				{completePath, `{"resource": "payments", "rtMs": 40, "error": true}`, 204, ""},
				{completePath, `{"resource": "payments", "count": 3, "rtMs": 20, "error": false}`, 204, ""},
			},
			live: map[string]engine.LiveStats{"payments": {CompleteQps: 4, ErrorQps: 1, AvgRtMs: 25}},
		},
		{
			name:  "a batch is answered in order",
			rules: []string{ordersRule, slotsRule},
			exchanges: []exchange{
				{batchPath, `{"checks": [{"resource": "free"}, {"resource": "orders"}, {"resource": "orders", "count": 2},
					{"resource": "orders"}, {"resource": "reports"}, {"resource": "reports"}]}`, 200, ""},
			},
			live: map[string]engine.LiveStats{
				"free":    {PassQps: 1},
				"orders":  {PassQps: 2, BlockQps: 2},
				"reports": {PassQps: 1, BlockQps: 1, Concurrency: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, _ := newCheckServer(t, tt.rules...)

			ts.run(t, tt.exchanges)

			for name, want := range tt.live {
				if got := ts.engine.Resource(name).Live(); got != want {
					t.Errorf("%s: %+v, want %+v", name, got, want)
				}
			}
		})
	}
}

func TestCheckBatchResults(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t, ordersRule, slotsRule)
	resp, body := ts.call(t, http.MethodPost, batchPath, `{"checks": [{"resource": "free"}, {"resource": "orders"},
		{"resource": "orders", "count": 2}, {"resource": "orders"}, {"resource": "reports"}, {"resource": "reports"}]}`, nil)
	mustStatus(t, resp, body, http.StatusOK)

	got := decodeStrict[CheckBatchResponse](t, body).Results
	// Each result tells its limit as a check would: the orders rule's
	// remaining count down, and the blocked count of 2 did not take any.
	orders := func(remaining int64) checkLimit { return checkLimit{2, 1000, remaining, 1000} }
	blocked := CheckResult{Reason: "flow", Rule: "orders-qps"}
	want := []struct {
		result CheckResult
		limit  *checkLimit
	}{
		{CheckResult{Allowed: true}, nil},
		{CheckResult{Allowed: true}, ptr(orders(1))},
		{blocked, ptr(orders(1))},
		{CheckResult{Allowed: true}, ptr(orders(0))},
		{CheckResult{Allowed: true, EntryID: "?"}, nil},
		{CheckResult{Reason: "concurrency", Rule: "reports-slots"}, nil},
	}
	if len(got) != len(want) {
		t.Fatalf("results = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		if w.result.EntryID == "?" && got[i].EntryID != "" {
			w.result.EntryID = got[i].EntryID
		}
		limit := limitOf(got[i])
		got[i].Limit, got[i].IntervalMs, got[i].Remaining, got[i].ResetMs = nil, nil, nil, nil
		if got[i] != w.result || !equalPtr(limit, w.limit) {
			t.Errorf("results[%d] = %+v with limit %v, want %+v with %v", i, got[i], limit, w.result, w.limit)
		}
	}
}

func TestEntryLeaseExpires(t *testing.T) {
	t.Parallel()
	ts, clock := newCheckServer(t, slotsRule)
	reports := ts.engine.Resource("reports")
	resp, body := ts.call(t, http.MethodPost, checkPath, `{"resource": "reports"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	id := decodeStrict[CheckResult](t, body).EntryID
	if id == "" {
		t.Fatalf("no entryId in %s", body)
	}

	clock.Advance(testLease.Milliseconds() - 1)
	if n := ts.entries.Expire(); n != 0 {
		t.Fatalf("expired %d entries before the lease ran out", n)
	}
	clock.Advance(1)
	if n := ts.entries.Expire(); n != 1 {
		t.Fatalf("expired %d entries when the lease ran out, want 1", n)
	}

	if live := reports.Live(); live.Concurrency != 0 || live.CompleteQps != 1 || live.ErrorQps != 1 {
		t.Errorf("after the lease: %+v, want the entry released as a completed error", live)
	}
	resp, body = ts.call(t, http.MethodPost, completePath, fmt.Sprintf(`{"entryId": %q, "rtMs": 1}`, id), nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "lease") {
		t.Errorf("complete after the lease: %d %s, want 409 naming the lease", resp.StatusCode, body)
	}
	resp, body = ts.call(t, http.MethodPost, checkPath, `{"resource": "reports"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if r := decodeStrict[CheckResult](t, body); !r.Allowed {
		t.Errorf("a check after the lease = %s, want allowed: the slot is free", body)
	}

	// The expired id is remembered for one more lease, then forgotten;
	// the second check's entry expires meanwhile.
	clock.Advance(testLease.Milliseconds())
	if n := ts.entries.Expire(); n != 1 {
		t.Errorf("expired %d entries a lease later, want 1 (the second check's)", n)
	}
	resp, body = ts.call(t, http.MethodPost, completePath, fmt.Sprintf(`{"entryId": %q, "rtMs": 1}`, id), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("complete long after the lease: %d %s, want 404", resp.StatusCode, body)
	}
	if n := ts.entries.Held(); n != 0 {
		t.Errorf("%d entries held, want 0", n)
	}
}

func TestCheckErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("r", 257)
	keys := make([]string, 33)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d": "v"`, i)
	}
	params33 := `{"resource": "a", "params": {` + strings.Join(keys, ", ") + `}}`
	params32 := `{"resource": "a", "params": {` + strings.Join(keys[:32], ", ") + `}}`
	many := `{"checks": [` + strings.TrimSuffix(strings.Repeat(`{"resource": "a"},`, 1001), ",") + `]}`
	tests := []struct {
		name       string
		path, body string
		wantStatus int
		wantFields []string
	}{
		{"not JSON", checkPath, `{"resource":`, 400, nil},
		{"not an object", checkPath, `["orders"]`, 422, []string{"body"}},
		{"empty body", checkPath, ``, 400, nil},
		{"two values", checkPath, `{"resource": "a"} {"resource": "b"}`, 400, nil},
		{"no resource", checkPath, `{}`, 422, []string{"resource"}},
		{"null resource", checkPath, `{"resource": null}`, 422, []string{"resource"}},
		{"empty resource", checkPath, `{"resource": ""}`, 422, []string{"resource"}},
		{"resource too long", checkPath, `{"resource": "` + long + `"}`, 422, []string{"resource"}},
		{"resource with a control character", checkPath, `{"resource": "a\u0007b"}`, 422, []string{"resource"}},
		{"resource of the wrong type", checkPath, `{"resource": 5}`, 422, []string{"resource"}},
		{"unknown field", checkPath, `{"resource": "a", "Count": 2}`, 422, []string{"Count"}},
		{"count as a string", checkPath, `{"resource": "a", "count": "2"}`, 422, []string{"count"}},
		{"count zero", checkPath, `{"resource": "a", "count": 0}`, 422, []string{"count"}},
		{"count over the limit", checkPath, `{"resource": "a", "count": 1000001}`, 422, []string{"count"}},
		{"fractional count", checkPath, `{"resource": "a", "count": 1.5}`, 422, []string{"count"}},
		{"every bad field", checkPath, `{"resource": "", "count": -1, "x": 1}`, 422, []string{"resource", "count", "x"}},
		{"origin too long", checkPath, `{"resource": "a", "origin": "` + long + `"}`, 422, []string{"origin"}},
		{"origin of 257 wide characters", checkPath, `{"resource": "a", "origin": "` + strings.Repeat("é", 257) + `"}`, 422, []string{"origin"}},
		{"empty origin", checkPath, `{"resource": "a", "origin": ""}`, 422, []string{"origin"}},
		{"origin a number", checkPath, `{"resource": "a", "origin": 7}`, 422, []string{"origin"}},
		{"33 params", checkPath, params33, 422, []string{"params"}},
		{"a param value of 257 characters", checkPath, `{"resource": "a", "params": {"user": "` + long + `"}}`, 422, []string{"params.user"}},
		{"a param value a number", checkPath, `{"resource": "a", "params": {"user": 42}}`, 422, []string{"params.user"}},
		{"a param value null", checkPath, `{"resource": "a", "params": {"user": null}}`, 422, []string{"params.user"}},
		{"params a list", checkPath, `{"resource": "a", "params": ["user"]}`, 422, []string{"params"}},
		{"params a string", checkPath, `{"resource": "a", "params": "user=1"}`, 422, []string{"params"}},
		{"a param twice", checkPath, `{"resource": "a", "params": {"user": "1", "user": "2"}}`, 400, []string{"params.user"}},
		{"prioritized a string", checkPath, `{"resource": "a", "prioritized": "yes"}`, 422, []string{"prioritized"}},
		{"every new field bad", checkPath, `{"resource": "a", "origin": "", "prioritized": 1, "params": {"a": 1, "b": "` + long + `"}}`, 422,
			[]string{"origin", "prioritized", "params.a", "params.b"}},
		{"body over 1 MiB", checkPath, `{"resource": "` + strings.Repeat("a", maxBodyBytes) + `"}`, 413, nil},
		{"batch not JSON", batchPath, `{"checks": [`, 400, nil},
		{"batch without checks", batchPath, `{}`, 422, []string{"checks"}},
		{"batch with a misspelt field", batchPath, `{"check": []}`, 422, []string{"checks", "check"}},
		{"batch of no checks", batchPath, `{"checks": []}`, 422, []string{"checks"}},
		{"batch of 1001 checks", batchPath, many, 422, []string{"checks"}},
		{"batch checks not a list", batchPath, `{"checks": {"resource": "a"}}`, 422, []string{"checks"}},
		{"batch check not an object", batchPath, `{"checks": [{"resource": "a"}, 7]}`, 422, []string{"checks[1]"}},
		{"batch with bad checks", batchPath, `{"checks": [{"resource": "a"}, {"resource": 5}, {"resource": "b", "count": 0}]}`, 422,
			[]string{"checks[1].resource", "checks[2].count"}},
		{"batch with bad values", batchPath, `{"checks": [{"resource": ""}, {"resource": "b", "count": 0}]}`, 422,
			[]string{"checks[0].resource", "checks[1].count"}},
		{"batch with bad new fields", batchPath, `{"checks": [{"resource": "a", "params": {"u": "1"}}, {"resource": "a", "params": {"u": 1}}, {"resource": "a", "origin": "` + long + `"}]}`, 422,
			[]string{"checks[1].params.u", "checks[2].origin"}},
		{"batch with bad new values", batchPath, `{"checks": [{"resource": "a", "params": {"u": "` + long + `"}}, {"resource": "a", "origin": "o"}]}`, 422,
			[]string{"checks[0].params.u"}},
		{"32 params are fine", checkPath, params32, 200, nil},
		{"complete not JSON", completePath, `nope`, 400, nil},
		{"complete without resource or rtMs", completePath, `{}`, 422, []string{"resource", "rtMs"}},
		{"complete with a negative rtMs", completePath, `{"resource": "a", "rtMs": -1}`, 422, []string{"rtMs"}},
		{"complete with an empty entryId", completePath, `{"entryId": ""}`, 422, []string{"entryId"}},
		{"complete with a bad error flag", completePath, `{"resource": "a", "rtMs": 1, "error": "yes"}`, 422, []string{"error"}},
		{"complete with a bad count", completePath, `{"resource": "a", "rtMs": 1, "count": 0}`, 422, []string{"count"}},
		{"complete with an unknown field", completePath, `{"resource": "a", "rtMs": 1, "ok": true}`, 422, []string{"ok"}},
	}
	ts, _ := newCheckServer(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodPost, tt.path, tt.body, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d\n%s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus == http.StatusOK {
				return
			}
			e := decodeEnvelope(t, resp, body)
			var fields []string
			for _, d := range e.Details {
				fields = append(fields, d.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tt.wantFields, ",") {
				t.Errorf("details name %q, want %q (%s)", fields, tt.wantFields, body)
			}
		})
	}
}

func TestAPIRoutesAreGuarded(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t, `{"name": "rule-reads", "kind": "flow", "resource": "GET /api/v1/rules/:id", "threshold": 1}`)
	// Admins are never blocked by rules on the API (TestAdminsAreNotLockedOut):
	// read as a viewer.
	resp, body := ts.call(t, http.MethodPost, "/api/v1/tokens", `{"name": "reader", "role": "viewer"}`, nil)
	mustStatus(t, resp, body, http.StatusCreated)
	var reader NewAPIToken
	if err := json.Unmarshal(body, &reader); err != nil {
		t.Fatal(err)
	}
	asReader := reqHeader{"Authorization": "Bearer " + reader.Token}

	resp, body = ts.call(t, http.MethodGet, rulesPath+"/1", nil, asReader)
	mustStatus(t, resp, body, http.StatusOK)
	resp, body = ts.call(t, http.MethodGet, rulesPath+"/2", nil, asReader)
	mustStatus(t, resp, body, http.StatusTooManyRequests)
	if e := decodeEnvelope(t, resp, body); e.Code != "too_many_requests" || !strings.Contains(e.Message, "rule-reads") {
		t.Errorf("block answer = %+v, want too_many_requests naming rule-reads", e)
	}
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	for range 3 {
		resp, body = ts.call(t, http.MethodGet, "/api/v1/health", nil, nil)
		mustStatus(t, resp, body, http.StatusOK)
	}
	resp, body = ts.call(t, http.MethodGet, "/api/v1/no-such-route", nil, nil)
	mustStatus(t, resp, body, http.StatusNotFound)

	names := map[string]bool{}
	for _, r := range ts.engine.Resources() {
		names[r.Name()] = true
	}
	for name, want := range map[string]bool{
		"POST /api/v1/rules": true, "GET /api/v1/rules/:id": true,
		"GET /api/v1/health": false, "GET /api/v1/rules/2": false, "GET /api/v1/no-such-route": false,
	} {
		if names[name] != want {
			t.Errorf("resource %q known: %v, want %v (all: %v)", name, names[name], want, names)
		}
	}
	if live := ts.engine.Resource("POST /api/v1/rules").Live(); live.PassQps != 1 || live.CompleteQps != 1 {
		t.Errorf("POST /api/v1/rules: %+v, want the rule's creation counted", live)
	}
}

func TestUnguardedAPIIsNotCounted(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(cfg *Config) { cfg.UnguardedAPI = true }, nil)
	resp, body := ts.call(t, http.MethodPost, rulesPath, ordersRule, nil)
	mustStatus(t, resp, body, http.StatusCreated)
	resp, body = ts.call(t, http.MethodPost, checkPath, `{"resource": "orders"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)

	for _, r := range ts.engine.Resources() {
		if r.Name() != "orders" {
			t.Errorf("the engine counts %q", r.Name())
		}
	}
}

// checkEntry checks one call to resource, which must be allowed, and
// returns the entryId answered, "" if none.
func (ts *testServer) checkEntry(t *testing.T, resource string) string {
	t.Helper()
	resp, body := ts.call(t, http.MethodPost, checkPath, fmt.Sprintf(`{"resource": %q}`, resource), nil)
	mustStatus(t, resp, body, http.StatusOK)
	r := decodeStrict[CheckResult](t, body)
	if !r.Allowed {
		t.Fatalf("check of %s: %s, want allowed", resource, body)
	}
	return r.EntryID
}

// completeError sends a complete that must fail with status and returns
// its error.
func (ts *testServer) completeError(t *testing.T, body string, status int) ErrorBody {
	t.Helper()
	resp, got := ts.call(t, http.MethodPost, completePath, body, nil)
	mustStatus(t, resp, got, status)
	return decodeEnvelope(t, resp, got)
}

// wantLive fails unless resource's figures over the last second are want.
func (ts *testServer) wantLive(t *testing.T, resource string, want engine.LiveStats) {
	t.Helper()
	if got := ts.engine.Resource(resource).Live(); got != want {
		t.Errorf("%s: %+v, want %+v", resource, got, want)
	}
}

// wantEntryIDRequired fails unless a complete of resource without entryId
// answers 422 naming entryId alone.
func (ts *testServer) wantEntryIDRequired(t *testing.T, resource string) {
	t.Helper()
	e := ts.completeError(t, fmt.Sprintf(`{"resource": %q, "rtMs": 5}`, resource), http.StatusUnprocessableEntity)
	if e.Code != "validation_failed" || len(e.Details) != 1 || e.Details[0].Field != "entryId" ||
		!strings.Contains(e.Details[0].Message, resource) {
		t.Errorf("complete without entryId: %+v, want validation_failed naming entryId and %s", e, resource)
	}
}

func TestCompleteWithoutEntryID(t *testing.T) {
	t.Parallel()
	createSlots := func(t *testing.T, ts *testServer) int64 {
		t.Helper()
		resp, body := ts.call(t, http.MethodPost, rulesPath, slotsRule, nil)
		mustStatus(t, resp, body, http.StatusCreated)
		var rule struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(body, &rule); err != nil {
			t.Fatal(err)
		}
		return rule.ID
	}
	t.Run("is 422 while a concurrency rule's entry is held", func(t *testing.T) {
		ts, _ := newCheckServer(t, slotsRule)
		id := ts.checkEntry(t, "reports")
		if id == "" {
			t.Fatal("a concurrency rule's check answered no entryId")
		}

		ts.wantEntryIDRequired(t, "reports")
		ts.wantLive(t, "reports", engine.LiveStats{PassQps: 1, Concurrency: 1}) // nothing recorded, the slot still taken

		resp, body := ts.call(t, http.MethodPost, completePath, fmt.Sprintf(`{"entryId": %q, "rtMs": 5}`, id), nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		ts.wantLive(t, "reports", engine.LiveStats{PassQps: 1, CompleteQps: 1, AvgRtMs: 5})
	})
	t.Run("is 422 when the rule was removed after the check", func(t *testing.T) {
		ts, _ := newCheckServer(t)
		ruleID := createSlots(t, ts)
		id := ts.checkEntry(t, "reports")
		resp, body := ts.call(t, http.MethodDelete, fmt.Sprintf("%s/%d", rulesPath, ruleID), nil, nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		if later := ts.checkEntry(t, "reports"); later != "" {
			t.Fatalf("a check without a concurrency rule answered entryId %q", later)
		}

		// The first check was answered an id, and its entry is held:
		// still owed back, or it would end again as an error at its lease.
		ts.wantEntryIDRequired(t, "reports")

		resp, body = ts.call(t, http.MethodPost, completePath, fmt.Sprintf(`{"entryId": %q, "rtMs": 5}`, id), nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		resp, body = ts.call(t, http.MethodPost, completePath, `{"resource": "reports", "rtMs": 15}`, nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		ts.wantLive(t, "reports", engine.LiveStats{PassQps: 2, CompleteQps: 2, AvgRtMs: 10})
		ts.wantNothingHeld(t, "reports")
	})
	t.Run("is accepted when the rule was added after the check", func(t *testing.T) {
		ts, _ := newCheckServer(t)
		if id := ts.checkEntry(t, "reports"); id != "" {
			t.Fatalf("a check without rules answered entryId %q", id)
		}
		createSlots(t, ts)

		resp, body := ts.call(t, http.MethodPost, completePath, `{"resource": "reports", "rtMs": 5}`, nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		ts.wantLive(t, "reports", engine.LiveStats{PassQps: 1, CompleteQps: 1, AvgRtMs: 5})

		// Once a check is answered an id, the calls cannot be told apart.
		if id := ts.checkEntry(t, "reports"); id == "" {
			t.Fatal("a concurrency rule's check answered no entryId")
		}
		ts.wantEntryIDRequired(t, "reports")
	})
	t.Run("of another resource is accepted", func(t *testing.T) {
		ts, _ := newCheckServer(t, slotsRule)
		ts.checkEntry(t, "reports")
		resp, body := ts.call(t, http.MethodPost, completePath, `{"resource": "orders", "rtMs": 5}`, nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		ts.wantLive(t, "orders", engine.LiveStats{CompleteQps: 1, AvgRtMs: 5})
	})
}

func TestCompleteEntryIDErrors(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t, slotsRule)
	id := ts.checkEntry(t, "reports")
	resp, body := ts.call(t, http.MethodPost, completePath, fmt.Sprintf(`{"entryId": %q, "rtMs": 5}`, id), nil)
	mustStatus(t, resp, body, http.StatusNoContent)

	if e := ts.completeError(t, fmt.Sprintf(`{"entryId": %q, "rtMs": 5}`, id), http.StatusConflict); e.Code != "conflict" ||
		!strings.Contains(e.Message, "completed already") {
		t.Errorf("completed twice: %+v, want conflict, completed already", e)
	}
	if e := ts.completeError(t, `{"entryId": "no-such-entry", "rtMs": 5}`, http.StatusNotFound); e.Code != "not_found" ||
		!strings.Contains(e.Message, "no-such-entry") {
		t.Errorf("unknown id: %+v, want not_found naming the id", e)
	}
	ts.wantLive(t, "reports", engine.LiveStats{PassQps: 1, CompleteQps: 1, AvgRtMs: 5})
}

func TestBreakerProbeOverHTTP(t *testing.T) {
	t.Parallel()
	const payBlocked = `{"allowed":false,"waitMs":0,"reason":"circuitBreaker","rule":"pay-errors"}`
	breakerRule := func(probeNum int) string {
		return fmt.Sprintf(`{"name": "pay-errors", "kind": "circuitBreaker", "resource": "pay", "strategy": "errorCount",
			"threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 5000, "probeNum": %d}`, probeNum)
	}
	// halfOpen opens the breaker with an errored call, waits out its retry
	// timeout and checks once: the probe, whose entryId it returns.
	halfOpen := func(t *testing.T, rules ...string) (*testServer, *engine.ManualClock, string) {
		t.Helper()
		ts, clock := newCheckServer(t, rules...)
		outcome := `{"resource": "pay", "rtMs": 10, "error": true}`
		if id := ts.checkEntry(t, "pay"); id != "" {
			outcome = fmt.Sprintf(`{"entryId": %q, "rtMs": 10, "error": true}`, id)
		}
		resp, body := ts.call(t, http.MethodPost, completePath, outcome, nil)
		mustStatus(t, resp, body, http.StatusNoContent)
		ts.run(t, []exchange{{checkPath, `{"resource": "pay"}`, 200, payBlocked}})
		clock.Advance(5000)
		probe := ts.checkEntry(t, "pay")
		if probe == "" {
			t.Fatal("the probe was answered no entryId")
		}
		ts.wantState(t, engine.BreakerHalfOpen)
		return ts, clock, probe
	}
	complete := func(t *testing.T, ts *testServer, body string) {
		t.Helper()
		resp, got := ts.call(t, http.MethodPost, completePath, body, nil)
		mustStatus(t, resp, got, http.StatusNoContent)
	}
	t.Run("its entryId closes it", func(t *testing.T) {
		ts, _, probe := halfOpen(t, breakerRule(1))
		ts.run(t, []exchange{
			{checkPath, `{"resource": "pay"}`, 200, payBlocked}, // the one probe is in flight
			{completePath, fmt.Sprintf(`{"entryId": %q, "rtMs": 12}`, probe), 204, ""},
			{checkPath, `{"resource": "pay"}`, 200, allowed},
		})
		ts.wantState(t, engine.BreakerClosed)
	})
	t.Run("a complete without entryId closes it", func(t *testing.T) {
		ts, _, probe := halfOpen(t, breakerRule(1))
		complete(t, ts, `{"resource": "pay", "count": 2, "rtMs": 12}`)
		ts.wantState(t, engine.BreakerClosed)
		ts.wantNothingHeld(t, "pay")
		ts.wantLive(t, "pay", engine.LiveStats{PassQps: 1, CompleteQps: 2, AvgRtMs: 12})

		// The probe's own id comes too late: its entry was ended, and this
		// outcome is not recorded twice.
		e := ts.completeError(t, fmt.Sprintf(`{"entryId": %q, "rtMs": 30, "error": true}`, probe), http.StatusConflict)
		if e.Code != "conflict" || !strings.Contains(e.Message, "without entryId") {
			t.Errorf("the probe's id after its outcome: %+v, want conflict naming the complete without entryId", e)
		}
		ts.wantLive(t, "pay", engine.LiveStats{PassQps: 1, CompleteQps: 2, AvgRtMs: 12})
		ts.wantState(t, engine.BreakerClosed)
		ts.run(t, []exchange{{checkPath, `{"resource": "pay"}`, 200, allowed}})
	})
	t.Run("an errored complete without entryId re-opens it", func(t *testing.T) {
		ts, clock, _ := halfOpen(t, breakerRule(1))
		complete(t, ts, `{"resource": "pay", "rtMs": 12, "error": true}`)
		ts.wantState(t, engine.BreakerOpen)
		ts.wantLive(t, "pay", engine.LiveStats{PassQps: 1, CompleteQps: 1, ErrorQps: 1, AvgRtMs: 12})
		ts.run(t, []exchange{{checkPath, `{"resource": "pay"}`, 200, payBlocked}})

		clock.Advance(5000)
		if probe := ts.checkEntry(t, "pay"); probe == "" {
			t.Fatal("the next probe was answered no entryId")
		}
		complete(t, ts, `{"resource": "pay", "rtMs": 12}`)
		ts.wantState(t, engine.BreakerClosed)
		ts.wantNothingHeld(t, "pay")
	})
	t.Run("each complete without entryId ends one probe, the oldest", func(t *testing.T) {
		ts, _, first := halfOpen(t, breakerRule(3))
		second, third := ts.checkEntry(t, "pay"), ts.checkEntry(t, "pay")
		ts.run(t, []exchange{{checkPath, `{"resource": "pay"}`, 200, payBlocked}})

		complete(t, ts, fmt.Sprintf(`{"entryId": %q, "rtMs": 10}`, second))
		complete(t, ts, `{"resource": "pay", "rtMs": 20}`) // the first's outcome
		ts.wantState(t, engine.BreakerHalfOpen)            // two of three probes reported
		complete(t, ts, `{"resource": "pay", "rtMs": 30}`) // the third's
		ts.wantState(t, engine.BreakerClosed)
		ts.wantNothingHeld(t, "pay")
		for _, id := range []string{first, third} {
			ts.completeError(t, fmt.Sprintf(`{"entryId": %q, "rtMs": 12}`, id), http.StatusConflict)
		}
		ts.wantLive(t, "pay", engine.LiveStats{PassQps: 3, BlockQps: 1, CompleteQps: 3, AvgRtMs: 20})
	})
	t.Run("an unreported probe's lease re-opens it", func(t *testing.T) {
		ts, clock, probe := halfOpen(t, breakerRule(1))
		clock.Advance(testLease.Milliseconds())
		ts.entries.Expire() // or the table's own sweep, whichever comes first
		pollUntil(t, "the probe's lease to end", 5*time.Second, func() bool {
			return ts.engine.Breakers()[0].State == engine.BreakerOpen
		})
		ts.wantLive(t, "pay", engine.LiveStats{CompleteQps: 1, ErrorQps: 1, AvgRtMs: float64(testLease.Milliseconds())})
		ts.wantNothingHeld(t, "pay")
		e := ts.completeError(t, fmt.Sprintf(`{"entryId": %q, "rtMs": 12}`, probe), http.StatusConflict)
		if !strings.Contains(e.Message, "lease") {
			t.Errorf("the probe's id after its lease: %+v, want conflict naming the lease", e)
		}
	})
	t.Run("a concurrency rule's probe needs its entryId", func(t *testing.T) {
		ts, _, probe := halfOpen(t, breakerRule(1),
			`{"name": "pay-slots", "kind": "flow", "resource": "pay", "metric": "concurrency", "threshold": 5}`)
		ts.wantEntryIDRequired(t, "pay")
		ts.wantState(t, engine.BreakerHalfOpen)
		complete(t, ts, fmt.Sprintf(`{"entryId": %q, "rtMs": 12}`, probe))
		ts.wantState(t, engine.BreakerClosed)
		ts.wantNothingHeld(t, "pay")
	})
}

// wantState fails unless the server's only breaker is in state want.
func (ts *testServer) wantState(t *testing.T, want engine.BreakerState) {
	t.Helper()
	if got := ts.engine.Breakers()[0].State; got != want {
		t.Errorf("breaker %s, want %s", got, want)
	}
}

// wantNothingHeld fails unless the check API holds no entry, for any
// resource, and resource has no call in flight.
func (ts *testServer) wantNothingHeld(t *testing.T, resource string) {
	t.Helper()
	if held := ts.entries.Held(); held != 0 {
		t.Errorf("%d entries held, want none", held)
	}
	if c := ts.engine.Resource(resource).Live().Concurrency; c != 0 {
		t.Errorf("%s: %d calls in flight, want 0", resource, c)
	}
}

// TestCheckOriginAndPriority: a check's origin reaches flow rules with a
// limitApp, and a prioritized check borrows from the coming window.
func TestCheckOriginAndPriority(t *testing.T) {
	t.Parallel()
	ts, clock := newCheckServer(t,
		`{"name":"app-a-cap","kind":"flow","resource":"orders","threshold":1,"limitApp":"app-a"}`,
		`{"name":"pay-cap","kind":"flow","resource":"pay","threshold":1}`)
	ts.run(t, []exchange{
		{checkPath, `{"resource":"orders","origin":"app-a"}`, 200, allowed},
		{checkPath, `{"resource":"orders","origin":"app-a"}`, 200, `{"allowed":false,"waitMs":0,"reason":"flow","rule":"app-a-cap"}`},
		{checkPath, `{"resource":"orders","origin":"app-b"}`, 200, allowed},
		{checkPath, `{"resource":"orders","origin":"app-b"}`, 200, allowed},
		{checkPath, `{"resource":"orders"}`, 200, allowed},
		{checkPath, `{"resource":"pay"}`, 200, `{"allowed":true,"waitMs":0,"limit":1,"intervalMs":1000,"remaining":0,"resetMs":1000}`},
	})
	// The pass leaves the window 1000 ms after it: 400 ms from now, within
	// the 500 ms a prioritized call may wait.
	clock.Advance(600)
	ts.run(t, []exchange{
		{checkPath, `{"resource":"pay","prioritized":false}`, 200,
			`{"allowed":false,"waitMs":0,"reason":"flow","rule":"pay-cap","limit":1,"intervalMs":1000,"remaining":0,"resetMs":400}`},
		// The borrowed pass is marked when its wait ends, 400 ms from now.
		{checkPath, `{"resource":"pay","prioritized":true}`, 200, `{"allowed":true,"waitMs":400,"limit":1,"intervalMs":1000,"remaining":0,"resetMs":1400}`},
		{checkPath, `{"resource":"pay","prioritized":true}`, 200,
			`{"allowed":false,"waitMs":0,"reason":"flow","rule":"pay-cap","limit":1,"intervalMs":1000,"remaining":0,"resetMs":1400}`},
	})
}

// checkLimit is the limit a check's answer tells.
type checkLimit struct {
	limit, intervalMs, remaining, resetMs int64
}

// limitOf is the limit r tells: nil when it has none, and -1 for a field
// it lacks of them.
func limitOf(r CheckResult) *checkLimit {
	if r.Limit == nil && r.IntervalMs == nil && r.Remaining == nil && r.ResetMs == nil {
		return nil
	}
	val := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	return &checkLimit{val(r.Limit), val(r.IntervalMs), val(r.Remaining), val(r.ResetMs)}
}

func ptr[T any](v T) *T { return &v }

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// TestCheckRateLimitHeaders: a single check's answer carries the
// rate-limit headers the request asks for with ?headers=, telling what its
// JSON tells (the draft's policy named after the rule, which editors may
// know); a per-value (hotspot) limit tells the value's numbers; a resource
// without a window rule gets none; an unknown style is 400 naming headers,
// before anything is counted.
func TestCheckRateLimitHeaders(t *testing.T) {
	t.Parallel()
	ts, clock := newCheckServer(t,
		`{"name":"search-per-minute","kind":"flow","resource":"search","threshold":100,"statIntervalMs":60000}`,
		`{"name":"per-user","kind":"hotspot","resource":"search","paramKey":"user","threshold":2,"statIntervalMs":60000,"specificItems":{"vip":5}}`)
	names := []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"}
	tests := []struct {
		query, body string
		advanceMs   int64
		wantBody    string
		want        map[string]string
	}{
		{"?headers=draft", `{"resource":"search","params":{"user":"a"}}`, 0,
			`{"allowed":true,"waitMs":0,"limit":2,"intervalMs":60000,"remaining":1,"resetMs":60000}`,
			map[string]string{"RateLimit-Policy": `"per-user";q=2;w=60`, "RateLimit": `"per-user";r=1;t=60`}},
		{"?headers=x-ratelimit", `{"resource":"search","params":{"user":"vip"}}`, 0,
			`{"allowed":true,"waitMs":0,"limit":5,"intervalMs":60000,"remaining":4,"resetMs":60000}`,
			map[string]string{"X-RateLimit-Limit": "5, 5;w=60", "X-RateLimit-Remaining": "4", "X-RateLimit-Reset": "60"}},
		{"", `{"resource":"search","params":{"user":"a"}}`, 20_500,
			`{"allowed":true,"waitMs":0,"limit":2,"intervalMs":60000,"remaining":0,"resetMs":39500}`, nil},
		// Blocked: still 200, so no Retry-After; resetMs and t tell when
		// the call would fit.
		{"?headers=draft", `{"resource":"search","params":{"user":"a"}}`, 0,
			`{"allowed":false,"waitMs":0,"reason":"hotspot","rule":"per-user","limit":2,"intervalMs":60000,"remaining":0,"resetMs":39500}`,
			map[string]string{"RateLimit-Policy": `"per-user";q=2;w=60`, "RateLimit": `"per-user";r=0;t=40`}},
		{"?headers=draft", `{"resource":"search"}`, 0,
			`{"allowed":true,"waitMs":0,"limit":100,"intervalMs":60000,"remaining":96,"resetMs":39500}`,
			map[string]string{"RateLimit-Policy": `"search-per-minute";q=100;w=60`, "RateLimit": `"search-per-minute";r=96;t=40`}},
		{"?headers=off", `{"resource":"search"}`, 0,
			`{"allowed":true,"waitMs":0,"limit":100,"intervalMs":60000,"remaining":95,"resetMs":39500}`, nil},
		{"?headers=draft", `{"resource":"unruled"}`, 0, `{"allowed":true,"waitMs":0}`, nil},
	}
	for i, tt := range tests {
		clock.Advance(tt.advanceMs)
		resp, body := ts.call(t, http.MethodPost, checkPath+tt.query, tt.body, nil)
		mustStatus(t, resp, body, http.StatusOK)
		if string(body) != tt.wantBody {
			t.Errorf("#%d %s %s: body = %s, want %s", i, tt.query, tt.body, body, tt.wantBody)
		}
		for _, name := range names {
			got, sent := resp.Header.Get(name), len(resp.Header.Values(name)) > 0
			if want, ok := tt.want[name]; got != want || sent != ok {
				t.Errorf("#%d %s %s: %s = %q (sent %t), want %q", i, tt.query, tt.body, name, got, sent, want)
			}
		}
	}

	before := ts.engine.Resource("search").Live()
	resp, body := ts.call(t, http.MethodPost, checkPath+"?headers=ietf", `{"resource":"search"}`, nil)
	mustStatus(t, resp, body, http.StatusBadRequest)
	if e := decodeEnvelope(t, resp, body); len(e.Details) != 1 || e.Details[0].Field != "headers" {
		t.Errorf("?headers=ietf: %+v, want details naming headers", e)
	}
	if after := ts.engine.Resource("search").Live(); after != before {
		t.Errorf("?headers=ietf counted the check: %+v, then %+v", before, after)
	}
}
