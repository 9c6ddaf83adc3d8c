package rules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// envoyRule is what a test expects of an imported rule, one line:
// "name kind resource threshold/statIntervalMs mode [disabled] [param=K] [replaces=X]".
func envoyRule(r Rule) string {
	var b strings.Builder
	var threshold float64
	var interval int64
	var paramKey, replaces string
	switch spec := r.Spec.(type) {
	case engine.FlowRule:
		threshold, interval, replaces = spec.Threshold, spec.StatIntervalMs, spec.Replaces
	case engine.HotspotRule:
		threshold, interval, replaces, paramKey = spec.Threshold, spec.StatIntervalMs, spec.Replaces, spec.ParamKey
	}
	fmt.Fprintf(&b, "%s %s %s %g/%d %s", r.Name, r.Kind, r.Resource, threshold, interval, r.Mode)
	if !r.Enabled {
		b.WriteString(" disabled")
	}
	if paramKey != "" {
		b.WriteString(" param=" + paramKey)
	}
	if replaces != "" {
		b.WriteString(" replaces=" + replaces)
	}
	return b.String()
}

func readEnvoyFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "envoy", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestImportEnvoyExamples: the configurations envoyproxy/ratelimit
// publishes become the rules docs/envoy-import.md says, in file order.
func TestImportEnvoyExamples(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"examples-config.yaml", []string{
			"mongo_cps-database-users flow mongo_cps:database=users 500/1000 enforce",
			"mongo_cps-database-default flow mongo_cps:database=default 500/1000 enforce",
		}},
		{"readme-example1.yaml", []string{
			"mongo_cps-database-users flow mongo_cps:database=users 500/1000 enforce",
			"mongo_cps-database-default flow mongo_cps:database=default 500/1000 enforce",
		}},
		{"readme-example2.yaml", []string{
			"messaging-message_type-marketing-to_number hotspot messaging:message_type=marketing/to_number 5/86400000 enforce param=to_number",
			"messaging-to_number hotspot messaging:to_number 100/86400000 enforce param=to_number",
		}},
		{"readme-example3.yaml", []string{
			"edge_proxy_per_ip-remote_address hotspot edge_proxy_per_ip:remote_address 10/1000 enforce param=remote_address",
			"edge_proxy_per_ip-remote_address-50.0.0.5 flow edge_proxy_per_ip:remote_address=50.0.0.5 0/1000 enforce",
		}},
		{"readme-example4a.yaml", []string{"example4-key-value flow example4:key=value 300/1000 enforce"}},
		{"readme-example4b.yaml", []string{"example4-key-value-subkey hotspot example4:key=value/subkey 300/1000 enforce param=subkey"}},
		{"readme-example5.yaml", []string{
			"internal-ldap hotspot internal:ldap 0/1000 enforce disabled param=ldap",
			"internal-azure hotspot internal:azure 100/60000 enforce param=azure",
		}},
		{"readme-example6.yaml", []string{
			"example6-service-user-user-a hotspot example6:service/user=user-a 10/1000 shadow param=service",
			"example6-service-user-user-b hotspot example6:service/user=user-b 20/1000 enforce param=service",
		}},
		{"readme-example7.yaml", []string{
			"specific_limit flow example7:key_1=value_1/user=bkthomps 5/1000 enforce",
			"example7-key_2-value_2-user-bkthomps flow example7:key_2=value_2/user=bkthomps 10/1000 enforce replaces=specific_limit",
		}},
		{"readme-example8.yaml", []string{
			"example8-key1 hotspot example8:key1 10/60000 enforce param=key1",
			"example8-key1-value1 flow example8:key1=value1 20/60000 enforce",
		}},
		{"readme-example10a.yaml", []string{
			"example10-route-http_method-subject_id hotspot example10:route/http_method/subject_id 60/60000 enforce param=route/http_method/subject_id",
		}},
		{"examples-example-f28024e.yaml", []string{
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
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rules, err := ImportEnvoy(readEnvoyFile(t, tt.file))
			if err != nil {
				t.Fatalf("ImportEnvoy: %v %+v", err, fieldsOf(err))
			}
			var got []string
			for _, r := range rules {
				got = append(got, envoyRule(r))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func fieldsOf(err error) []engine.FieldError {
	if invalid, ok := errors.AsType[*ValidationError](err); ok {
		return invalid.Fields
	}
	return nil
}

// TestImportEnvoyRefuses: what Sluice cannot express, in the published
// configurations and beyond, is refused, naming every field at fault.
func TestImportEnvoyRefuses(t *testing.T) {
	tests := []struct {
		name, file, body string
		want             []string
	}{
		{name: "quota_mode and metadata", file: "examples-example.yaml", want: []string{
			"descriptors[5].metadata", "descriptors[5].quota_mode", "descriptors[6].metadata", "descriptors[6].quota_mode"}},
		{name: "trailing wildcard", file: "readme-example9a.yaml", want: []string{"descriptors[0].value"}},
		{name: "middle wildcard", file: "readme-example9b.yaml", want: []string{"descriptors[0].value"}},
		{name: "nested wildcard", file: "readme-example10b.yaml", want: []string{"descriptors[0].descriptors[0].value"}},
		{name: "share_threshold", file: "readme-example11a.yaml", want: []string{"descriptors[0].share_threshold", "descriptors[0].value", "descriptors[1].value"}},
		{name: "week", body: "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit: {unit: week, requests_per_unit: 1}\n",
			want: []string{"descriptors[0].descriptors[0].rate_limit.unit"}},
		{name: "no unit", body: "domain: d\ndescriptors: [{key: a, rate_limit: {requests_per_unit: 1}}]", want: []string{"descriptors[0].rate_limit.unit"}},
		{name: "unit beside unlimited", body: "domain: d\ndescriptors: [{key: a, rate_limit: {unlimited: true, unit: second}}]", want: []string{"descriptors[0].rate_limit.unit"}},
		{name: "no requests_per_unit", body: "domain: d\ndescriptors: [{key: a, rate_limit: {unit: second}}]", want: []string{"descriptors[0].rate_limit.requests_per_unit"}},
		{name: "requests_per_unit over uint32", body: "domain: d\ndescriptors: [{key: a, rate_limit: {unit: second, requests_per_unit: 4294967296}}]", want: []string{"descriptors[0].rate_limit.requests_per_unit"}},
		{name: "unknown field", body: "domain: d\ndescriptors: [{key: a, rate_limit: {unit: second, requests_per_unit: 1, burst: 2}, weight: 1}]",
			want: []string{"descriptors[0].rate_limit.burst", "descriptors[0].weight"}},
		{name: "unknown top-level field", body: "domain: d\ndescriptors: []\nversion: 2", want: []string{"version"}},
		{name: "no domain", body: "descriptors: [{key: a, rate_limit: {unit: second, requests_per_unit: 1}}]", want: []string{"domain"}},
		{name: "no key", body: "domain: d\ndescriptors: [{value: a, rate_limit: {unit: second, requests_per_unit: 1}}]", want: []string{"descriptors[0].key"}},
		{name: "a plain number value", body: "domain: d\ndescriptors: [{key: a, value: 0123, rate_limit: {unit: second, requests_per_unit: 1}}]", want: []string{"descriptors[0].value"}},
		{name: "a descriptor twice", body: "domain: d\ndescriptors: [{key: a, value: x}, {key: a, value: x}]", want: []string{"descriptors[1].value"}},
		{name: "bad name", body: "domain: d\ndescriptors: [{key: a, rate_limit: {name: Per User, unit: second, requests_per_unit: 1}}]", want: []string{"descriptors[0].rate_limit.name"}},
		{name: "a name twice", body: "domain: d\ndescriptors: [{key: a, rate_limit: {name: n, unit: second, requests_per_unit: 1}}, {key: b, rate_limit: {name: n, unit: second, requests_per_unit: 1}}]",
			want: []string{"descriptors[1].rate_limit.name"}},
		{name: "replaces names nothing", body: "domain: d\ndescriptors: [{key: a, rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: other}]}}]",
			want: []string{"descriptors[0].rate_limit.replaces[0].name"}},
		{name: "replaces itself", body: "domain: d\ndescriptors: [{key: a, rate_limit: {name: n, unit: second, requests_per_unit: 1, replaces: [{name: n}]}}]",
			want: []string{"descriptors[0].rate_limit.replaces[0].name"}},
		{name: "shadow_mode without rate_limit", body: "domain: d\ndescriptors: [{key: a, shadow_mode: true}]", want: []string{"descriptors[0].shadow_mode"}},
		{name: "resource too long", body: "domain: d\ndescriptors: [{key: a, value: " + strings.Repeat("v", 300) + ", rate_limit: {unit: second, requests_per_unit: 1}}]",
			want: []string{"descriptors[0].key"}},
		{name: "too deep", body: "domain: d\ndescriptors: [" + strings.Repeat("{key: k, descriptors: [", MaxEnvoyDepth+1) + strings.Repeat("]}", MaxEnvoyDepth+1) + "]",
			want: []string{"descriptors" + strings.Repeat("[0].descriptors", MaxEnvoyDepth)}},
		{name: "too many", body: "domain: d\ndescriptors: [" + manyKeys(MaxEnvoyNodes+1) + "]", want: []string{"descriptors"}},
		{name: "too many, nested", body: "domain: d\ndescriptors: [{key: a, descriptors: [" + manyKeys(MaxEnvoyNodes) + "]}, {key: b}, {key: c}]",
			want: []string{"descriptors[0].descriptors"}},
		{name: "a number unit", body: "domain: d\ndescriptors: [{key: a, rate_limit: {unit: 1, requests_per_unit: 1, name: 7}}]",
			want: []string{"descriptors[0].rate_limit.name", "descriptors[0].rate_limit.unit"}},
		{name: "not a mapping", body: "- key: a", want: []string{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			if tt.file != "" {
				body = readEnvoyFile(t, tt.file)
			}
			rules, err := ImportEnvoy(body)
			if err == nil {
				t.Fatalf("ImportEnvoy = %d rules, want an error", len(rules))
			}
			var got []string
			for _, f := range fieldsOf(err) {
				got = append(got, f.Field)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("fields = %q, want %q (%v)", got, tt.want, fieldsOf(err))
			}
		})
	}
}

// TestImportEnvoyNames: a name made up from a resource is cut, or told
// apart from another's, with a hash of the resource, and is the same on
// every import.
func TestImportEnvoyNames(t *testing.T) {
	long := strings.Repeat("v", 200)
	body := "domain: d\ndescriptors:\n" +
		"  - {key: a, value: B, rate_limit: {unit: second, requests_per_unit: 1}}\n" +
		"  - {key: a, value: b, rate_limit: {unit: second, requests_per_unit: 1}}\n" +
		"  - {key: c, rate_limit: {unit: second, requests_per_unit: 1}}\n" +
		"  - {key: x, rate_limit: {name: d-c, unit: second, requests_per_unit: 1}}\n" +
		"  - {key: l, value: " + long + ", rate_limit: {unit: second, requests_per_unit: 1}}\n" +
		"  - {key: n, rate_limit: {name: ~, unit: second, requests_per_unit: 1}}\n"
	var names []string
	for range 2 {
		rules, err := ImportEnvoy([]byte(body))
		if err != nil {
			t.Fatalf("ImportEnvoy: %v %+v", err, fieldsOf(err))
		}
		names = names[:0]
		for _, r := range rules {
			names = append(names, r.Name)
			if !engine.RuleNamePattern.MatchString(r.Name) {
				t.Errorf("name %q does not match the rule name pattern", r.Name)
			}
		}
	}
	stem := func(i int, want string) {
		if !strings.HasPrefix(names[i], want+"-") || len(names[i]) != len(want)+1+envoyHashLen {
			t.Errorf("names[%d] = %q, want %s-<hash>", i, names[i], want)
		}
	}
	stem(0, "d-a-b")
	stem(1, "d-a-b")
	if names[0] == names[1] {
		t.Errorf("two resources share the name %q", names[0])
	}
	stem(2, "d-c")
	if names[3] != "d-c" {
		t.Errorf("names[3] = %q, want its rate_limit.name d-c", names[3])
	}
	if names[5] != "d-n" {
		t.Errorf("names[5] = %q, want d-n: a null rate_limit.name is none", names[5])
	}
	if len(names[4]) != maxRuleNameLen || !strings.HasPrefix(names[4], "d-l-vvv") {
		t.Errorf("names[4] = %q (%d characters), want d-l-vvv… cut to %d with a hash", names[4], len(names[4]), maxRuleNameLen)
	}
}

// manyKeys is n descriptors of distinct keys, as a YAML flow list's items.
func manyKeys(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("{key: k%d}", i)
	}
	return strings.Join(keys, ", ")
}
