package codec_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
)

// decoded is what a strict decoder read from one object.
type decoded struct {
	name      string
	threshold float64
	count     int64
	enabled   bool
}

// decodeAll reads data as a rule-like object and returns every field's
// error, as the rule domain and the check API read their bodies.
func decodeAll(t *testing.T, data string) (decoded, []engine.FieldError) {
	t.Helper()
	var errs []engine.FieldError
	o, err := codec.ParseBody([]byte(data), &errs)
	if err != nil {
		t.Fatalf("ParseBody(%s): %v", data, err)
	}
	d := decoded{enabled: true}
	o.Str("name", &d.name)
	o.Number("threshold", &d.threshold)
	o.Integer("count", &d.count)
	o.Bool("enabled", &d.enabled, true)
	o.Rest(func(name string) string {
		if name == "paramKey" {
			return "belongs to hotspot rules"
		}
		return ""
	})
	return d, errs
}

func TestObjectNamesEveryBadField(t *testing.T) {
	tests := []struct {
		name, body string
		want       decoded
		wantErrs   string
	}{
		{"all good", `{"name":"a","threshold":2.5,"count":3,"enabled":false}`,
			decoded{name: "a", threshold: 2.5, count: 3}, "[]"},
		{"whole numbers written as 1e3 and 2.0", `{"count":1e3,"threshold":2.0}`,
			decoded{count: 1000, threshold: 2, enabled: true}, "[]"},
		{"null is not set", `{"name":null,"threshold":null,"count":null,"enabled":null}`,
			decoded{enabled: true}, "[]"},
		{"unknown fields, each named, sorted", `{"zeta":1,"name":"a","alpha":2}`,
			decoded{name: "a", enabled: true}, "[{alpha is not a known field} {zeta is not a known field}]"},
		{"a field of another kind", `{"paramKey":"user"}`,
			decoded{enabled: true}, "[{paramKey belongs to hotspot rules}]"},
		{"wrong types, every one named", `{"name":1,"threshold":"2","count":"3","enabled":"yes"}`,
			decoded{enabled: true}, "[{name must be a string} {threshold must be a number} {count must be a whole number} {enabled must be true or false}]"},
		{"a fraction where a whole number belongs", `{"count":1.5}`,
			decoded{enabled: true}, "[{count must be a whole number}]"},
		{"numbers out of range", `{"threshold":1e400,"count":1e300}`,
			decoded{enabled: true}, "[{threshold is out of range} {count is out of range}]"},
		{"an integer past int64 but below the bound", `{"count":9223372036854775808}`,
			decoded{enabled: true}, "[{count is out of range}]"},
		{"the largest int64", `{"count":9223372036854775807}`,
			decoded{count: 1<<63 - 1, enabled: true}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := decodeAll(t, tt.body)
			if got != tt.want {
				t.Errorf("decoded %+v, want %+v", got, tt.want)
			}
			if s := fmt.Sprint(errs); s != tt.wantErrs && !(len(errs) == 0 && tt.wantErrs == "[]") {
				t.Errorf("errors = %s, want %s", s, tt.wantErrs)
			}
		})
	}
}

func TestObjectPathAndLabel(t *testing.T) {
	var errs []engine.FieldError
	o, err := wire.Parse([]byte(`{"threshold":"x"}`), "rules[3].", &errs)
	if err != nil {
		t.Fatal(err)
	}
	o.Label = "orders-qps"
	var f float64
	o.Number("threshold", &f)
	if want := `[{rules[3].threshold rule "orders-qps": must be a number}]`; fmt.Sprint(errs) != want {
		t.Errorf("errors = %v, want %s", errs, want)
	}
}

func TestParseBodyRefuses(t *testing.T) {
	deep := strings.Repeat("[", codec.MaxDepth+1) + strings.Repeat("]", codec.MaxDepth+1)
	tests := []struct {
		name, body string
		check      func(error) bool
	}{
		{"a key twice", `{"a":{"b":1,"b":2}}`, func(err error) bool {
			dup, ok := errors.AsType[*codec.DuplicateKeyError](err)
			return ok && dup.Path == "a.b"
		}},
		{"invalid UTF-8", "{\"name\":\"\xff\"}", func(err error) bool {
			text, ok := errors.AsType[*codec.TextError](err)
			return ok && text.Offset == 9 && strings.Contains(text.Problem, "UTF-8")
		}},
		{"half a surrogate pair", `{"name":"\ud800"}`, func(err error) bool {
			_, ok := errors.AsType[*codec.TextError](err)
			return ok
		}},
		{"an array", `[1]`, func(err error) bool {
			shape, ok := errors.AsType[*wire.NotObjectError](err)
			return ok && shape.Got == "an array"
		}},
		{"null", `null`, func(err error) bool {
			shape, ok := errors.AsType[*wire.NotObjectError](err)
			return ok && shape.Got == "null"
		}},
		{"two values", `{} {}`, func(err error) bool { return err != nil && strings.Contains(err.Error(), "more than one") }},
		{"nothing", ``, func(err error) bool { return err != nil && strings.Contains(err.Error(), "no JSON value") }},
		{"not JSON", `{"a":}`, func(err error) bool { return err != nil }},
		{"nested deeper than MaxDepth", `{"a":` + deep + `}`, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "depth")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []engine.FieldError
			if _, err := codec.ParseBody([]byte(tt.body), &errs); !tt.check(err) {
				t.Errorf("ParseBody(%.40s) = %v (%T)", tt.body, err, err)
			}
		})
	}
	// A surrogate pair escaped whole is one character.
	var errs []engine.FieldError
	if _, err := codec.ParseBody([]byte(`{"name":"\ud83d\ude00"}`), &errs); err != nil {
		t.Errorf("an escaped surrogate pair: %v", err)
	}
}

func TestDuplicateKey(t *testing.T) {
	for data, want := range map[string]string{
		`{"a":1,"\u0061":2}`:               "a",
		`{"x":[{"y":{"z":1,"z":2}}]}`:      "x[0].y.z",
		` [ 1 , { "k" : "v\"" , "k":0 } ]`: "[1].k",
		// Past 16 keys an object's are looked up in a map: a duplicate
		// of one of the first and of one of the later ones.
		many(20) + `,"k3":0}`:                 "k3",
		`{"o":[0,` + many(20) + `,"k18":0}]}`: "o[1].k18",
		`{"\u00e9":1,"é":2}`:                  "é",
	} {
		if path, dup := codec.DuplicateKey([]byte(data)); !dup || path != want {
			t.Errorf("DuplicateKey(%s) = %q, %v; want %q", data, path, dup, want)
		}
	}
	for _, ok := range []string{`{"a":{"x":1},"b":{"x":1}}`, `[{"x":1},{"x":1}]`, `{"a":[{"x":1,"y":2}]}`, `"x"`, `{`, many(40) + "}", `{"":1,"\"":2}`} {
		if path, dup := codec.DuplicateKey([]byte(ok)); dup {
			t.Errorf("DuplicateKey(%s) = %s, want none", ok, path)
		}
	}
}

// many returns the start of an object of n keys, k0 to k(n-1).
func many(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	return "{" + strings.Join(keys, ",")
}

// TestDuplicateKeyStopsAtMaxDepth: the scanner recurses once per level,
// so it stops at the decoder's own limit (which then refuses the body)
// instead of following a body of brackets down past the stack's limit.
func TestDuplicateKeyStopsAtMaxDepth(t *testing.T) {
	nest := func(depth int) []byte {
		return []byte(strings.Repeat("[", depth-1) + `{"k":1,"k":2}` + strings.Repeat("]", depth-1))
	}
	if path, dup := codec.DuplicateKey(nest(codec.MaxDepth)); !dup || !strings.HasSuffix(path, "[0].k") {
		t.Errorf("a duplicate at MaxDepth: %q, %v; want it found", path, dup)
	}
	if path, dup := codec.DuplicateKey(nest(codec.MaxDepth + 1)); dup {
		t.Errorf("a duplicate below MaxDepth: found at %.40s..., want the scan stopped", path)
	}
}
