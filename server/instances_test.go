package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

const reportPath = "/api/v1/instances/report"

// instanceToken creates a token of role instance as the admin and returns
// its secret.
func (ts *testServer) instanceToken(t testing.TB) string {
	t.Helper()
	resp, body := ts.Do(t, http.MethodPost, "/api/v1/tokens", strings.NewReader(
		fmt.Sprintf(`{"name":"fleet-%d","role":"instance"}`, time.Now().UnixNano())))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create an instance token: %d %s", resp.StatusCode, body)
	}
	var created NewAPIToken
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	return created.Token
}

// report posts body as token and returns the status and body.
func (ts *testServer) report(t testing.TB, token, body string) (*http.Response, []byte) {
	t.Helper()
	return ts.DoWith(t, http.MethodPost, reportPath, strings.NewReader(body),
		http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}})
}

// minuteReport is a report of instance id with one minute of resource.
func minuteReport(id, resource string, startMs, pass int64) string {
	return fmt.Sprintf(`{"instance":{"id":%q,"app":"shop","hostname":"h1","pid":42,"version":"1.0.0","rulesRevision":3},
		"minutes":[{"resource":%q,"time":%q,"pass":%d,"complete":%d,"rtSumMs":%d,"minRtMs":2,"maxRtMs":9,"maxConcurrency":1}]}`,
		id, resource, time.UnixMilli(startMs).UTC().Format(time.RFC3339), pass, pass, 5*pass)
}

// TestInstanceTokenReachesOnlyItsRoutes: a token of role instance reads
// the snapshot and posts reports, and is refused everything else.
func TestInstanceTokenReachesOnlyItsRoutes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	token := ts.instanceToken(t)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	if resp, body := ts.DoWith(t, http.MethodGet, snapshotPath, nil, auth); resp.StatusCode != http.StatusOK {
		t.Errorf("GET snapshot: %d %s, want 200", resp.StatusCode, body)
	}
	if resp, body := ts.report(t, token, `{"instance":{"id":"a"}}`); resp.StatusCode != http.StatusNoContent {
		t.Errorf("POST report: %d %s, want 204", resp.StatusCode, body)
	}
	for _, tt := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"r","threshold":1}`},
		{http.MethodGet, "/api/v1/rules", ""},
		{http.MethodGet, "/api/v1/rules/export", ""},
		{http.MethodPost, "/api/v1/rules/apply?dryRun=true", `{"rules":[]}`},
		{http.MethodGet, "/api/v1/users", ""},
		{http.MethodGet, "/api/v1/tokens", ""},
		{http.MethodGet, "/api/v1/me", ""},
		{http.MethodGet, "/api/v1/instances", ""},
		{http.MethodGet, "/api/v1/resources", ""},
		{http.MethodPost, "/api/v1/check", `{"resource":"r"}`},
	} {
		resp, body := ts.DoWith(t, tt.method, tt.path, strings.NewReader(tt.body), auth)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s as an instance: %d %s, want 403", tt.method, tt.path, resp.StatusCode, body)
		}
	}
}

// TestReportAddsToTheHistory: an instance's minute adds to the server's
// own traffic of that minute, in every step; a retried report counts
// once; ?instance= narrows the history to what one instance reported.
func TestReportAddsToTheHistory(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 10_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	token := n.instanceToken(t)
	traffic(t, n.Engine, "orders", 3, 0, 4)
	n.flush(t)

	for _, body := range []string{
		minuteReport("a", "orders", metricsT0, 5),
		minuteReport("a", "orders", metricsT0, 5), // a retry
		minuteReport("b", "orders", metricsT0, 7),
		minuteReport("b", "fleet-only", metricsT0+store.MinuteMs, 2),
	} {
		if resp, got := n.report(t, token, body); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("report: %d %s", resp.StatusCode, got)
		}
	}
	hour := rangeQuery(metricsT0, metricsT0+store.HourMs, "1m")
	for _, tt := range []struct {
		name, query string
		want        int64
	}{
		{"the sum, by minute", hour, 3 + 5 + 7},
		{"the sum, by hour", rangeQuery(metricsT0, metricsT0+store.HourMs, "1h"), 3 + 5 + 7},
		{"the sum, by day", rangeQuery(metricsT0, metricsT0+store.HourMs, "1d"), 3 + 5 + 7},
		{"instance a", hour + "&instance=a", 5},
		{"instance b, by 5 minutes", rangeQuery(metricsT0, metricsT0+store.HourMs, "5m") + "&instance=b", 7},
	} {
		h := n.history(t, "orders", tt.query)
		if got := passes(h.Points); got != tt.want || len(h.Points) != 1 {
			t.Errorf("%s: %d passes in %d points, want %d in one", tt.name, got, len(h.Points), tt.want)
		}
	}
	if h := n.history(t, "fleet-only", hour); passes(h.Points) != 2 {
		t.Errorf("a resource only an instance counted: %+v, want its 2 passes", h.Points)
	}
	resp, body := n.call(t, http.MethodGet, "/api/v1/resources/orders/metrics?instance=nobody", nil, nil)
	wantError(t, resp, body, http.StatusNotFound, "not_found")
}

// TestReportLiveFigures: an instance's live rows add to the live figures
// of GET /resources, with the server's own.
func TestReportLiveFigures(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 10_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	traffic(t, n.Engine, "orders", 2, 0, 4)
	own := n.Engine.Lookup("orders").Live()
	body := `{"instance":{"id":"a"},"live":[{"resource":"orders","passQps":10,"concurrency":2},{"resource":"elsewhere","blockQps":4}]}`
	if resp, got := n.report(t, servertest.AdminToken, body); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("report: %d %s", resp.StatusCode, got)
	}
	resp, got := n.call(t, http.MethodGet, "/api/v1/resources?sort=-passQps", nil, nil)
	mustStatus(t, resp, got, http.StatusOK)
	var list ResourceList
	if err := json.Unmarshal(got, &list); err != nil {
		t.Fatal(err)
	}
	live := map[string]LiveStats{}
	for _, it := range list.Items {
		live[it.Name] = it.Live
	}
	if o := live["orders"]; o.PassQps != own.PassQps+10 || o.Concurrency != own.Concurrency+2 {
		t.Errorf("orders live %+v, want the engine's %+v plus the instance's", o, own)
	}
	if e, ok := live["elsewhere"]; !ok || e.BlockQps != 4 {
		t.Errorf("elsewhere live %+v (listed %v), want the instance's 4 blocks a second", e, ok)
	}
	if list.Total != int64(len(list.Items)) || list.Total != 2 {
		t.Errorf("total %d with %d items, want both resources", list.Total, len(list.Items))
	}
}

// TestInstancesStates: the registry lists every instance that reported,
// live, stale after 10 s without a report, gone after 5 min; ?app=
// narrows it.
func TestInstancesStates(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	token := n.instanceToken(t)
	for _, body := range []string{
		`{"instance":{"id":"a","app":"shop","hostname":"h1","pid":7,"version":"1.2.3","rulesRevision":4}}`,
		`{"instance":{"id":"b","app":"pay"}}`,
	} {
		if resp, got := n.report(t, token, body); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("report: %d %s", resp.StatusCode, got)
		}
	}
	list := func(query string) map[string]InstanceItem {
		t.Helper()
		resp, body := n.Do(t, http.MethodGet, "/api/v1/instances"+query, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /instances%s: %d %s", query, resp.StatusCode, body)
		}
		var l InstanceList
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatal(err)
		}
		out := map[string]InstanceItem{}
		for _, it := range l.Items {
			out[it.ID] = it
		}
		return out
	}
	got := list("")
	a := got["a"]
	if len(got) != 2 || a.State != "live" || a.App != "shop" || a.Hostname != "h1" || a.PID != 7 || a.Version != "1.2.3" || a.RulesRevision != 4 {
		t.Fatalf("instances %+v, want a and b live, a as reported", got)
	}
	if shop := list("?app=shop"); len(shop) != 1 || shop["a"].ID != "a" {
		t.Errorf("?app=shop: %+v, want a only", shop)
	}
	for _, step := range []struct {
		advance time.Duration
		wantA   string
		wantB   string
	}{
		{9 * time.Second, "live", "live"},
		{time.Second, "stale", "live"}, // b reports again below
		{4*time.Minute + 50*time.Second, "gone", "stale"},
	} {
		n.clock.Advance(step.advance)
		if step.wantB == "live" {
			if resp, body := n.report(t, token, `{"instance":{"id":"b","app":"pay"}}`); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("report: %d %s", resp.StatusCode, body)
			}
		}
		got := list("")
		if got["a"].State != step.wantA || got["b"].State != step.wantB {
			t.Errorf("after %v more: a %s, b %s; want %s, %s", step.advance, got["a"].State, got["b"].State, step.wantA, step.wantB)
		}
	}
	resp, body := n.Do(t, http.MethodGet, "/api/v1/instances?app=Shop", nil)
	wantError(t, resp, body, http.StatusBadRequest, "bad_request", "app")
}

// TestReportValidation: a bad report is 422 naming every bad field, and
// records nothing; one over 1 MiB is 413.
func TestReportValidation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	now := time.Now().UTC().Truncate(time.Minute).Format(time.RFC3339)
	for _, tt := range []struct {
		body   string
		fields []string
	}{
		{`{}`, []string{"instance"}},
		{`{"instance":{"id":""}}`, []string{"instance.id"}},
		{`{"instance":{"id":"a","app":"Shop","pid":-1,"bogus":1}}`, []string{"instance.app", "instance.pid", "instance.bogus"}},
		{`{"instance":{"id":"a"},"minutes":{}}`, []string{"minutes"}},
		{`{"instance":{"id":"a"},"minutes":[{"resource":"r","time":"2026-11-24T10:15:30Z"}]}`, []string{"minutes[0].time"}},
		{`{"instance":{"id":"a"},"minutes":[{"resource":"r"}]}`, []string{"minutes[0].time"}},
		{`{"instance":{"id":"a"},"minutes":[{"resource":"r","time":"2999-01-01T00:00:00Z"}]}`, []string{"minutes[0].time"}},
		{`{"instance":{"id":"a"},"minutes":[{"resource":"","time":"` + now + `","pass":-1,"error":2,"extra":0}]}`,
			[]string{"minutes[0].resource", "minutes[0].pass", "minutes[0].error", "minutes[0].extra"}},
		{`{"instance":{"id":"a"},"minutes":[7]}`, []string{"minutes[0]"}},
		{`{"instance":{"id":"a"},"live":[{"resource":"r","passQps":-1,"concurrency":1.5},{"resource":"r"}]}`,
			[]string{"live[0].passQps", "live[0].concurrency", "live[1].resource"}},
		{`{"instance":{"id":"a"},"minutes":[` + strings.TrimSuffix(strings.Repeat(`{"resource":"r","time":"`+now+`"},`, maxReportRows+1), ",") + `]}`, []string{"minutes"}},
		{`{"instance":{"id":"a","hostname":"` + strings.Repeat("h", maxBodyBytes) + `"}}`, nil},
		{`{"instance":{"id":"a"},"live":[` + strings.TrimSuffix(strings.Repeat(`{"resource":"r"},`, maxReportRows+1), ",") + `]}`, []string{"live"}},
	} {
		resp, body := ts.report(t, servertest.AdminToken, tt.body)
		if tt.fields == nil { // over 1 MiB
			wantError(t, resp, body, http.StatusRequestEntityTooLarge, "payload_too_large")
			continue
		}
		wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", tt.fields...)
	}
	resp, body := ts.Do(t, http.MethodGet, "/api/v1/instances", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"items":[]`) {
		t.Errorf("after bad reports only: %d %s, want no instance", resp.StatusCode, body)
	}
}

// TestReportFigureBounds: a report's figures are bounded by what one
// instance can count (so that no sum of them overflows the history's
// columns), and a minute older than the retention is refused, each named
// by its field; nothing of a refused report is recorded.
func TestReportFigureBounds(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	now := time.Now().UTC().Truncate(time.Minute).Format(time.RFC3339)
	minute := func(fields string) string {
		return `{"instance":{"id":"a"},"minutes":[{"resource":"r","time":"` + now + `"},{"resource":"r2","time":"` + now + `",` + fields + `}]}`
	}
	for _, tt := range []struct {
		body   string
		fields []string
	}{
		{minute(`"pass":9223372036854775807,"block":6000000001,"shadowBlock":1,"complete":1,"error":1`),
			[]string{"minutes[1].pass", "minutes[1].block"}},
		{minute(`"complete":2,"rtSumMs":100,"minRtMs":9,"maxRtMs":8`),
			[]string{"minutes[1].minRtMs", "minutes[1].rtSumMs"}},
		{minute(`"complete":1,"maxRtMs":86400001,"maxConcurrency":100000001`),
			[]string{"minutes[1].maxRtMs", "minutes[1].maxConcurrency"}},
		{minute(`"rtSumMs":1`), []string{"minutes[1].rtSumMs"}},
		{`{"instance":{"id":"a"},"minutes":[{"resource":"r","time":"1971-01-01T00:00:00Z","pass":1}]}`, []string{"minutes[0].time"}},
		{`{"instance":{"id":"a"},"live":[{"resource":"r","passQps":1},{"resource":"r2"},` +
			`{"resource":"r3","passQps":1e12,"errorQps":1e400,"avgRtMs":86400001,"concurrency":100000001}]}`,
			[]string{"live[2].passQps", "live[2].errorQps", "live[2].avgRtMs", "live[2].concurrency"}},
	} {
		resp, body := ts.report(t, servertest.AdminToken, tt.body)
		wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", tt.fields...)
	}
	ok := minute(`"pass":6000000000,"complete":6000000000,"error":6000000000,"rtSumMs":600000000000,"minRtMs":0,"maxRtMs":86400000,"maxConcurrency":100000000`)
	if resp, body := ts.report(t, servertest.AdminToken, ok); resp.StatusCode != http.StatusNoContent {
		t.Errorf("a report at every bound: %d %s, want 204", resp.StatusCode, body)
	}
}

// TestReportStoresAtMostMaxResources: reports that name new resources
// without end leave at most --max-resources resources stored, the minutes
// of the others counted under (overflow), every pass counted once (a
// retried report adds nothing), and live rows of new names beyond the cap
// count under (overflow) too. Not parallel: its reports are large, and
// beside other tests they outran the client's timeout.
func TestReportStoresAtMostMaxResources(t *testing.T) {
	const maxResources, reports, namesPerReport = 1000, 10, 5000
	clock := engine.NewManualClock(metricsT0 + 10_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil,
		func(o *engine.Options) { o.MaxResources = maxResources })
	token := n.instanceToken(t)
	at := time.UnixMilli(metricsT0).UTC().Format(time.RFC3339)
	body := func(r int) string {
		rows := make([]string, namesPerReport)
		for i := range rows {
			rows[i] = fmt.Sprintf(`{"resource":"leak-%d-%d","time":%q,"pass":1}`, r, i, at)
		}
		return `{"instance":{"id":"a"},"minutes":[` + strings.Join(rows, ",") + `]}`
	}
	for r := range reports {
		if resp, got := n.report(t, token, body(r)); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("report %d: %d %s", r, resp.StatusCode, got)
		}
	}
	if resp, got := n.report(t, token, body(reports-1)); resp.StatusCode != http.StatusNoContent { // a retry
		t.Fatalf("retry: %d %s", resp.StatusCode, got)
	}
	resp, got := n.call(t, http.MethodGet, "/api/v1/resources?pageSize=1", nil, nil)
	mustStatus(t, resp, got, http.StatusOK)
	if list := decodeStrict[ResourceList](t, got); list.Total != maxResources+1 {
		t.Errorf("%d resources stored, want %d and %s", list.Total, maxResources, engine.OverflowResource)
	}
	hour := rangeQuery(metricsT0, metricsT0+store.HourMs, "1h")
	const folded = reports*namesPerReport - maxResources
	if h := n.history(t, engine.OverflowResource, hour); passes(h.Points) != folded {
		t.Errorf("%s counted %d passes, want %d", engine.OverflowResource, passes(h.Points), folded)
	}
	if h := n.history(t, engine.OverflowResource, hour+"&instance=a"); passes(h.Points) != folded {
		t.Errorf("instance a's %s counted %d passes, want %d", engine.OverflowResource, passes(h.Points), folded)
	}
	top, err := n.store.TopResources(t.Context(), metricsT0, metricsT0+store.HourMs, store.TopByPass, 2*maxResources)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range top {
		total += r.Pass
	}
	if total != reports*namesPerReport {
		t.Errorf("%d passes in all, want every one of the %d reported", total, reports*namesPerReport)
	}

	live := make([]string, 2*maxResources)
	for i := range live {
		live[i] = fmt.Sprintf(`{"resource":"live-%d","passQps":1}`, i)
	}
	if resp, got := n.report(t, token, `{"instance":{"id":"a"},"live":[`+strings.Join(live, ",")+`]}`); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("live report: %d %s", resp.StatusCode, got)
	}
	resp, got = n.call(t, http.MethodGet, "/api/v1/resources?pageSize=1", nil, nil)
	mustStatus(t, resp, got, http.StatusOK)
	if list := decodeStrict[ResourceList](t, got); list.Total != 2*maxResources+1 {
		t.Errorf("%d resources listed after %d live names, want %d", list.Total, len(live), 2*maxResources+1)
	}
	resp, got = n.call(t, http.MethodGet, "/api/v1/resources?q="+url.QueryEscape(engine.OverflowResource), nil, nil)
	mustStatus(t, resp, got, http.StatusOK)
	list := decodeStrict[ResourceList](t, got)
	if len(list.Items) != 1 || list.Items[0].Live.PassQps != float64(len(live)-maxResources) {
		t.Errorf("%s listed as %+v, want the %d passes a second of the live names beyond the cap", engine.OverflowResource, list.Items, len(live)-maxResources)
	}
}

// TestReportRefusesNewInstancesPastTheCap: past --max-instances instances
// not gone, a report of a new id is 429 naming instance.id, counted in
// sluice_instances_refused_total and logged once a minute at most; known
// ids still report, and a new one is taken once one is gone.
func TestReportRefusesNewInstancesPastTheCap(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clock := engine.NewManualClock(now.UnixMilli())
	ts := startServer(t, func(cfg *Config) {
		cfg.MaxInstances = 2
		cfg.Now = func() time.Time { return time.UnixMilli(clock.NowMs()).UTC() }
	}, nil, servertest.EngineOptions(engine.Options{Clock: clock}))
	token := ts.instanceToken(t)
	post := func(id string) (*http.Response, []byte) {
		return ts.report(t, token, `{"instance":{"id":"`+id+`"}}`)
	}
	for _, id := range []string{"a", "b"} {
		if resp, body := post(id); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("report of %s: %d %s", id, resp.StatusCode, body)
		}
	}
	for _, id := range []string{"c", "d"} {
		resp, body := post(id)
		wantError(t, resp, body, http.StatusTooManyRequests, "too_many_requests", "instance.id")
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("refusal of %s without Retry-After", id)
		}
	}
	if resp, body := post("a"); resp.StatusCode != http.StatusNoContent {
		t.Errorf("a known id past the cap: %d %s, want 204", resp.StatusCode, body)
	}
	if got := strings.Count(ts.Logs(), "a report of a new instance id was refused"); got != 1 {
		t.Errorf("two refusals in a minute logged %d times, want once:\n%s", got, ts.Logs())
	}
	resp, body := ts.Do(t, http.MethodGet, "/metrics", nil)
	mustStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(string(body), "sluice_instances_refused_total 2\n") {
		t.Errorf("the exposition lacks sluice_instances_refused_total 2:\n%s", body)
	}

	clock.Advance(5 * time.Minute.Milliseconds())
	if resp, body := post("a"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a after 5 minutes: %d %s", resp.StatusCode, body)
	}
	resp, body = post("e")
	mustStatus(t, resp, body, http.StatusNoContent)
	resp, body = post("f")
	wantError(t, resp, body, http.StatusTooManyRequests, "too_many_requests", "instance.id")
	if got := strings.Count(ts.Logs(), "a report of a new instance id was refused"); got != 2 {
		t.Errorf("a refusal a minute later logged %d times in all, want twice", got)
	}
}

// BenchmarkReport posts a report of one instance with 50 minute rows, each
// a new minute, and its live rows.
func BenchmarkReport(b *testing.B) {
	clock := engine.NewManualClock(metricsT0 + 10_000)
	ts := startServer(b, func(cfg *Config) { cfg.UnguardedAPI = true }, nil,
		servertest.DiscardLogs(), servertest.EngineOptions(engine.Options{Clock: clock}))
	token := ts.instanceToken(b)
	reports := make([]string, b.N)
	for i := range reports {
		var minutes, live []string
		for r := range 50 {
			at := time.UnixMilli(metricsT0 - int64(i)*store.MinuteMs).UTC().Format(time.RFC3339)
			minutes = append(minutes, fmt.Sprintf(`{"resource":"res-%d","time":%q,"pass":10,"complete":10,"rtSumMs":50,"minRtMs":2,"maxRtMs":9,"maxConcurrency":2}`, r, at))
			live = append(live, fmt.Sprintf(`{"resource":"res-%d","passQps":1}`, r))
		}
		reports[i] = `{"instance":{"id":"bench","app":"shop"},"minutes":[` + strings.Join(minutes, ",") + `],"live":[` + strings.Join(live, ",") + `]}`
	}
	b.ResetTimer()
	for i := range b.N {
		if resp, body := ts.report(b, token, reports[i]); resp.StatusCode != http.StatusNoContent {
			b.Fatalf("report: %d %s", resp.StatusCode, body)
		}
	}
}
