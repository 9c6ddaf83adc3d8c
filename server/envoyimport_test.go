package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/rules"
)

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

// TestImportEnvoy: envoyproxy/ratelimit's example configuration is
// planned on a dry run without a write, applied as flow and hotspot rules
// the engine runs (but the unlimited ones, disabled), and importing it
// again plans nothing.
func TestImportEnvoy(t *testing.T) {
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
}

// TestImportEnvoyApp: the app parameter names the app of every imported
// rule, as for a Sentinel import.
func TestImportEnvoyApp(t *testing.T) {
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
}

// TestImportEnvoyRejects: a configuration Sluice cannot express, or a bad
// request, is refused with every field named, and nothing is written.
func TestImportEnvoyRejects(t *testing.T) {
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
}

// TestImportEnvoyKindConflict: a made-up name that a stored rule of
// another kind has is refused as apply refuses it, naming the imported
// rule by its place in file order, and nothing is written.
func TestImportEnvoyKindConflict(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name":"rl-foo","kind":"flow","resource":"rl:foo","threshold":1}`)
	before, loaded := ts.snapshot(t), ts.loadedThresholds()

	resp, got := ts.call(t, http.MethodPost, importPath+"?format=envoy", readEnvoyFile(t, "examples-example-f28024e.yaml"), nil)

	wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[5].kind")
	ts.wantUnchanged(t, before, loaded)
}
