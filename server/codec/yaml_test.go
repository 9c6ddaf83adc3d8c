package codec_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/codec"
)

// laughs is a YAML rule file of nine levels of ten aliases each, padded
// to about 300 KB: it expands to 10⁹ strings.
func laughs() string {
	var b strings.Builder
	b.WriteString("l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("rules: []\n")
	for b.Len() < 300<<10 {
		b.WriteString("# padding, so that the body is as large as the one reported\n")
	}
	return b.String()
}

func TestYAMLAliasesAreBounded(t *testing.T) {
	body := []byte(laughs())
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := codec.YAMLToJSON(body)
	runtime.ReadMemStats(&after)
	if e, ok := errors.AsType[*codec.YAMLError](err); !ok || !strings.Contains(e.Message, "aliases expand") {
		t.Fatalf("YAMLToJSON of a billion laughs: %v, want a YAMLError about aliases", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 50<<20 {
		t.Errorf("refusing a %d-byte alias bomb allocated %d bytes, want under 50 MiB", len(body), allocated)
	}
	// Aliases well within the bound are fine.
	small := "base: &base {kind: flow, resource: x, threshold: 5}\n"
	if _, err := codec.YAMLToJSON([]byte(small + "rules: [*base, *base]\n")); err != nil {
		t.Errorf("two aliases: %v", err)
	}
}

func TestYAMLToJSON(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"YAML 1.2 core scalars", "a: on\nb: yes\nc: 123\nd: true\ne: ~\nf: 1.5\ng: '123'\n",
			`{"a":"on","b":"yes","c":123,"d":true,"e":null,"f":1.5,"g":"123"}`},
		{"strings escaped as encoding/json does", "s: \"<q\\\" \\u2028 \\t>\"\n", `{"s":"<q\" \u2028 \t>"}`},
		{"an infinite number is its text", "t: .inf\n", `{"t":".inf"}`},
		{"merge keys: the mapping's own keys win", "base: &b {x: 1, y: 2}\nr: {<<: *b, y: 3}\n",
			`{"base":{"x":1,"y":2},"r":{"y":3,"x":1}}`},
		{"an empty document", "---\n", `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codec.YAMLToJSON([]byte(tt.yaml))
			if err != nil || string(got) != tt.want {
				t.Errorf("YAMLToJSON = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestYAMLToJSONRefuses(t *testing.T) {
	tests := []struct{ name, yaml, wantMessage, wantField string }{
		{"empty", "", "the body is empty", ""},
		{"not YAML", "a: [\n", "the body is not YAML", ""},
		{"two documents", "a: 1\n---\na: 2\n", "more than one YAML document", ""},
		{"a key twice", "rules:\n  - {name: a, name: b}\n", `the key "name" appears twice`, "rules[0].name"},
		{"a key that is a list", "? [a]\n: 1\n", "a YAML key must be a plain value", "body"},
		{"an alias of its own anchor", "rules: &r [*r]\n", "holds an alias of itself", ""},
		{"a merge of a scalar", "r: {<<: 1}\n", "merge key", "r.<<"},
		{"nested past yaml's depth limit", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "the body is not YAML", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codec.YAMLToJSON([]byte(tt.yaml))
			e, ok := errors.AsType[*codec.YAMLError](err)
			if !ok || !strings.Contains(e.Message, tt.wantMessage) || e.Field != tt.wantField {
				t.Fatalf("YAMLToJSON = %v (%T), want a YAMLError %q at %q", err, err, tt.wantMessage, tt.wantField)
			}
			if (e.Field == "") != (e.Problem == "") {
				t.Errorf("field %q with problem %q: want both or neither", e.Field, e.Problem)
			}
		})
	}
}
