package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/rules"
)

const (
	applyPath  = rulesPath + "/apply"
	exportPath = rulesPath + "/export"
	importPath = rulesPath + "/import"
)

var yamlHeader = reqHeader{"Content-Type": "application/yaml"}

// decodePlan checks the shape of a plan (dryRun and the four lists, each
// an array even when empty, and nothing else) and decodes it.
func decodePlan(t *testing.T, body []byte) rules.ApplyPlan {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("the plan is not a JSON object: %v\n%s", err, body)
	}
	delete(raw, "notes") // an import's, when it left fields out
	if got, want := slices.Sorted(maps.Keys(raw)), []string{"created", "deleted", "dryRun", "unchanged", "updated"}; !slices.Equal(got, want) {
		t.Errorf("plan fields = %q, want %q", got, want)
	}
	for _, list := range []string{"created", "updated", "deleted", "unchanged"} {
		if !bytes.HasPrefix(raw[list], []byte("[")) {
			t.Errorf("%s = %s, want an array", list, raw[list])
		}
	}
	return decodeStrict[rules.ApplyPlan](t, body)
}

// planSummary is a plan as sorted name lists.
type planSummary struct {
	dryRun                               bool
	created, updated, deleted, unchanged []string
}

func summarise(p rules.ApplyPlan) planSummary {
	names := func(items []rules.PlanItem) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, it.Name)
		}
		slices.Sort(out)
		return out
	}
	updated := make([]rules.PlanItem, 0, len(p.Updated))
	for _, u := range p.Updated {
		updated = append(updated, u.PlanItem)
	}
	return planSummary{dryRun: p.DryRun, created: names(p.Created), updated: names(updated), deleted: names(p.Deleted), unchanged: names(p.Unchanged)}
}

func (s planSummary) String() string {
	return fmt.Sprintf("dryRun %v, created %q, updated %q, deleted %q, unchanged %q", s.dryRun, s.created, s.updated, s.deleted, s.unchanged)
}

func wantPlan(t *testing.T, p rules.ApplyPlan, want planSummary) {
	t.Helper()
	for _, l := range []*[]string{&want.created, &want.updated, &want.deleted, &want.unchanged} {
		*l = slices.Sorted(slices.Values(*l))
	}
	got := summarise(p)
	if got.dryRun != want.dryRun || !slices.Equal(got.created, want.created) || !slices.Equal(got.updated, want.updated) ||
		!slices.Equal(got.deleted, want.deleted) || !slices.Equal(got.unchanged, want.unchanged) {
		t.Errorf("plan: %v\nwant:  %v", got, want)
	}
}

// changes is an update's changes as field → [from, to], compact JSON.
func changes(t *testing.T, u rules.PlanUpdate) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Errorf("%s of %s is not JSON: %q", u.Name, raw, raw)
		}
		return b.String()
	}
	for _, c := range u.Changes {
		if _, dup := out[c.Field]; dup {
			t.Errorf("%s: field %s is changed twice", u.Name, c.Field)
		}
		out[c.Field] = [2]string{compact(c.From), compact(c.To)}
	}
	return out
}

// storedThresholds is every stored rule, enabled or not, as name →
// threshold.
func (ts *testServer) storedThresholds(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, r := range ts.listRules(t, "pageSize=500").Items {
		out[r.Name] = *r.Threshold
	}
	return out
}

// snapshot is every stored rule as the API shows it, by name.
func (ts *testServer) snapshot(t *testing.T) map[string]rules.APIRule {
	t.Helper()
	out := map[string]rules.APIRule{}
	for _, r := range ts.listRules(t, "pageSize=500").Items {
		out[r.Name] = r
	}
	return out
}

// wantUnchanged checks that the stored rules are still before and that
// the engine still holds loaded.
func (ts *testServer) wantUnchanged(t *testing.T, before map[string]rules.APIRule, loaded map[string]float64) {
	t.Helper()
	if after := ts.snapshot(t); !reflect.DeepEqual(after, before) {
		t.Errorf("stored rules changed:\n%+v\nwant\n%+v", after, before)
	}
	if got := ts.loadedThresholds(); !maps.Equal(got, loaded) {
		t.Errorf("engine rules = %v, want them unchanged: %v", got, loaded)
	}
}

// applyFixture is the stored rules most apply tests start from.
var applyFixture = []string{
	`{"name":"orders","kind":"flow","resource":"GET:/api/orders","threshold":10}`,
	`{"name":"checkout","kind":"flow","resource":"POST:/api/checkout","threshold":5}`,
	`{"name":"legacy","kind":"flow","resource":"GET:/legacy","threshold":1}`,
}

func newApplyServer(t *testing.T) *testServer {
	t.Helper()
	ts := startServer(t, nil, nil)
	for _, body := range applyFixture {
		ts.createRule(t, body)
	}
	return ts
}

const applyBodyJSON = `{"rules": [
	{"name": "orders", "kind": "flow", "resource": "GET:/api/orders", "threshold": 10},
	{"name": "checkout", "kind": "flow", "resource": "POST:/api/checkout", "threshold": 6},
	{"name": "search", "kind": "flow", "resource": "GET:/api/search", "metric": "concurrency", "threshold": 2}
]}`

const applyBodyYAML = `# the rules CI keeps
rules:
  - name: orders
    kind: flow
    resource: "GET:/api/orders"
    threshold: 10
  - name: checkout
    kind: flow
    resource: "POST:/api/checkout"
    threshold: 6
  - name: search
    kind: flow
    resource: "GET:/api/search"
    metric: concurrency
    threshold: 2
`

// TestApply is POST /api/v1/rules/apply: a rule file, JSON or YAML, that
// creates, updates and with prune deletes, or plans it on a dry run;
// every refused body changes nothing. The plan's own logic (what an update
// changes, prunes that empty an app, the bound on a file's rules) is
// tested in server/rules.
func TestApply(t *testing.T) {
	t.Parallel()
	t.Run("Success", func(t *testing.T) {
		t.Run("creates, updates and prunes as the query says", func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name       string
				query      string
				body       string
				header     reqHeader
				want       planSummary
				wantStored map[string]float64 // every rule is enabled
			}{
				{
					name:       "creates, updates and lists as unchanged only the rules it names",
					body:       applyBodyJSON,
					want:       planSummary{created: []string{"search"}, updated: []string{"checkout"}, unchanged: []string{"orders"}},
					wantStored: map[string]float64{"orders": 10, "checkout": 6, "search": 2, "legacy": 1},
				},
				{
					name:       "prune=false keeps the rules absent from the body",
					query:      "prune=false",
					body:       applyBodyJSON,
					want:       planSummary{created: []string{"search"}, updated: []string{"checkout"}, unchanged: []string{"orders"}},
					wantStored: map[string]float64{"orders": 10, "checkout": 6, "search": 2, "legacy": 1},
				},
				{
					name:       "prune=true deletes the rules absent from the body",
					query:      "prune=true",
					body:       applyBodyJSON,
					want:       planSummary{created: []string{"search"}, updated: []string{"checkout"}, deleted: []string{"legacy"}, unchanged: []string{"orders"}},
					wantStored: map[string]float64{"orders": 10, "checkout": 6, "search": 2},
				},
				{
					name:       "a YAML body",
					query:      "prune=true",
					body:       applyBodyYAML,
					header:     yamlHeader,
					want:       planSummary{created: []string{"search"}, updated: []string{"checkout"}, deleted: []string{"legacy"}, unchanged: []string{"orders"}},
					wantStored: map[string]float64{"orders": 10, "checkout": 6, "search": 2},
				},
				{
					name:       "a YAML body with a charset",
					body:       applyBodyYAML,
					header:     reqHeader{"Content-Type": "application/yaml; charset=utf-8"},
					want:       planSummary{created: []string{"search"}, updated: []string{"checkout"}, unchanged: []string{"orders"}},
					wantStored: map[string]float64{"orders": 10, "checkout": 6, "search": 2, "legacy": 1},
				},
				{
					name:       "an empty list changes nothing",
					body:       `{"rules": []}`,
					want:       planSummary{},
					wantStored: map[string]float64{"orders": 10, "checkout": 5, "legacy": 1},
				},
				{
					name:       "an empty list with prune and allowEmpty deletes every rule",
					query:      "prune=true&allowEmpty=true",
					body:       `{"rules": []}`,
					want:       planSummary{deleted: []string{"orders", "checkout", "legacy"}},
					wantStored: map[string]float64{},
				},
				{
					name:       "the same rules again change nothing",
					query:      "prune=true",
					body:       `{"rules": [` + strings.Join(applyFixture, ",") + `]}`,
					want:       planSummary{unchanged: []string{"orders", "checkout", "legacy"}},
					wantStored: map[string]float64{"orders": 10, "checkout": 5, "legacy": 1},
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ts := newApplyServer(t)

					resp, body := ts.call(t, http.MethodPost, applyPath+"?"+tt.query, tt.body, tt.header)

					mustStatus(t, resp, body, http.StatusOK)
					if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
						t.Errorf("Content-Type = %q, want JSON", ct)
					}
					wantPlan(t, decodePlan(t, body), tt.want)
					if got := ts.storedThresholds(t); !maps.Equal(got, tt.wantStored) {
						t.Errorf("stored rules = %v, want %v", got, tt.wantStored)
					}
					ts.wantLoaded(t, tt.wantStored)
				})
			}
		})
		t.Run("creates the rules as written, with the reason", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			body := `{"rules": [
				{"name": "paced", "kind": "flow", "resource": "r1", "threshold": 10, "controlBehavior": "throttling", "maxQueueingTimeMs": 250, "description": "pace it"},
				{"name": "warm", "kind": "flow", "resource": "r2", "threshold": 30, "tokenCalculateStrategy": "warmUp", "warmUpPeriodSec": 20, "mode": "shadow"},
				{"name": "off", "kind": "flow", "resource": "r3", "threshold": 1, "enabled": false, "relationStrategy": "associated", "refResource": "r1"}
			]}`

			resp, got := ts.call(t, http.MethodPost, applyPath, body, reqHeader{"X-Change-Reason": "release 42"})

			mustStatus(t, resp, got, http.StatusOK)
			wantPlan(t, decodePlan(t, got), planSummary{created: []string{"paced", "warm", "off"}})
			want := map[string]map[string]any{
				"paced": flowRule(map[string]any{"name": "paced", "resource": "r1", "threshold": 10.0, "controlBehavior": "throttling", "maxQueueingTimeMs": 250.0, "description": "pace it"}),
				"warm": flowRule(map[string]any{"name": "warm", "resource": "r2", "threshold": 30.0, "tokenCalculateStrategy": "warmUp", "warmUpPeriodSec": 20.0,
					"warmUpColdFactor": 3.0, "mode": "shadow"}),
				"off": flowRule(map[string]any{"name": "off", "resource": "r3", "threshold": 1.0, "enabled": false, "relationStrategy": "associated", "refResource": "r1"}),
			}
			for name, r := range ts.snapshot(t) {
				resp, body := ts.call(t, http.MethodGet, ruleURL(r.ID), nil, nil)
				mustStatus(t, resp, body, http.StatusOK)
				wantContent(t, jsonObject(t, body), want[name])
				if r.Version != 1 || resp.Header.Get("ETag") != `"1"` {
					t.Errorf("%s: version %d, ETag %s; want 1", name, r.Version, resp.Header.Get("ETag"))
				}
				resp, body = ts.call(t, http.MethodGet, ruleURL(r.ID)+"/revisions", nil, nil)
				mustStatus(t, resp, body, http.StatusOK)
				if revs := decodeStrict[RevisionList](t, body); len(revs.Items) != 1 || revs.Items[0].Reason != "release 42" {
					t.Errorf("%s: revisions = %+v, want one with reason %q", name, revs.Items, "release 42")
				}
			}
			ts.wantLoaded(t, map[string]float64{"paced": 10, "warm": 30})
		})
		t.Run("a dry run writes nothing and plans what the apply does", func(t *testing.T) {
			t.Parallel()
			ts := newApplyServer(t)
			before, loaded := ts.snapshot(t), ts.loadedThresholds()
			body := `{"rules": [
				{"name": "orders", "kind": "flow", "resource": "GET:/api/orders", "threshold": 10},
				{"name": "checkout", "kind": "flow", "resource": "POST:/api/checkout", "threshold": 6, "enabled": false},
				{"name": "search", "kind": "flow", "resource": "GET:/api/search", "threshold": 2}
			]}`
			want := planSummary{created: []string{"search"}, updated: []string{"checkout"}, deleted: []string{"legacy"}, unchanged: []string{"orders"}}

			resp, got := ts.call(t, http.MethodPost, applyPath+"?dryRun=true&prune=true", body, nil)

			mustStatus(t, resp, got, http.StatusOK)
			dry := decodePlan(t, got)
			want.dryRun = true
			wantPlan(t, dry, want)
			ts.wantUnchanged(t, before, loaded)
			for _, r := range before {
				resp, body := ts.call(t, http.MethodGet, ruleURL(r.ID)+"/revisions", nil, nil)
				mustStatus(t, resp, body, http.StatusOK)
				if revs := decodeStrict[RevisionList](t, body); revs.Total != 1 {
					t.Errorf("%s has %d revisions after a dry run, want 1", r.Name, revs.Total)
				}
			}

			t.Run("the real apply answers the same plan", func(t *testing.T) {
				resp, got := ts.call(t, http.MethodPost, applyPath+"?prune=true", body, nil)

				mustStatus(t, resp, got, http.StatusOK)
				real := decodePlan(t, got)
				if real.DryRun {
					t.Error("dryRun = true, want false")
				}
				// The same plan, less the dry run's impact estimates.
				dry.DryRun = false
				if dry.Created[0].Impact == nil || dry.Updated[0].Impact == nil {
					t.Errorf("the dry run's created and updated flow rules have no impact estimate: %+v", dry)
				}
				dry.Created[0].Impact, dry.Updated[0].Impact = nil, nil
				if !reflect.DeepEqual(real, dry) {
					t.Errorf("plan = %+v\nthe dry run's = %+v", real, dry)
				}
				ts.wantLoaded(t, map[string]float64{"orders": 10, "search": 2})
			})

			t.Run("a dry run after it finds nothing to do", func(t *testing.T) {
				resp, got := ts.call(t, http.MethodPost, applyPath+"?dryRun=true&prune=true", body, nil)

				mustStatus(t, resp, got, http.StatusOK)
				wantPlan(t, decodePlan(t, got), planSummary{dryRun: true, unchanged: []string{"orders", "checkout", "search"}})
			})
		})
		t.Run("an update lists its changes", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			r := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":10,"description":"old"}`)

			resp, body := ts.call(t, http.MethodPost, applyPath, applyRules(`"name":"orders","kind":"flow","resource":"r","threshold":20,"controlBehavior":"throttling","maxQueueingTimeMs":500`), nil)

			mustStatus(t, resp, body, http.StatusOK)
			plan := decodePlan(t, body)
			wantPlan(t, plan, planSummary{updated: []string{"orders"}})
			if len(plan.Updated) != 1 {
				return
			}
			want := map[string][2]string{
				"threshold":         {`10`, `20`},
				"controlBehavior":   {`"reject"`, `"throttling"`},
				"maxQueueingTimeMs": {`null`, `500`},
				"description":       {`"old"`, `""`},
			}
			if got := changes(t, plan.Updated[0]); !maps.Equal(got, want) {
				t.Errorf("changes = %v\nwant      %v", got, want)
			}
			if stored, _ := ts.getRule(t, r.ID); stored.Version != 2 {
				t.Errorf("version = %d, want 2", stored.Version)
			}
		})
		t.Run("YAML bodies", func(t *testing.T) {
			t.Parallel()
			applyYAML(t, []yamlCase{
				{"merge keys", "rules:\n  - &base {name: a, kind: flow, resource: x, threshold: 5}\n  - {<<: *base, name: b, threshold: 7}\n", 200, "", []string{"a", "b"}},
				{"YAML 1.1 booleans are strings", "rules:\n  - {name: on, kind: flow, resource: yes, threshold: 5}\n", 200, "", []string{"on"}},
			})
		})
	})
	t.Run("Invalid", func(t *testing.T) {
		t.Run("refused bodies change nothing", func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name       string
				body       string
				header     reqHeader
				wantStatus int
				wantFields []string
			}{
				{name: "not JSON", body: `{"rules": [`, wantStatus: 400},
				{name: "YAML sent as JSON", body: applyBodyYAML, wantStatus: 400},
				{name: "empty body", body: ``, wantStatus: 400},
				{name: "broken YAML", body: "rules: [\n  - name: a\n", header: yamlHeader, wantStatus: 400},
				{name: "YAML with a tab indent", body: "rules:\n\t- name: a\n", header: yamlHeader, wantStatus: 400},
				{name: "unknown top-level field", body: `{"rules": [], "prune": true}`, wantStatus: 422, wantFields: []string{"prune"}},
				{name: "unknown top-level field in YAML", body: "rules: []\nrule: []\n", header: yamlHeader, wantStatus: 422, wantFields: []string{"rule"}},
				{name: "no rules", body: `{}`, wantStatus: 422, wantFields: []string{"rules"}},
				{name: "an empty list would prune every rule", body: `{"rules": []}`, wantStatus: 422, wantFields: []string{"prune"}},
				{name: "rules is not a list", body: `{"rules": {"name": "a"}}`, wantStatus: 422, wantFields: []string{"rules"}},
				{name: "a rule is not an object", body: `{"rules": [7]}`, wantStatus: 422, wantFields: []string{"rules[0]"}},
				{name: "name is required", body: applyRules(`"kind":"flow","resource":"x","threshold":1`), wantStatus: 422, wantFields: []string{"rules[0].name"}},
				{
					name:       "duplicate names",
					body:       applyRules(`"name":"dup","kind":"flow","resource":"x","threshold":1`, `"name":"dup","kind":"flow","resource":"y","threshold":2`),
					wantStatus: 422,
					wantFields: []string{"rules[1].name"},
				},
				{
					name: "bad fields of several rules",
					body: applyRules(
						`"name":"fine","kind":"flow","resource":"x","threshold":1`,
						`"name":"negative","kind":"flow","resource":"x","threshold":-1`,
						`"name":"fine-2","kind":"flow","resource":"x","threshold":1`,
						`"name":"typo","kind":"flow","resource":"x","thresold":1,"mode":"dry"`,
					),
					wantStatus: 422,
					wantFields: []string{"rules[1].threshold", "rules[3].thresold", "rules[3].threshold", "rules[3].mode"},
				},
				{
					name:       "a bad rule in YAML",
					body:       "rules:\n  - name: a\n    kind: flow\n    resource: x\n    threshold: -1\n",
					header:     yamlHeader,
					wantStatus: 422,
					wantFields: []string{"rules[0].threshold"},
				},
			}
			// One server: each case is refused and checks that it changed nothing.
			ts := newApplyServer(t)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					before, loaded := ts.snapshot(t), ts.loadedThresholds()

					resp, body := ts.call(t, http.MethodPost, applyPath+"?prune=true", tt.body, tt.header)

					code := "validation_failed"
					if tt.wantStatus == http.StatusBadRequest {
						code = "bad_request"
					}
					wantError(t, resp, body, tt.wantStatus, code, tt.wantFields...)
					ts.wantUnchanged(t, before, loaded)
				})
			}
		})
		t.Run("the errors of a rule name it", func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name       string
				kind       string // of rules[3]: flow if empty
				fields     string // of rules[3], after name, kind and resource
				wantFields []string
			}{
				{name: "out of range", fields: `"threshold":-1`, wantFields: []string{"rules[3].threshold"}},
				{name: "missing threshold", fields: `"mode":"enforce"`, wantFields: []string{"rules[3].threshold"}},
				{name: "wrong JSON type", fields: `"threshold":"1"`, wantFields: []string{"rules[3].threshold"}},
				{name: "not a whole number", fields: `"threshold":1,"statIntervalMs":1.5`, wantFields: []string{"rules[3].statIntervalMs"}},
				{name: "enabled is not a bool", fields: `"threshold":1,"enabled":"yes"`, wantFields: []string{"rules[3].enabled"}},
				{name: "unknown field", fields: `"threshold":1,"colour":"red"`, wantFields: []string{"rules[3].colour"}},
				{name: "another kind's field", fields: `"threshold":1,"retryTimeoutMs":1000`, wantFields: []string{"rules[3].retryTimeoutMs"}},
				{name: "a field that does not apply", fields: `"threshold":1,"maxQueueingTimeMs":100`, wantFields: []string{"rules[3].maxQueueingTimeMs"}},
				{name: "bad enum", fields: `"threshold":1,"metric":"rps"`, wantFields: []string{"rules[3].metric"}},
				{name: "bad name", fields: `"threshold":1,"name":"The Fourth"`, wantFields: []string{"rules[3].name"}},
				{name: "a hotspot rule without paramKey", kind: "hotspot", fields: `"threshold":1`, wantFields: []string{"rules[3].paramKey"}},
				{name: "a hotspot specific threshold out of range", kind: "hotspot", fields: `"paramKey":"u","threshold":1,"specificItems":{"a":-1}`, wantFields: []string{"rules[3].specificItems"}},
				{name: "an origin of the wrong type", kind: "authority", fields: `"strategy":"allow","origins":["a",1]`, wantFields: []string{"rules[3].origins[1]"}},
				{name: "an authority rule's bad strategy", kind: "authority", fields: `"strategy":"block","origins":["a"]`, wantFields: []string{"rules[3].strategy"}},
			}
			// One server: each case is refused and checks that it changed nothing.
			ts := newApplyServer(t)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					before, loaded := ts.snapshot(t), ts.loadedThresholds()
					ruleName := "the-fourth"
					kind := cmp.Or(tt.kind, "flow")
					fourth := `"name":"the-fourth","kind":"` + kind + `","resource":"r3",` + tt.fields
					if strings.Contains(tt.fields, `"name"`) {
						ruleName = "The Fourth"
						fourth = `"kind":"` + kind + `","resource":"r3",` + tt.fields
					}
					body := applyRules(
						`"name":"orders","kind":"flow","resource":"GET:/api/orders","threshold":11`,
						`"name":"r1","kind":"flow","resource":"r1","threshold":1`,
						`"name":"r2","kind":"flow","resource":"r2","threshold":2`,
						fourth,
					)

					resp, got := ts.call(t, http.MethodPost, applyPath, body, nil)

					e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", tt.wantFields...)
					for _, d := range e.Details {
						if !strings.Contains(d.Message, ruleName) {
							t.Errorf("details %s: message %q does not name the rule %q", d.Field, d.Message, ruleName)
						}
					}
					ts.wantUnchanged(t, before, loaded)
				})
			}
		})
		t.Run("a bad rule among 200 writes none of them", func(t *testing.T) {
			t.Parallel()
			ts := newApplyServer(t)
			before, loaded := ts.snapshot(t), ts.loadedThresholds()
			rules := []string{`"name":"orders","kind":"flow","resource":"GET:/api/orders","threshold":50`}
			for i := 1; i < 199; i++ {
				rules = append(rules, fmt.Sprintf(`"name":"bulk-%03d","kind":"flow","resource":"bulk/%d","threshold":%d`, i, i, i))
			}
			rules = append(rules, `"name":"bulk-199","kind":"flow","resource":"bulk/199","threshold":-1`)
			if len(rules) != 200 {
				t.Fatalf("built %d rules, want 200", len(rules))
			}

			resp, body := ts.call(t, http.MethodPost, applyPath+"?prune=true", applyRules(rules...), nil)

			e := wantError(t, resp, body, http.StatusUnprocessableEntity, "validation_failed", "rules[199].threshold")
			for _, d := range e.Details {
				if !strings.Contains(d.Message, "bulk-199") {
					t.Errorf("details %s: message %q does not name bulk-199", d.Field, d.Message)
				}
			}
			ts.wantUnchanged(t, before, loaded)
			orders := before["orders"]
			resp, body = ts.call(t, http.MethodGet, ruleURL(orders.ID)+"/revisions", nil, nil)
			mustStatus(t, resp, body, http.StatusOK)
			if revs := decodeStrict[RevisionList](t, body); revs.Total != 1 {
				t.Errorf("orders has %d revisions, want 1", revs.Total)
			}
		})
		t.Run("YAML bodies", func(t *testing.T) {
			t.Parallel()
			applyYAML(t, []yamlCase{
				{"a key twice", "rules:\n  - name: a\n    kind: flow\n    resource: x\n    threshold: 1\n    threshold: 2\n", 400, "rules[0].threshold", nil},
				{"rules twice", "rules: []\nrules: []\n", 400, "rules", nil},
				{"a second document", "rules: []\n---\nrules: []\n", 400, "", nil},
				{"empty", "", 400, "", nil},
				{"an alias of its own anchor", "rules: &r [*r]\n", 400, "", nil},
				{"aliases that expand past the bound", "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" +
					"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nrules: []\n", 400, "", nil},
				{"a key that is a list", "? [a]\n: 1\nrules: []\n", 400, "body", nil},
				{"a string field takes no number", "rules:\n  - {name: 1.0, kind: flow, resource: x, threshold: 5}\n", 422, "rules[0].name", nil},
				{"a null name is not set, as in JSON", "rules:\n  - {name: ~, kind: flow, resource: x, threshold: 5}\n", 422, "rules[0].name", nil},
				{"a number field refuses a string", "rules:\n  - {name: a, kind: flow, resource: x, threshold: .inf}\n", 422, "rules[0].threshold", nil},
			})
		})
		// Each answer names what the body is, and a bad name is reported
		// once, not again as the rule's label is read.
		t.Run("bodies that are no rule file", func(t *testing.T) {
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
		})
	})
}

// yamlCase is a YAML body of a dry-run apply and its answer: the status,
// for an error the one field it names, if any, and for a plan the names it
// creates.
type yamlCase struct {
	name, body string
	wantStatus int
	wantField  string
	wantNames  []string
}

// applyYAML sends each case's body to one server.
func applyYAML(t *testing.T, tests []yamlCase) {
	t.Helper()
	ts := startServer(t, nil, nil)
	yamlHeader := reqHeader{"Content-Type": "application/yaml"}
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

// applyRules builds an apply body of rules, each given as the JSON fields
// inside its braces.
func applyRules(rules ...string) string {
	return `{"rules":[{` + strings.Join(rules, "},{") + `}]}`
}

// exportFixture holds rules with every kind of field, and strings that a
// careless YAML writer turns into other types.
var exportFixture = []string{
	`{"name":"orders","kind":"flow","resource":"GET:/api/orders","threshold":100}`,
	`{"name":"inflight","kind":"flow","resource":"GET:/api/orders","metric":"concurrency","threshold":5,"enabled":false}`,
	`{"name":"paced","kind":"flow","resource":"POST:/api/pay","threshold":0.5,"statIntervalMs":60000,"controlBehavior":"throttling","maxQueueingTimeMs":1500,"mode":"shadow"}`,
	`{"name":"warm","kind":"flow","resource":"1000","threshold":1e6,"tokenCalculateStrategy":"warmUp","warmUpPeriodSec":30,"warmUpColdFactor":4,"description":"true"}`,
	`{"name":"by-stock","kind":"flow","resource":"yes","threshold":0,"relationStrategy":"associated","refResource":"null","description":"line one\nline two: \"quoted\" # not a comment"}`,
	`{"name":"unicode","kind":"flow","resource":"GET:/api/订单","threshold":3,"description":"  leading and trailing spaces  "}`,
	`{"name":"for-app-a","kind":"flow","resource":"GET:/api/orders","threshold":7,"limitApp":"app-a","expiresAt":"2030-01-01T00:00:00Z"}`,
	`{"name":"per-user","kind":"hotspot","resource":"GET:/api/orders","paramKey":"header:X-User","threshold":10,"burstCount":5,"specificItems":{"vip":100,"007":0,"true":1.5}}`,
	`{"name":"per-ip-inflight","kind":"hotspot","resource":"GET:/api/orders","paramKey":"ip","metric":"concurrency","threshold":2,"paramsMaxCapacity":50}`,
	`{"name":"per-key-paced","kind":"hotspot","resource":"POST:/api/pay","paramKey":"arg0","threshold":1,"controlBehavior":"throttling","maxQueueingTimeMs":300,"statIntervalMs":2000,"mode":"shadow"}`,
	`{"name":"shops-only","kind":"authority","resource":"GET:/api/admin","strategy":"allow","origins":["shop-a","123","yes"]}`,
	`{"name":"no-scrapers","kind":"authority","resource":"GET:/api/orders","strategy":"deny","origins":["scraper"],"enabled":false}`,
}

// TestExport is GET /api/v1/rules/export: the stored rules as a rule
// file, JSON or YAML, that apply takes back as a no-op.
func TestExport(t *testing.T) {
	t.Parallel()
	t.Run("Success", func(t *testing.T) {
		tests := []struct {
			format          string
			wantContentType string
			applyHeader     reqHeader
		}{
			{format: "json", wantContentType: "application/json"},
			{format: "yaml", wantContentType: "yaml", applyHeader: yamlHeader},
		}
		for _, tt := range tests {
			t.Run(tt.format, func(t *testing.T) {
				ts := startServer(t, nil, nil)
				for _, body := range exportFixture {
					ts.createRule(t, body)
				}
				before, loaded := ts.snapshot(t), ts.loadedThresholds()

				resp, exported := ts.call(t, http.MethodGet, exportPath+"?format="+tt.format, nil, nil)

				mustStatus(t, resp, exported, http.StatusOK)
				if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, tt.wantContentType) {
					t.Errorf("Content-Type = %q, want %s", ct, tt.wantContentType)
				}
				if tt.format == "json" {
					if file := decodeStrict[rules.RuleFile](t, exported); len(file.Rules) != len(exportFixture) {
						t.Errorf("exported %d rules, want %d", len(file.Rules), len(exportFixture))
					}
				}

				resp, body := ts.call(t, http.MethodPost, applyPath+"?prune=true", exported, tt.applyHeader)

				mustStatus(t, resp, body, http.StatusOK)
				all := slices.Collect(maps.Keys(before))
				plan := decodePlan(t, body)
				wantPlan(t, plan, planSummary{unchanged: all})
				for _, u := range plan.Updated {
					t.Errorf("%s would change: %v", u.Name, changes(t, u))
				}
				ts.wantUnchanged(t, before, loaded)
			})
		}

		t.Run("nothing to export", func(t *testing.T) {
			ts := startServer(t, nil, nil)

			resp, body := ts.call(t, http.MethodGet, exportPath+"?format=json", nil, nil)

			mustStatus(t, resp, body, http.StatusOK)
			if got := string(bytes.Join(bytes.Fields(body), nil)); got != `{"rules":[]}` {
				t.Errorf("export = %s, want {\"rules\":[]}", body)
			}
		})
	})
	t.Run("Invalid", func(t *testing.T) {
		t.Run("format xml", func(t *testing.T) {
			ts := startServer(t, nil, nil)

			resp, body := ts.call(t, http.MethodGet, exportPath+"?format=xml", nil, nil)

			wantError(t, resp, body, http.StatusBadRequest, "bad_request", "format")
		})
	})
}
