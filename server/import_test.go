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

// readSentinelFile is a Sentinel rule file of testdata/sentinel.
func readSentinelFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "sentinel", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readSentinelSample is a sample of sentinel-golang's Kubernetes CRDs
// (testdata/sentinel/k8s-crd, source in its README).
func readSentinelSample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "sentinel", "k8s-crd", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sentinelHotspotFile is sentinel-golang hotspot rules as its data sources
// read them.
const sentinelHotspotFile = `[
  {"id": "1", "resource": "GET:/api/orders", "metricType": 1, "controlBehavior": 0, "paramIndex": 0, "paramKey": "header:X-User",
   "threshold": 10, "maxQueueingTimeMs": 0, "burstCount": 3, "durationInSec": 2, "paramsMaxCapacity": 0,
   "specificItems": [{"valKind": 1, "valStr": "vip", "threshold": 100}, {"valKind": 0, "valStr": "007", "threshold": 0},
                     {"valKind": 2, "valStr": "TRUE", "threshold": 5}, {"valKind": 3, "valStr": "1.50", "threshold": 7}]},
  {"id": "2", "resource": "GET:/api/orders", "metricType": 0, "controlBehavior": 0, "paramIndex": 1,
   "threshold": 4, "maxQueueingTimeMs": 0, "burstCount": 0, "durationInSec": 0, "paramsMaxCapacity": 5000, "specificItems": null},
  {"resource": "POST:/api/pay", "metricType": 1, "controlBehavior": 1, "paramKey": "ip", "threshold": 20, "maxQueueingTimeMs": 250, "burstCount": 9}
]`

func readEnvoyFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "envoy", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// envoySummary is a stored rule as one line: "name kind resource
// threshold/statIntervalMs mode [disabled] [param=K] [replaces=X] [app=A]".
func envoySummary(r rules.APIRule) string {
	line := fmt.Sprintf("%s %s %s %g/%d %s", r.Name, r.Kind, r.Resource, *r.Threshold, *r.StatIntervalMs, r.Mode)
	if !r.Enabled {
		line += " disabled"
	}
	if r.ParamKey != nil {
		line += " param=" + *r.ParamKey
	}
	if r.Replaces != nil && *r.Replaces != "" {
		line += " replaces=" + *r.Replaces
	}
	if r.App != "" {
		line += " app=" + r.App
	}
	return line
}

func (ts *testServer) envoyRules(t *testing.T) []string {
	t.Helper()
	var got []string
	for _, r := range ts.listRules(t, "pageSize=500").Items {
		got = append(got, envoySummary(r))
	}
	slices.Sort(got)
	return got
}

// loadedNames are the names of the flow and hotspot rules the server's
// engine runs.
func (ts *testServer) loadedNames() []string {
	var names []string
	for _, r := range ts.Server.engine.FlowRules() {
		names = append(names, r.Name)
	}
	for _, r := range ts.Server.engine.HotspotRules() {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}

// examplesRules are the rules of envoyproxy/ratelimit's
// examples/ratelimit/config/example.yaml (before quota_mode).
var examplesRules = []string{
	"rl-category-account flow rl:category=account 4/60000 enforce replaces=bkthomps,fake_name",
	"rl-source_cluster-proxy-destination_cluster-bkthomps flow rl:source_cluster=proxy/destination_cluster=bkthomps 2/60000 enforce replaces=bkthomps",
	"rl-source_cluster-proxy-destination_cluster-mock flow rl:source_cluster=proxy/destination_cluster=mock 1/60000 enforce",
	"rl-source_cluster-proxy-destination_cluster-override flow rl:source_cluster=proxy/destination_cluster=override 2/60000 enforce replaces=banned_limit",
	"fake_name flow rl:source_cluster=proxy/destination_cluster=fake 2/60000 enforce",
	"rl-foo hotspot rl:foo 2/60000 enforce param=foo",
	"rl-foo-bar hotspot rl:foo/bar 3/60000 enforce param=foo/bar",
	"bkthomps hotspot rl:foo/bar=bkthomps 1/60000 enforce param=foo",
	"banned_limit hotspot rl:foo/bar=banned 0/60000 enforce param=foo",
	"rl-foo-baz hotspot rl:foo/baz 1/1000 enforce param=foo/baz",
	"rl-foo-baz-not-so-shady hotspot rl:foo/baz=not-so-shady 3/60000 enforce param=foo",
	"rl-foo-baz-shady hotspot rl:foo/baz=shady 3/60000 shadow param=foo",
	"rl-foo-bay hotspot rl:foo/bay 0/1000 enforce disabled param=foo/bay",
	"rl-unspec hotspot rl:unspec 2/60000 enforce param=unspec",
	"rl-qux hotspot rl:qux 0/1000 enforce disabled param=qux",
}

func summaryNames(lines []string) []string {
	var names []string
	for _, l := range lines {
		name, _, _ := strings.Cut(l, " ")
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// TestImport is POST /api/v1/rules/import: Sentinel's rule files and
// Kubernetes custom resources (format=sentinel) and envoyproxy/ratelimit's
// configuration (format=envoy) planned on a dry run, applied as Sluice
// rules, and a no-op imported again; a file Sluice cannot express, or a
// bad request, is refused with every field named, and nothing is written.
// How Envoy's descriptors map to rules is tested in server/rules; Sentinel's
// fields are checked here, as the API shows the rules they make.
func TestImport(t *testing.T) {
	t.Parallel()
	yamlBody := reqHeader{"Content-Type": "application/yaml"}
	t.Run("Success", func(t *testing.T) {
		t.Run("sentinel", func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name       string
				file       string // under testdata/sentinel, or
				body       string // inline
				want       map[string]map[string]any
				wantLoaded map[string]float64
			}{
				{
					name: "three rules, two on one resource",
					file: "flow_rules.json",
					want: map[string]map[string]any{
						"flow-get-api-orders": flowRule(map[string]any{"name": "flow-get-api-orders", "resource": "GET:/api/orders", "threshold": 100.0}),
						"flow-get-api-orders-2": flowRule(map[string]any{
							"name": "flow-get-api-orders-2", "resource": "GET:/api/orders", "threshold": 500.0, "statIntervalMs": 2000.0,
							"controlBehavior": "throttling", "maxQueueingTimeMs": 500.0,
							"tokenCalculateStrategy": "warmUp", "warmUpPeriodSec": 10.0, "warmUpColdFactor": 3.0,
						}),
						"flow-post-api-checkout": flowRule(map[string]any{
							"name": "flow-post-api-checkout", "resource": "POST:/api/checkout", "threshold": 20.0,
							"relationStrategy": "associated", "refResource": "GET:/api/stock",
						}),
					},
					wantLoaded: map[string]float64{"flow-get-api-orders": 100, "flow-get-api-orders-2": 500, "flow-post-api-checkout": 20},
				},
				{
					name: "fields Sentinel ignores for the behaviour are dropped",
					file: "ignored_fields.json",
					want: map[string]map[string]any{
						"flow-abc": flowRule(map[string]any{"name": "flow-abc", "resource": "abc", "threshold": 100.0}),
						"flow-abc-2": flowRule(map[string]any{
							"name": "flow-abc-2", "resource": "abc", "threshold": 200.0,
							"controlBehavior": "throttling", "maxQueueingTimeMs": 2000.0,
							"relationStrategy": "associated", "refResource": "refDefault",
						}),
					},
					wantLoaded: map[string]float64{"flow-abc": 100, "flow-abc-2": 200},
				},
				{
					name:       "only resource and threshold",
					body:       `[{"resource": "GET:/api/search", "threshold": 7}]`,
					want:       map[string]map[string]any{"flow-get-api-search": flowRule(map[string]any{"name": "flow-get-api-search", "resource": "GET:/api/search", "threshold": 7.0})},
					wantLoaded: map[string]float64{"flow-get-api-search": 7},
				},
				{
					name: "an interval and a cold factor of their own",
					body: `[{"id": "7", "resource": "q", "threshold": 40, "statIntervalInMs": 500, "tokenCalculateStrategy": 1, "warmUpPeriodSec": 60, "warmUpColdFactor": 5}]`,
					want: map[string]map[string]any{"flow-q": flowRule(map[string]any{
						"name": "flow-q", "resource": "q", "threshold": 40.0, "statIntervalMs": 500.0,
						"tokenCalculateStrategy": "warmUp", "warmUpPeriodSec": 60.0, "warmUpColdFactor": 5.0,
					})},
					wantLoaded: map[string]float64{"flow-q": 40},
				},
				{
					name: "throttling without a queue",
					body: `[{"resource": "q", "threshold": 10, "controlBehavior": 1, "maxQueueingTimeMs": 0}]`,
					want: map[string]map[string]any{"flow-q": flowRule(map[string]any{
						"name": "flow-q", "resource": "q", "threshold": 10.0, "controlBehavior": "throttling", "maxQueueingTimeMs": 0.0,
					})},
					wantLoaded: map[string]float64{"flow-q": 10},
				},
				{
					name:       "an empty file",
					body:       `[]`,
					want:       map[string]map[string]any{},
					wantLoaded: map[string]float64{},
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					body := []byte(tt.body)
					if tt.file != "" {
						body = readSentinelFile(t, tt.file)
					}
					names := slices.Sorted(maps.Keys(tt.want))
					ts := startServer(t, nil, nil)

					resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel", body, nil)

					mustStatus(t, resp, got, http.StatusOK)
					wantPlan(t, decodePlan(t, got), planSummary{created: names})
					stored := ts.snapshot(t)
					if got := slices.Sorted(maps.Keys(stored)); !slices.Equal(got, names) {
						t.Errorf("stored rules = %q, want %q", got, names)
					}
					for name, want := range tt.want {
						r, ok := stored[name]
						if !ok {
							continue
						}
						resp, body := ts.call(t, http.MethodGet, ruleURL(r.ID), nil, nil)
						mustStatus(t, resp, body, http.StatusOK)
						got := jsonObject(t, body)
						delete(got, "description") // Sluice's note on where the rule came from
						t.Run(name, func(t *testing.T) { wantContent(t, got, want) })
					}
					ts.wantLoaded(t, tt.wantLoaded)

					t.Run("importing it again changes nothing", func(t *testing.T) {
						resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel", body, nil)

						mustStatus(t, resp, got, http.StatusOK)
						wantPlan(t, decodePlan(t, got), planSummary{unchanged: names})
						ts.wantUnchanged(t, stored, tt.wantLoaded)
					})
				})
			}
		})
		t.Run("sentinel, a dry run", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)

			resp, body := ts.call(t, http.MethodPost, importPath+"?format=sentinel&dryRun=true", readSentinelFile(t, "flow_rules.json"), nil)

			mustStatus(t, resp, body, http.StatusOK)
			wantPlan(t, decodePlan(t, body), planSummary{dryRun: true, created: []string{"flow-get-api-orders", "flow-get-api-orders-2", "flow-post-api-checkout"}})
			ts.wantNoRules(t)
		})
		// Planned on a dry run, then created: paramIndex N is the key argN,
		// durationInSec is statIntervalMs, specificItems are value →
		// threshold, fields Sentinel ignores are dropped; a no-op imported
		// again.
		t.Run("sentinel hotspot rules", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			names := []string{"hotspot-get-api-orders", "hotspot-get-api-orders-2", "hotspot-post-api-pay"}

			resp, body := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=hotspot&dryRun=true", sentinelHotspotFile, nil)

			mustStatus(t, resp, body, http.StatusOK)
			wantPlan(t, decodePlan(t, body), planSummary{dryRun: true, created: names})
			ts.wantNoRules(t)

			resp, body = ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=hotspot", sentinelHotspotFile, nil)

			mustStatus(t, resp, body, http.StatusOK)
			wantPlan(t, decodePlan(t, body), planSummary{created: names})
			want := map[string]map[string]any{
				names[0]: hotspotRule(map[string]any{
					"name": names[0], "resource": "GET:/api/orders", "paramKey": "header:X-User", "threshold": 10.0,
					"burstCount": 3.0, "statIntervalMs": 2000.0,
					"specificItems": map[string]any{"vip": 100.0, "7": 0.0, "true": 5.0, "1.5": 7.0},
				}),
				names[1]: hotspotRule(map[string]any{
					"name": names[1], "resource": "GET:/api/orders", "paramKey": "arg1", "metric": "concurrency", "threshold": 4.0,
					"paramsMaxCapacity": 5000.0,
				}, "statIntervalMs", "controlBehavior", "burstCount"),
				names[2]: hotspotRule(map[string]any{
					"name": names[2], "resource": "POST:/api/pay", "paramKey": "ip", "threshold": 20.0,
					"controlBehavior": "throttling", "maxQueueingTimeMs": 250.0,
				}, "burstCount"),
			}
			stored := ts.snapshot(t)
			for _, name := range names {
				resp, body := ts.call(t, http.MethodGet, ruleURL(stored[name].ID), nil, nil)
				mustStatus(t, resp, body, http.StatusOK)
				got := jsonObject(t, body)
				delete(got, "description")
				t.Run(name, func(t *testing.T) { wantContent(t, got, want[name]) })
			}
			if got := len(ts.Server.engine.HotspotRules()); got != 3 {
				t.Errorf("the engine holds %d hotspot rules, want 3", got)
			}

			resp, body = ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=hotspot", sentinelHotspotFile, nil)

			mustStatus(t, resp, body, http.StatusOK)
			wantPlan(t, decodePlan(t, body), planSummary{unchanged: names})
			ts.wantUnchanged(t, stored, map[string]float64{})
		})
		// A flow rule may carry Sentinel's limitApp; "" is unset.
		t.Run("sentinel, a flow rule's limitApp", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			body := `[{"resource": "a", "threshold": 5, "limitApp": "app-a"}, {"resource": "a", "threshold": 6, "limitApp": ""}]`

			resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel", body, nil)

			mustStatus(t, resp, got, http.StatusOK)
			stored := ts.snapshot(t)
			if r := stored["flow-a"]; r.LimitApp == nil || *r.LimitApp != "app-a" {
				t.Errorf("flow-a limitApp = %v, want app-a", r.LimitApp)
			}
			if r := stored["flow-a-2"]; r.LimitApp == nil || *r.LimitApp != "default" {
				t.Errorf("flow-a-2 limitApp = %v, want default", r.LimitApp)
			}
		})
		// The samples of sentinel-golang's Kubernetes CRDs as they are, YAML
		// custom resources whose enums are names: the resource's kind says the
		// rules' kind, and each name means its number.
		t.Run("sentinel, Kubernetes FlowRules", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel", readSentinelSample(t, "datasource_v1_flowrules.yaml"), yamlBody)
			mustStatus(t, resp, got, http.StatusOK)
			if plan := decodePlan(t, got); len(plan.Created) != 3 || len(plan.Notes) != 0 {
				t.Fatalf("plan %s, want the 3 rules created and nothing dropped", got)
			}
			resp, got = ts.call(t, http.MethodGet, rulesPath+"?resource=abcd", nil, nil)
			mustStatus(t, resp, got, http.StatusOK)
			var list struct {
				Items []map[string]any `json:"items"`
			}
			if err := json.Unmarshal(got, &list); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"kind": "flow", "threshold": 200.0, "relationStrategy": "current", "tokenCalculateStrategy": "warmUp",
				"controlBehavior": "reject", "warmUpPeriodSec": 20.0, "warmUpColdFactor": 3.0}
			if len(list.Items) != 1 {
				t.Fatalf("rules of abcd: %s, want one", got)
			}
			for field, value := range want {
				if list.Items[0][field] != value {
					t.Errorf("abcd's %s = %v, want %v (WarmUp, Reject, CurrentResource by name)", field, list.Items[0][field], value)
				}
			}
		})
		// envoyproxy/ratelimit's example configuration: the engine runs its
		// rules but the unlimited ones, which are disabled.
		t.Run("envoy", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			body := readEnvoyFile(t, "examples-example-f28024e.yaml")
			names := summaryNames(examplesRules)

			resp, got := ts.call(t, http.MethodPost, importPath+"?format=envoy&dryRun=true", body, reqHeader{"Content-Type": "application/yaml"})

			mustStatus(t, resp, got, http.StatusOK)
			wantPlan(t, decodePlan(t, got), planSummary{dryRun: true, created: names})
			ts.wantNoRules(t)

			resp, got = ts.call(t, http.MethodPost, importPath+"?format=envoy", body, reqHeader{"Content-Type": "application/yaml"})

			mustStatus(t, resp, got, http.StatusOK)
			wantPlan(t, decodePlan(t, got), planSummary{created: names})
			want := slices.Sorted(slices.Values(examplesRules))
			if got := ts.envoyRules(t); !slices.Equal(got, want) {
				t.Errorf("stored rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			enabled := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "rl-foo-bay" || n == "rl-qux" })
			if got := ts.loadedNames(); !slices.Equal(got, enabled) {
				t.Errorf("engine rules = %q, want %q", got, enabled)
			}

			t.Run("importing it again plans nothing", func(t *testing.T) {
				before, loaded := ts.snapshot(t), ts.loadedThresholds()

				resp, got := ts.call(t, http.MethodPost, importPath+"?format=envoy", body, nil)

				mustStatus(t, resp, got, http.StatusOK)
				wantPlan(t, decodePlan(t, got), planSummary{unchanged: names})
				ts.wantUnchanged(t, before, loaded)
			})
		})
		// The app parameter names the app of every imported rule.
		t.Run("envoy, the rules of an app", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)

			resp, got := ts.call(t, http.MethodPost, importPath+"?format=envoy&app=edge", readEnvoyFile(t, "readme-example3.yaml"), nil)

			mustStatus(t, resp, got, http.StatusOK)
			want := []string{
				"edge_proxy_per_ip-remote_address hotspot edge_proxy_per_ip:remote_address 10/1000 enforce param=remote_address app=edge",
				"edge_proxy_per_ip-remote_address-50.0.0.5 flow edge_proxy_per_ip:remote_address=50.0.0.5 0/1000 enforce app=edge",
			}
			if got := ts.envoyRules(t); !slices.Equal(got, want) {
				t.Errorf("stored rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	})
	t.Run("Invalid", func(t *testing.T) {
		t.Run("sentinel", func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name       string
				query      string
				file       string
				body       string
				wantStatus int
				wantFields []string
			}{
				{name: "MemoryAdaptive", query: "format=sentinel", file: "memory_adaptive.json", wantStatus: 422, wantFields: []string{"rules[1].tokenCalculateStrategy"}},
				{name: "unknown control behaviour", query: "format=sentinel", body: `[{"resource":"a","threshold":1,"controlBehavior":2}]`, wantStatus: 422, wantFields: []string{"rules[0].controlBehavior"}},
				{name: "unknown relation strategy", query: "format=sentinel", body: `[{"resource":"a","threshold":1,"relationStrategy":3}]`, wantStatus: 422, wantFields: []string{"rules[0].relationStrategy"}},
				{name: "negative threshold", query: "format=sentinel", body: `[{"resource":"a","threshold":1},{"resource":"b","threshold":-1}]`, wantStatus: 422, wantFields: []string{"rules[1].threshold"}},
				{name: "threshold as a string", query: "format=sentinel", body: `[{"resource":"a","threshold":"100"}]`, wantStatus: 422, wantFields: []string{"rules[0].threshold"}},
				{name: "no resource", query: "format=sentinel", body: `[{"threshold":1}]`, wantStatus: 422, wantFields: []string{"rules[0].resource"}},
				{name: "warm-up without a period", query: "format=sentinel", body: `[{"resource":"a","threshold":1,"tokenCalculateStrategy":1}]`, wantStatus: 422, wantFields: []string{"rules[0].warmUpPeriodSec"}},
				{name: "associated without refResource", query: "format=sentinel", body: `[{"resource":"a","threshold":1,"relationStrategy":1}]`, wantStatus: 422, wantFields: []string{"rules[0].refResource"}},
				{name: "format missing", file: "flow_rules.json", wantStatus: 400, wantFields: []string{"format"}},
				{name: "unknown format", query: "format=nacos", file: "flow_rules.json", wantStatus: 400, wantFields: []string{"format"}},
				{name: "body is an object", query: "format=sentinel", body: `{"resource":"a","threshold":1}`, wantStatus: 422, wantFields: []string{"body"}},
				{name: "body is not JSON", query: "format=sentinel", body: `resource: a`, wantStatus: 400},
				{name: "body is empty", query: "format=sentinel", body: ``, wantStatus: 400},
				{name: "unknown kind", query: "format=sentinel&kind=authority", body: `[]`, wantStatus: 400, wantFields: []string{"kind"}},
				{name: "limitApp a number", query: "format=sentinel", body: `[{"resource":"a","threshold":1,"limitApp":1}]`, wantStatus: 422, wantFields: []string{"rules[0].limitApp"}},
				{name: "hotspot negative paramIndex", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramIndex":-1}]`, wantStatus: 422, wantFields: []string{"rules[0].paramIndex", "rules[0].paramKey"}},
				{name: "hotspot unknown metricType", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":2,"threshold":1,"paramKey":"k"}]`, wantStatus: 422, wantFields: []string{"rules[0].metricType"}},
				{name: "hotspot unknown controlBehavior", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"controlBehavior":2,"threshold":1,"paramKey":"k"}]`, wantStatus: 422, wantFields: []string{"rules[0].controlBehavior"}},
				{name: "hotspot durationInSec too long", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","durationInSec":86401}]`, wantStatus: 422, wantFields: []string{"rules[0].durationInSec"}},
				{name: "hotspot negative threshold", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":-1,"paramKey":"k"}]`, wantStatus: 422, wantFields: []string{"rules[0].threshold"}},
				{name: "hotspot paramKey too long", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"` + strings.Repeat("k", 65) + `"}]`, wantStatus: 422, wantFields: []string{"rules[0].paramKey"}},
				{name: "hotspot unknown valKind", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":[{"valKind":4,"valStr":"x","threshold":1}]}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems[0].valKind"}},
				{name: "hotspot int value not a number", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":[{"valKind":0,"valStr":"x","threshold":1}]}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems[0].valStr"}},
				{name: "hotspot bool value not a bool", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":[{"valKind":2,"valStr":"maybe","threshold":1}]}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems[0].valStr"}},
				{name: "hotspot a value twice", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":[{"valKind":0,"valStr":"7","threshold":1},{"valKind":0,"valStr":"07","threshold":2}]}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems[1].valStr"}},
				{name: "hotspot item of an unknown field", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":[{"valKind":1,"valStr":"x","threshold":1,"weight":2}]}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems[0].weight"}},
				{name: "hotspot specificItems an object", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":{"x":1}}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems"}},
				{name: "hotspot item not an object", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":[7]}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems[0]"}},
				{name: "hotspot negative specific threshold", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","specificItems":[{"valKind":1,"valStr":"x","threshold":-1}]}]`, wantStatus: 422, wantFields: []string{"rules[0].specificItems"}},
				{name: "hotspot unknown field", query: "format=sentinel&kind=hotspot", body: `[{"resource":"a","metricType":1,"threshold":1,"paramKey":"k","paramKind":1}]`, wantStatus: 422, wantFields: []string{"rules[0].paramKind"}},
			}
			// One server: each case is refused and checks that it changed nothing.
			ts := startServer(t, nil, nil)
			ts.createRule(t, `{"name":"flow-get-api-orders","kind":"flow","resource":"GET:/api/orders","threshold":1}`)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					before, loaded := ts.snapshot(t), ts.loadedThresholds()
					body := []byte(tt.body)
					if tt.file != "" {
						body = readSentinelFile(t, tt.file)
					}

					resp, got := ts.call(t, http.MethodPost, importPath+"?"+tt.query, body, nil)

					code := "validation_failed"
					if tt.wantStatus == http.StatusBadRequest {
						code = "bad_request"
					}
					wantError(t, resp, got, tt.wantStatus, code, tt.wantFields...)
					ts.wantUnchanged(t, before, loaded)
				})
			}
		})
		t.Run("sentinel, Kubernetes CircuitBreakerRules", func(t *testing.T) {
			t.Parallel()
			// The sample's first two rules have ratios over 1, which
			// sentinel-golang refuses too; their strategies, names all, are read.
			ts := startServer(t, nil, nil)
			resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&dryRun=true", readSentinelSample(t, "datasource_v1_circuitbreakerrules.yaml"), yamlBody)
			e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[0].threshold", "rules[1].threshold")
			if len(e.Details) != 2 {
				t.Errorf("details = %+v, want the two ratios only", e.Details)
			}
		})
		t.Run("sentinel, a kind that is not the Kubernetes resource's", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=hotspot&dryRun=true", readSentinelSample(t, "datasource_v1_flowrules.yaml"), yamlBody)
			wantError(t, resp, got, http.StatusBadRequest, "bad_request", "kind")
		})
		t.Run("sentinel, a name sentinel-golang has not", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&dryRun=true",
				`[{"resource":"GET:/api/orders","threshold":10,"controlBehavior":"Queue"}]`, nil)
			wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[0].controlBehavior")
		})
		t.Run("envoy", func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name       string
				query      string
				file       string
				body       string
				wantStatus int
				wantFields []string
			}{
				{name: "quota_mode and metadata", query: "format=envoy", file: "examples-example.yaml", wantStatus: 422, wantFields: []string{
					"descriptors[5].quota_mode", "descriptors[5].metadata", "descriptors[6].quota_mode", "descriptors[6].metadata"}},
				{name: "wildcard value", query: "format=envoy", file: "readme-example9a.yaml", wantStatus: 422, wantFields: []string{"descriptors[0].value"}},
				{name: "unknown unit", query: "format=envoy", body: "domain: d\ndescriptors: [{key: a, rate_limit: {unit: month, requests_per_unit: 1}}]",
					wantStatus: 422, wantFields: []string{"descriptors[0].rate_limit.unit"}},
				{name: "a kind", query: "format=envoy&kind=flow", file: "readme-example1.yaml", wantStatus: 400, wantFields: []string{"kind"}},
				{name: "unknown format", query: "format=envoyproxy", file: "readme-example1.yaml", wantStatus: 400, wantFields: []string{"format"}},
				{name: "not YAML", query: "format=envoy", body: "domain: [", wantStatus: 400},
				{name: "a key twice", query: "format=envoy", body: "domain: d\ndomain: e\n", wantStatus: 400, wantFields: []string{"domain"}},
				{name: "a list", query: "format=envoy", body: "- key: a", wantStatus: 422, wantFields: []string{"body"}},
				{name: "too large", query: "format=envoy", body: "domain: d\n#" + strings.Repeat("x", rules.MaxEnvoyConfigBytes), wantStatus: 413},
			}
			// One server: each case is refused and checks that it wrote nothing.
			ts := startServer(t, nil, nil)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					body := []byte(tt.body)
					if tt.file != "" {
						body = readEnvoyFile(t, tt.file)
					}

					resp, got := ts.call(t, http.MethodPost, importPath+"?"+tt.query, body, nil)

					code := map[int]string{400: "bad_request", 413: "payload_too_large", 422: "validation_failed"}[tt.wantStatus]
					wantError(t, resp, got, tt.wantStatus, code, tt.wantFields...)
					ts.wantNoRules(t)
				})
			}
		})
		// Refused as apply refuses it, naming the imported rule by its place in
		// file order.
		t.Run("envoy, a made-up name that a rule of another kind has", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, nil, nil)
			ts.createRule(t, `{"name":"rl-foo","kind":"flow","resource":"rl:foo","threshold":1}`)
			before, loaded := ts.snapshot(t), ts.loadedThresholds()

			resp, got := ts.call(t, http.MethodPost, importPath+"?format=envoy", readEnvoyFile(t, "examples-example-f28024e.yaml"), nil)

			wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[5].kind")
			ts.wantUnchanged(t, before, loaded)
		})
	})
}
