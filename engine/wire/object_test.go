package wire

import (
	"bytes"
	"encoding/json"
	"errors"
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
	// The grammar's corners, which the split checks as it goes: numbers,
	"{\"n\":[0,-0,1,-1,10,0.5,-0.5,1e5,1E5,1e+5,1e-5,1.5E-05,0e0,-0.0e-0,123456789012345678901234567890]}",
	`{"n":01}`, `{"n":-}`, `{"n":1.}`, `{"n":.5}`, `{"n":1e}`, `{"n":1e+}`, `{"n":+1}`, `{"n":--1}`,
	`{"n":1.e5}`, `{"n":0x1}`, `{"n":1_000}`, `{"n":Infinity}`, `{"n":NaN}`, `{"n":-01}`, `{"n":1ee5}`,
	`-`, `-0`, `01`, `1.5e3`, `1e`, ` 7 `,
	// literals,
	`{"l":tru}`, `{"l":nul}`, `{"l":truex}`, `{"l":True}`, `{"l":nulll}`, `{"l":false true}`, `{"l":f}`,
	`tru`, `true `, `nullx`, `falsefalse`,
	// strings: escapes, control characters, ends,
	`{"e":"\b\f\n\r\t\/\\\"\u0000\u001F\uFFFF\uabcd"}`,
	`{"e":"\x"}`, `{"e":"\u12"}`, `{"e":"\u12G4"}`, `{"e":"\U0041"}`, `{"e":"\'"}`, `{"e":"\`,
	`{"e":"\u"}`, `{"e":"\u004`, `{"e":"abc`, `{"e":"\"}`, `{"\ud800":"\udc00\ud800x"}`,
	"{\"c\":\"a\tb\"}", "{\"c\":\"a\nb\"}", "{\"c\":\"\x00\"}", "{\"c\":\"\x1f\"}", "{\"c\":\"\x7f\"}",
	"{\"c\\\x01\":1}", "{\"c\":\"\xc3\xa9\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf\"}",
	// and the structure: separators, keys, white space, what follows.
	`{"a":1,}`, `{,}`, `{"a":1,,"b":2}`, `{"a" 1}`, `{"a"::1}`, `{a:1}`, `{'a':1}`, `{1:1}`, `{"a":1 "b":2}`,
	`{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":[}`, `{"a":{]}`, `{"a":]}`, `{"a":[1}]}`, `{"a":{"b":1]}`,
	`{"a":1}}`, `{"a":1}]`, `{"a":1},`, `{"a":1} x`, "{\"a\":1}\f", "\f{}", "\v{}", "\xef\xbb\xbf{}",
	"{\"a\"\n:\t[\r1\n,\t2\r]\n}", `{"a":[[[[]]]]}`, `[[],[[]],{}]`, `[1,[2,[3,{"a":[4]}]]]`, `[`, `]`, `}`, `{`,
}

// nested returns an object whose value "a" nests arrays so that the
// innermost is depth deep, counting the object as 1.
func nested(depth int) string {
	return `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}"
}

// nestedObjects returns objects nested depth deep, each the value "a" of
// the one around it.
func nestedObjects(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
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
	if _, notObject := errors.AsType[*NotObjectError](err); err != nil && notObject != json.Valid(data) {
		t.Fatalf("Parse(%.300q): %v, but json.Valid says %v", data, err, json.Valid(data))
	}
	want, wantErr := reference(data)
	switch {
	case wantErr != nil || want == nil:
		if err == nil {
			t.Fatalf("Parse(%.300q) took what encoding/json refuses (%v)", data, wantErr)
		}
		return
	case err != nil:
		t.Fatalf("Parse(%.300q): %v, encoding/json read %v", data, err, want)
	}
	got := map[string]json.RawMessage{}
	for _, f := range o.fields {
		got[string(f.name)] = f.value
	}
	if !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("Parse(%.300q) = %q, encoding/json %q", data, got, want)
	}
	for name, v := range want {
		if string(v) == "null" {
			continue
		}
		var s, wantS string
		if o.Str(name, &s); json.Unmarshal(v, &wantS) == nil && s != wantS {
			t.Fatalf("Parse(%.300q).Str(%q) = %q, encoding/json %q", data, name, s, wantS)
		}
	}
	if len(o.fields) != len(want) {
		t.Fatalf("Parse(%.300q) kept %d fields, encoding/json %d", data, len(o.fields), len(want))
	}
	if trusted, err := ParseValid(data, "", &errs); err != nil || !slices.EqualFunc(trusted.fields, o.fields, func(a, b field) bool {
		return bytes.Equal(a.name, b.name) && bytes.Equal(a.value, b.value)
	}) {
		t.Fatalf("ParseValid(%.300q) = %v, %v; Parse read %v", data, trusted, err, o)
	}
	// Read into an Object that held a wide object, indexed, it keeps
	// nothing of it.
	reused, err := ParseValid([]byte(wide(smallObject+1)+"}"), "", &errs)
	if err != nil {
		t.Fatal(err)
	}
	if err := reused.ReadValid(data, "", &errs); err != nil || !slices.EqualFunc(reused.fields, o.fields, func(a, b field) bool {
		return bytes.Equal(a.name, b.name) && bytes.Equal(a.value, b.value)
	}) {
		t.Fatalf("ReadValid(%.300q) into a used Object = %v, %v; Parse read %v", data, reused, err, o)
	}
	for i := range smallObject + 1 {
		if name := fmt.Sprintf("k%d", i); reused.Has(name) != o.Has(name) {
			t.Fatalf("ReadValid(%.300q) into a used Object: Has(%q) = %v, Parse's %v", data, name, reused.Has(name), o.Has(name))
		}
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
		t.Fatalf("Elements(%.300q): ok %v, encoding/json %v %v", data, ok, want, wantErr)
	case ok && !slices.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }):
		t.Fatalf("Elements(%.300q) = %q, encoding/json %q", data, got, want)
	}
}

func TestParseReadsAsEncodingJSON(t *testing.T) {
	for _, s := range objectSeeds {
		checkParse(t, []byte(s))
		checkElements(t, []byte(s))
	}
}

// TestParseNestsAsDeepAsEncodingJSON: the split refuses JSON nested
// deeper than MaxDepth, as encoding/json does, and no shallower.
func TestParseNestsAsDeepAsEncodingJSON(t *testing.T) {
	for _, depth := range []int{MaxDepth - 1, MaxDepth, MaxDepth + 1} {
		arrays, objects := []byte(nested(depth)), []byte(nestedObjects(depth))
		for _, data := range [][]byte{arrays, objects} {
			checkParse(t, data)
			if _, err := Parse(data, "", new([]engine.FieldError)); (err == nil) != (depth <= MaxDepth) {
				t.Errorf("Parse of JSON %d deep: %v", depth, err)
			}
		}
		checkElements(t, arrays[len(`{"a":`):len(arrays)-1])
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

// BenchmarkParseDeepNesting parses an object of a megabyte that holds
// fifty arrays nested as deep as MaxDepth allows, as a hostile body may:
// each byte is read once, so its cost per byte is that of the wide
// object's.
func BenchmarkParseDeepNesting(b *testing.B) {
	deep := strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2)
	data := []byte(`{"a":[` + strings.Repeat(deep+",", 49) + deep + "]}")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var errs []engine.FieldError
		o, err := Parse(data, "", &errs)
		if err != nil || !o.Has("a") {
			b.Fatalf("Parse: %v", err)
		}
	}
}
