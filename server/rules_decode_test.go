package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/rules"
)

// withField is rule, a JSON object, with more fields set.
func withField(t *testing.T, rule string, more map[string]any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(rule), &m); err != nil {
		t.Fatal(err)
	}
	maps.Copy(m, more)
	return m
}

// TestSentZeroIsNoDefault checks that a field sent as 0 or "" where the
// engine would take it as unset and give it its default is a 422 naming
// the field once, on every write that decodes a rule: POST, PUT, PATCH and
// apply, in JSON and YAML. Left out, the field takes its default; where
// it does not apply, a zero is no value and is taken.
func TestSentZeroIsNoDefault(t *testing.T) {
	t.Parallel()
	const (
		flow    = `{"kind": "flow", "resource": "r", "threshold": 5}`
		warmUp  = `{"kind": "flow", "resource": "r", "threshold": 5, "tokenCalculateStrategy": "warmUp", "warmUpPeriodSec": 10}`
		breaker = `{"kind": "circuitBreaker", "resource": "r", "strategy": "errorRatio", "threshold": 0.5, "retryTimeoutMs": 1000}`
		hotspot = `{"kind": "hotspot", "resource": "r", "paramKey": "ip", "threshold": 5}`
		system  = `{"kind": "system", "metricType": "cpuUsage", "triggerCount": 0.8}`
	)
	tests := []struct {
		rule  string
		field string
		zero  any
	}{
		{breaker, "minRequestAmount", 0},
		{breaker, "probeNum", 0},
		{breaker, "statIntervalMs", 0},
		{hotspot, "paramsMaxCapacity", 0},
		{hotspot, "statIntervalMs", 0},
		{hotspot, "metric", ""},
		{hotspot, "controlBehavior", ""},
		{flow, "statIntervalMs", 0},
		{flow, "metric", ""},
		{flow, "controlBehavior", ""},
		{flow, "tokenCalculateStrategy", ""},
		{flow, "relationStrategy", ""},
		{flow, "limitApp", ""},
		{flow, "scope", ""},
		{flow, "mode", ""},
		{warmUp, "warmUpColdFactor", 0},
		{system, "strategy", ""},
	}
	ts := startServer(t, nil, nil)
	yaml := reqHeader{"Content-Type": "application/yaml"}
	for i, tt := range tests {
		sent := map[string]any{tt.field: tt.zero}
		t.Run(fmt.Sprintf("%d %s %q", i, tt.field, fmt.Sprint(tt.zero)), func(t *testing.T) {
			r := ts.createRule(t, withField(t, tt.rule, map[string]any{"name": fmt.Sprintf("zero-%d", i)}))
			file := map[string]any{"rules": []any{withField(t, tt.rule, map[string]any{"name": "a", tt.field: tt.zero})}}
			fileJSON, _ := json.Marshal(file)
			writes := []struct {
				method, path string
				body         any
				header       reqHeader
				field        string
			}{
				{http.MethodPost, rulesPath, withField(t, tt.rule, sent), nil, tt.field},
				{http.MethodPut, ruleURL(r.ID), withField(t, tt.rule, sent), nil, tt.field},
				{http.MethodPatch, ruleURL(r.ID), sent, nil, tt.field},
				{http.MethodPost, applyPath, file, nil, "rules[0]." + tt.field},
				{http.MethodPost, applyPath, string(fileJSON), yaml, "rules[0]." + tt.field},
			}
			for _, w := range writes {
				resp, got := ts.call(t, w.method, w.path, w.body, w.header)
				e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", w.field)
				if len(e.Details) != 1 || !strings.Contains(e.Details[0].Message, "leave it out for the default") {
					t.Errorf("%s %s: details = %+v, want one that tells how to get the default", w.method, w.path, e.Details)
				}
			}
			if after, _ := ts.getRule(t, r.ID); after.Version != r.Version {
				t.Errorf("version = %d after refused writes, want %d", after.Version, r.Version)
			}
		})
	}
}

// TestZeroWhereTheFieldDoesNotApply checks that a zero stays accepted
// where its field does not apply (docs/api.md: such a field is refused only
// with a non-zero, non-empty value), and that a field left out takes its
// default.
func TestZeroWhereTheFieldDoesNotApply(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	tests := []struct {
		name, body string
		want       func(r rules.APIRule) bool
	}{
		{"statIntervalMs of a concurrency rule", `{"kind": "flow", "resource": "a", "metric": "concurrency", "threshold": 5, "statIntervalMs": 0, "controlBehavior": ""}`,
			func(r rules.APIRule) bool { return r.StatIntervalMs == nil }},
		{"warmUpColdFactor of a direct rule", `{"kind": "flow", "resource": "b", "threshold": 5, "warmUpColdFactor": 0}`,
			func(r rules.APIRule) bool { return r.WarmUpColdFactor == nil }},
		{"clusterFallback of a local rule", `{"kind": "flow", "resource": "c", "threshold": 5, "clusterFallback": ""}`,
			func(r rules.APIRule) bool { return r.ClusterFallback == nil }},
		{"statIntervalMs of a concurrency hotspot rule", `{"kind": "hotspot", "resource": "d", "paramKey": "ip", "metric": "concurrency", "threshold": 5, "statIntervalMs": 0}`,
			func(r rules.APIRule) bool { return r.StatIntervalMs == nil }},
		{"a breaker's fields left out take their defaults", `{"kind": "circuitBreaker", "resource": "e", "strategy": "errorCount", "threshold": 3, "retryTimeoutMs": 1000}`,
			func(r rules.APIRule) bool {
				return *r.MinRequestAmount == 5 && *r.ProbeNum == 1 && *r.StatIntervalMs == 1000
			}},
		{"null is left out", `{"kind": "hotspot", "resource": "f", "paramKey": "ip", "threshold": 5, "paramsMaxCapacity": null, "statIntervalMs": null}`,
			func(r rules.APIRule) bool { return *r.ParamsMaxCapacity == 100000 && *r.StatIntervalMs == 1000 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.createRule(t, tt.body)
			if !tt.want(r) {
				got, _ := json.Marshal(r)
				t.Errorf("rule = %s", got)
			}
		})
	}
	t.Run("a Sentinel import's zeros are unset", func(t *testing.T) {
		body := `[{"resource": "g", "strategy": 1, "threshold": 0.5, "retryTimeoutMs": 1000, "minRequestAmount": 0, "probeNum": 0, "statIntervalMs": 0}]`
		resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=circuitBreaker", body, nil)
		mustStatus(t, resp, got, http.StatusOK)
		list := ts.listRules(t, "resource=g")
		if len(list.Items) != 1 {
			t.Fatalf("rules of g = %+v, want one", list.Items)
		}
		if r := list.Items[0]; *r.MinRequestAmount != 5 || *r.ProbeNum != 1 || *r.StatIntervalMs != 1000 {
			got, _ := json.Marshal(r)
			t.Errorf("imported rule = %s, want the defaults 5, 1 and 1000", got)
		}
	})
}

// TestRuleListFilters checks that a list filter with a value no rule can
// have is a 400 naming it, on the rules list as on the other lists,
// instead of an empty page.
func TestRuleListFilters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name": "one", "kind": "flow", "resource": "r", "threshold": 5}`)
	tests := []struct {
		query, wantField string
	}{
		{rulesPath + "?kind=bogus", "kind"},
		{rulesPath + "?kind=Flow", "kind"},
		{rulesPath + "?resource=" + strings.Repeat("r", 257), "resource"},
		{rulesPath + "?resource=a%01b", "resource"},
		{rulesPath + "?enabled=maybe", "enabled"},
		{rulesPath + "?app=Shop", "app"},
		{rulesPath + "?page=0", "page"},
		{rulesPath + "?pageSize=501", "pageSize"},
		{rulesPath + "/1/revisions?pageSize=0", "pageSize"},
		{"/api/v1/resources?sort=bogus", "sort"},
		{"/api/v1/metrics/top?by=bogus", "by"},
		{"/api/v1/metrics/top?limit=0", "limit"},
		{"/api/v1/instances?app=Shop", "app"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodGet, tt.query, nil, nil)
			wantError(t, resp, got, http.StatusBadRequest, "bad_request", tt.wantField)
		})
	}
	for query, want := range map[string]int{"kind=flow": 1, "kind=hotspot": 0, "resource=r": 1, "resource=s": 0, "kind=": 1} {
		if got := ts.listRules(t, query); len(got.Items) != want {
			t.Errorf("GET /rules?%s: %d rules, want %d", query, len(got.Items), want)
		}
	}
}

// TestNoOpWriteKeepsTheVersion checks that a PUT or PATCH that changes
// nothing answers 200 with the rule as it was: its version, ETag, history
// and the snapshot's revision stay; and that a write that changes
// something still makes a version.
func TestNoOpWriteKeepsTheVersion(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	r := ts.createRule(t, `{"name": "orders", "kind": "flow", "resource": "orders", "threshold": 5, "description": "cap"}`)
	asGot, _ := json.Marshal(r)
	tests := []struct {
		name, method, body string
		wantChange         bool
	}{
		{"PUT of the rule as GET answers it", http.MethodPut, string(asGot), false},
		{"PUT of the content only", http.MethodPut, `{"kind": "flow", "resource": "orders", "threshold": 5, "description": "cap"}`, false},
		{"PUT with the defaults spelled out", http.MethodPut, `{"kind": "flow", "resource": "orders", "threshold": 5, "description": "cap", "metric": "qps", "statIntervalMs": 1000, "enabled": true, "mode": "enforce"}`, false},
		{"PATCH of an empty object", http.MethodPatch, `{}`, false},
		{"PATCH of the same threshold", http.MethodPatch, `{"threshold": 5}`, false},
		{"PATCH of the same name and enabled", http.MethodPatch, `{"name": "orders", "enabled": true}`, false},
		{"PATCH of another threshold", http.MethodPatch, `{"threshold": 6}`, true},
		{"PUT of another description", http.MethodPut, `{"kind": "flow", "resource": "orders", "threshold": 6, "description": "new"}`, true},
		{"PATCH of another name", http.MethodPatch, `{"name": "orders-2"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := ts.getRule(t, r.ID)
			_, snapBefore := ts.getSnapshot(t, "", nil)
			revs := ts.revisionCount(t, r.ID)
			resp, got := ts.call(t, tt.method, ruleURL(r.ID), tt.body, reqHeader{"If-Match": fmt.Sprintf(`"%d"`, before.Version)})
			mustStatus(t, resp, got, http.StatusOK)
			answered := decodeStrict[rules.APIRule](t, got)
			_, snapAfter := ts.getSnapshot(t, "", nil)
			wantVersion, wantRevision, wantRevs := before.Version, snapBefore.Revision, revs
			if tt.wantChange {
				wantVersion, wantRevision, wantRevs = before.Version+1, snapBefore.Revision+1, revs+1
			}
			if answered.Version != wantVersion || resp.Header.Get("ETag") != fmt.Sprintf(`"%d"`, wantVersion) {
				t.Errorf("version = %d, ETag %s, want %d", answered.Version, resp.Header.Get("ETag"), wantVersion)
			}
			if !tt.wantChange && !answered.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("updatedAt = %v, want %v", answered.UpdatedAt, before.UpdatedAt)
			}
			if snapAfter.Revision != wantRevision {
				t.Errorf("snapshot revision = %d, want %d", snapAfter.Revision, wantRevision)
			}
			if got := ts.revisionCount(t, r.ID); got != wantRevs {
				t.Errorf("%d revisions, want %d", got, wantRevs)
			}
		})
	}
	t.Run("apply of the rules as they are", func(t *testing.T) {
		_, before := ts.getSnapshot(t, "", nil)
		resp, got := ts.call(t, http.MethodGet, rulesPath+"/export", nil, nil)
		mustStatus(t, resp, got, http.StatusOK)
		resp, got = ts.call(t, http.MethodPost, applyPath, got, nil)
		mustStatus(t, resp, got, http.StatusOK)
		if plan := decodePlan(t, got); len(plan.Unchanged) != 1 || len(plan.Updated)+len(plan.Created) != 0 {
			t.Errorf("plan = %+v, want one rule unchanged", plan)
		}
		if _, after := ts.getSnapshot(t, "", nil); after.Revision != before.Revision {
			t.Errorf("snapshot revision = %d after a no-op apply, want %d", after.Revision, before.Revision)
		}
	})
	t.Run("a stale If-Match is refused still", func(t *testing.T) {
		resp, got := ts.call(t, http.MethodPatch, ruleURL(r.ID), `{}`, reqHeader{"If-Match": `"1"`})
		wantError(t, resp, got, http.StatusPreconditionFailed, "precondition_failed")
	})
}

// revisionCount is how many versions rule id's history holds.
func (ts *testServer) revisionCount(t *testing.T, id int64) int64 {
	t.Helper()
	resp, got := ts.call(t, http.MethodGet, ruleURL(id)+"/revisions", nil, nil)
	mustStatus(t, resp, got, http.StatusOK)
	return decodeStrict[RevisionList](t, got).Total
}

// TestSentinelHotspotMetricType checks the import of sentinel-golang
// hotspot rules as sentinel-golang reads them: metricType 0, and a missing
// one, is Concurrency; a field only QPS reads is dropped on metricType 0
// (sentinel-golang ignores it too), with a note in the plan naming it, and
// beside a missing metricType refused, naming that, as unclear; so is a
// paramIndex beside a paramKey, which sentinel-golang refuses.
func TestSentinelHotspotMetricType(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	tests := []struct {
		name, rule string
		wantMetric string
		wantMs     int64
		wantField  string
		wantNote   string
	}{
		{name: "metricType 0", rule: `{"resource": "r", "metricType": 0, "paramKey": "ip", "threshold": 4, "durationInSec": 0, "controlBehavior": 0, "burstCount": 0, "maxQueueingTimeMs": 0}`, wantMetric: "concurrency"},
		{name: "metricType 0 with durationInSec", rule: `{"resource": "r", "metricType": 0, "paramKey": "ip", "threshold": 4, "durationInSec": 5}`, wantMetric: "concurrency", wantNote: "rules[0].durationInSec"},
		{name: "metricType 0 with controlBehavior", rule: `{"resource": "r", "metricType": 0, "paramKey": "ip", "threshold": 4, "controlBehavior": 1}`, wantMetric: "concurrency", wantNote: "rules[0].controlBehavior"},
		{name: "metricType 0 with burstCount", rule: `{"resource": "r", "metricType": 0, "paramKey": "ip", "threshold": 4, "burstCount": 2}`, wantMetric: "concurrency", wantNote: "rules[0].burstCount"},
		{name: "metricType 0 with maxQueueingTimeMs", rule: `{"resource": "r", "metricType": 0, "paramKey": "ip", "threshold": 4, "maxQueueingTimeMs": 500}`, wantMetric: "concurrency", wantNote: "rules[0].maxQueueingTimeMs"},
		{name: "no metricType", rule: `{"resource": "r", "paramKey": "ip", "threshold": 4}`, wantMetric: "concurrency"},
		{name: "no metricType and Sentinel's zeros", rule: `{"resource": "r", "paramKey": "ip", "threshold": 4, "durationInSec": 0, "controlBehavior": 0, "burstCount": 0, "maxQueueingTimeMs": 0}`, wantMetric: "concurrency"},
		{name: "metricType 1", rule: `{"resource": "r", "metricType": 1, "paramKey": "ip", "threshold": 4, "durationInSec": 5}`, wantMetric: "qps", wantMs: 5000},
		{name: "metricType 1 without durationInSec", rule: `{"resource": "r", "metricType": 1, "paramKey": "ip", "threshold": 4}`, wantMetric: "qps", wantMs: 1000},
		{name: "paramIndex 0 beside a paramKey", rule: `{"resource": "r", "metricType": 1, "paramIndex": 0, "paramKey": "ip", "threshold": 4}`, wantMetric: "qps", wantMs: 1000},
		{name: "no metricType with durationInSec", rule: `{"resource": "r", "paramKey": "ip", "threshold": 4, "durationInSec": 2}`, wantField: "rules[0].metricType"},
		{name: "no metricType with controlBehavior", rule: `{"resource": "r", "paramKey": "ip", "threshold": 4, "controlBehavior": 1}`, wantField: "rules[0].metricType"},
		{name: "no metricType with burstCount", rule: `{"resource": "r", "paramKey": "ip", "threshold": 4, "burstCount": 3}`, wantField: "rules[0].metricType"},
		{name: "a paramIndex beside a paramKey", rule: `{"resource": "r", "metricType": 1, "paramIndex": 2, "paramKey": "ip", "threshold": 4}`, wantField: "rules[0].paramIndex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=hotspot", "["+tt.rule+"]", nil)
			if tt.wantField != "" {
				e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", tt.wantField)
				if len(e.Details) != 1 {
					t.Errorf("details = %+v, want one", e.Details)
				}
				return
			}
			mustStatus(t, resp, got, http.StatusOK)
			if plan := decodePlan(t, got); tt.wantNote != "" && (len(plan.Notes) != 1 || plan.Notes[0].Field != tt.wantNote) {
				t.Errorf("notes = %+v, want one naming %s, dropped", plan.Notes, tt.wantNote)
			}
			list := ts.listRules(t, "kind=hotspot")
			if len(list.Items) != 1 {
				t.Fatalf("hotspot rules = %+v, want one", list.Items)
			}
			r := list.Items[0]
			if *r.Metric != tt.wantMetric || tt.wantMs == 0 && r.StatIntervalMs != nil || tt.wantMs != 0 && *r.StatIntervalMs != tt.wantMs {
				got, _ := json.Marshal(r)
				t.Errorf("rule = %s, want metric %s, statIntervalMs %d", got, tt.wantMetric, tt.wantMs)
			}
			if tt.wantMetric == "concurrency" && (r.ControlBehavior != nil || r.BurstCount != nil) {
				got, _ := json.Marshal(r)
				t.Errorf("rule = %s, want no QPS fields", got)
			}
			resp, got = ts.call(t, http.MethodDelete, ruleURL(r.ID), nil, nil)
			mustStatus(t, resp, got, http.StatusNoContent)
		})
	}
}

// TestImportSentinelGolangFiles imports sentinel-golang's own rule files
// of today (testdata/sentinel/golang-main, source in its README): each
// imports, the fields sentinel-golang ignores dropped with a note each in
// the plan, or is refused with one clear message per rule it cannot
// express; and a Java Sentinel rule is refused with one message.
func TestImportSentinelGolangFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, kind  string
		wantCreated int
		wantNotes   []string
		wantFields  []string
	}{
		{"FlowRule.json", "flow", 3, []string{
			"rules[0].warmUpPeriodSec", "rules[0].maxQueueingTimeMs", "rules[0].refResource",
			"rules[1].warmUpPeriodSec", "rules[2].warmUpPeriodSec", "rules[2].refResource",
		}, nil},
		{"CircuitBreakerRule.json", "circuitBreaker", 3, nil, nil},
		// Two concurrency hotspot rules on one resource: Sluice holds one.
		{"HotSpotParamFlowRule.json", "hotspot", 0, nil, []string{"rules[1].resource"}},
		{"SystemRule.json", "system", 0, nil, []string{"rules[0].metricType"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ts := startServer(t, nil, nil)
			body, err := os.ReadFile(filepath.Join("testdata", "sentinel", "golang-main", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind="+tt.kind+"&dryRun=true", string(body), nil)
			if tt.wantFields != nil {
				e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", tt.wantFields...)
				if len(e.Details) != len(tt.wantFields) {
					t.Errorf("details = %+v, want one per rule refused", e.Details)
				}
				return
			}
			mustStatus(t, resp, got, http.StatusOK)
			plan := decodePlan(t, got)
			var notes []string
			for _, n := range plan.Notes {
				notes = append(notes, n.Field)
				if !strings.HasPrefix(n.Message, "dropped: ") {
					t.Errorf("note %+v does not say it was dropped", n)
				}
			}
			slices.Sort(notes)
			want := slices.Sorted(slices.Values(tt.wantNotes))
			if len(plan.Created) != tt.wantCreated || !slices.Equal(notes, want) {
				t.Errorf("created %d, notes %q; want %d and %q", len(plan.Created), notes, tt.wantCreated, want)
			}
		})
	}
	t.Run("a Java Sentinel rule", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel",
			`[{"resource":"GET:/api/orders","limitApp":"default","grade":1,"count":20,"strategy":0,"controlBehavior":0,"clusterMode":false}]`, nil)
		e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[0]")
		if len(e.Details) != 1 || !strings.Contains(e.Details[0].Message, "Java Sentinel") {
			t.Errorf("details = %+v, want one message naming Java Sentinel", e.Details)
		}
	})
}
