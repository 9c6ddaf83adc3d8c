package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// objectSeeds are JSON texts Parse and Elements must read as encoding/json
// does: escapes in names and values, invalid UTF-8, a name given twice,
// nesting, strings holding brackets and quotes, numbers of every form,
// white space everywhere, and texts that are no object or no JSON.
var objectSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, "{\n\t\"a\" :\r 1 ,\"b\":\"x\" }\n",
	`{"pass":10,"time":"2026-11-24T10:15:00Z","minRtMs":2.0,"rtSumMs":1e3,"x":-0,"y":-12.5e-3}`,
	`{"\u0070ass":1,"p\"q":"a\\b","r\/s":"\u00e9\ud83d\ude00"}`,
	"{\"bad\xffname\":\"bad\xffvalue\"}",
	`{"a":1,"a":2,"b":3}`,
	`{"a":{"b":[1,{"c":"]}\"{["}],"d":{}},"e":[],"f":[[],[{}]],"g":null,"h":true,"i":false}`,
	`{"s":"{not an object}","t":"[1,2]","u":"\\"}`,
	`[1,2]`, `"text"`, `12`, `null`, `true`, `{"a":}`, `{"a":1`, `{"a":1}{}`, ``, `   `,
	`[{"a":1}, 2, "x", null, [3], {}]`, `[]`, ` [ ] `,
	wide(40) + `,"k3":"again","k39":"last"}`,
}

// wide returns the start of an object of n fields, k0 to k(n-1): past
// smallObject, an Object finds its fields by its index.
func wide(n int) string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	return "{" + strings.Join(fields, ",")
}

// reference is what encoding/json's decoder makes of data: the fields of
// an object, or an error.
func reference(data []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	err := json.Unmarshal(data, &fields)
	return fields, err
}

func checkParse(t *testing.T, data []byte) {
	var errs []engine.FieldError
	o, err := Parse(data, "", &errs)
	want, wantErr := reference(data)
	switch {
	case wantErr != nil || want == nil:
		if err == nil {
			t.Fatalf("Parse(%q) took what encoding/json refuses (%v)", data, wantErr)
		}
		return
	case err != nil:
		t.Fatalf("Parse(%q): %v, encoding/json read %v", data, err, want)
	}
	got := map[string]json.RawMessage{}
	for _, f := range o.fields {
		got[string(f.name)] = f.value
	}
	if !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("Parse(%q) = %q, encoding/json %q", data, got, want)
	}
	for name, v := range want {
		if string(v) == "null" {
			continue
		}
		var s, wantS string
		if o.Str(name, &s); json.Unmarshal(v, &wantS) == nil && s != wantS {
			t.Fatalf("Parse(%q).Str(%q) = %q, encoding/json %q", data, name, s, wantS)
		}
	}
	if len(o.fields) != len(want) {
		t.Fatalf("Parse(%q) kept %d fields, encoding/json %d", data, len(o.fields), len(want))
	}
}

func checkElements(t *testing.T, data []byte) {
	if !json.Valid(data) {
		return
	}
	var want []json.RawMessage
	wantErr := json.Unmarshal(data, &want)
	got, ok := Elements(data)
	switch {
	case ok != (wantErr == nil && want != nil):
		t.Fatalf("Elements(%q): ok %v, encoding/json %v %v", data, ok, want, wantErr)
	case ok && !slices.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }):
		t.Fatalf("Elements(%q) = %q, encoding/json %q", data, got, want)
	}
}

func TestParseReadsAsEncodingJSON(t *testing.T) {
	for _, s := range objectSeeds {
		checkParse(t, []byte(s))
		checkElements(t, []byte(s))
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range objectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
		checkElements(t, data)
	})
}

func TestParseKeepsNoReferenceToItsInput(t *testing.T) {
	data := []byte(`{"name":"orders"}`)
	var errs []engine.FieldError
	o, err := Parse(data, "", &errs)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, bytes.Repeat([]byte("x"), len(data)))
	var name string
	if o.Str("name", &name); name != "orders" {
		t.Fatalf("name read after the input changed: %q", name)
	}
}

// BenchmarkParseWideObject parses an object of 100,000 fields, as a
// hostile body of a megabyte may hold: its lookups go through the index,
// so the cost grows with the width, not with its square.
func BenchmarkParseWideObject(b *testing.B) {
	data := []byte(wide(100_000) + "}")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var errs []engine.FieldError
		o, err := Parse(data, "", &errs)
		if err != nil || !o.Has("k99999") {
			b.Fatalf("Parse: %v", err)
		}
	}
}
