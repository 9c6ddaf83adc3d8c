package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/engine"
)

// object decodes one JSON object field by field, so that every field gets
// its own error: unknown fields, wrong JSON types and fractional whole
// numbers are all reported, named by their path, instead of stopping at the
// first. A null value means "not set", like an absent field.
type Object struct {
	// Path prefixes field names, e.g. "rules[3].".
	Path string
	// Label, when set, names the object in messages: apply's errors say
	// which rule they are about.
	Label string
	// Errs collects every bad field.
	Errs *[]engine.FieldError
	// Scalars, for an object of a YAML body (never nil then), is the text
	// of its numbers, true and false that JSON changed; its string fields
	// take their text.
	Scalars Scalars
	fields  map[string]json.RawMessage
	seen    map[string]bool
}

// Parse reads data as one JSON object. A body that is not a JSON
// object at all is an error of the whole body.
func Parse(data []byte, path string, errs *[]engine.FieldError) (*Object, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return &Object{Path: path, fields: fields, seen: map[string]bool{}, Errs: errs}, nil
}

// Fail adds an error for the field name, labelled with the object's Label.
func (o *Object) Fail(name, message string) {
	if o.Label != "" {
		message = fmt.Sprintf("rule %q: %s", o.Label, message)
	}
	*o.Errs = append(*o.Errs, engine.FieldError{Field: o.Path + name, Message: message})
}

// Value returns the field's value (nil when absent or null) and whether
// it is present, and marks it as known.
func (o *Object) Value(name string) (json.RawMessage, bool) {
	o.seen[name] = true
	v, ok := o.fields[name]
	if !ok || string(v) == "null" {
		return nil, ok
	}
	return v, true
}

// Has reports whether the field is present and not null.
func (o *Object) Has(name string) bool {
	v, ok := o.fields[name]
	return ok && string(v) != "null"
}

// Str decodes a string field into dst if the field is present (null sets
// "", in YAML too: ~ and null are not set); it reports whether it was. A
// YAML number, true or false is taken as its text.
func (o *Object) Str(name string, dst *string) bool {
	v, present := o.Value(name)
	if v == nil {
		if present {
			*dst = ""
		}
		return present
	}
	if err := json.Unmarshal(v, dst); err != nil {
		text, ok := o.yamlText(name, v)
		if !ok {
			o.Fail(name, "must be a string")
			return true
		}
		*dst = text
	}
	return true
}

// yamlText is the source text of v, the field's value, if the object is
// of a YAML body and v a number, true or false.
func (o *Object) yamlText(name string, v json.RawMessage) (string, bool) {
	if o.Scalars == nil || !isJSONNumber(v) && string(v) != "true" && string(v) != "false" {
		return "", false
	}
	if text, ok := o.Scalars[o.Path+name]; ok {
		return text, true
	}
	return string(v), true
}

// PeekStr is what Str would read from the field, or "" if it is absent
// or no string; unlike str it neither marks the field read nor reports a
// bad value, so that a rule's name can label its errors before its fields
// are read.
func (o *Object) PeekStr(name string) string {
	v := o.fields[name]
	var s string
	if json.Unmarshal(v, &s) != nil {
		s, _ = o.yamlText(name, v)
	}
	return s
}

// Bool decodes true or false into dst, like str; null sets ifNull.
func (o *Object) Bool(name string, dst *bool, ifNull bool) bool {
	v, present := o.Value(name)
	if v == nil {
		if present {
			*dst = ifNull
		}
		return present
	}
	if err := json.Unmarshal(v, dst); err != nil {
		o.Fail(name, "must be true or false")
	}
	return true
}

// Number decodes a finite number into dst, like str; null sets 0.
func (o *Object) Number(name string, dst *float64) bool {
	v, present := o.Value(name)
	if v == nil {
		if present {
			*dst = 0
		}
		return present
	}
	var n json.Number
	if !isJSONNumber(v) || json.Unmarshal(v, &n) != nil {
		o.Fail(name, "must be a number")
		return true
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		o.Fail(name, "is out of range")
		return true
	}
	*dst = f
	return true
}

// Integer decodes a whole number (1e3 and 2.0 included) into dst, like
// str; null sets 0.
func (o *Object) Integer(name string, dst *int64) bool {
	v, present := o.Value(name)
	if v == nil {
		if present {
			*dst = 0
		}
		return present
	}
	var n json.Number
	if !isJSONNumber(v) || json.Unmarshal(v, &n) != nil {
		o.Fail(name, "must be a whole number")
		return true
	}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		*dst = i
		return true
	}
	f, err := n.Float64()
	switch {
	case err != nil || f != math.Trunc(f):
		o.Fail(name, "must be a whole number")
	case f > math.MaxInt64/2 || f < math.MinInt64/2:
		o.Fail(name, "is out of range")
	default:
		*dst = int64(f)
	}
	return true
}

// isJSONNumber tells a JSON number from a string holding one, which
// json.Number would take too.
func isJSONNumber(v json.RawMessage) bool {
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}

// Rest reports every field not read so far: as belonging to another kind
// when other says so, else as unknown.
func (o *Object) Rest(other func(name string) string) {
	for _, name := range slices.Sorted(maps.Keys(o.fields)) {
		if o.seen[name] {
			continue
		}
		if msg := other(name); msg != "" {
			o.Fail(name, msg)
		} else {
			o.Fail(name, "is not a known field")
		}
	}
}

// ParseBody reads a request body as one JSON object, like Parse,
// after refusing one that has a key twice in any of its objects: which of
// the two a decoder keeps is an accident, and a typo in CI must not pass
// silently.
func ParseBody(data []byte, errs *[]engine.FieldError) (*Object, error) {
	if path, ok := DuplicateKey(data); ok {
		return nil, &DuplicateKeyError{Path: path}
	}
	return Parse(data, "", errs)
}

// DuplicateKeyError is a body with a key twice in one object, at Path.
type DuplicateKeyError struct {
	Path string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("the key %s appears twice in one object", e.Path)
}

// DuplicateKey finds the first key that appears twice in one object of
// the JSON value in data, and returns its path ("rules[3].threshold"). It
// reads the bytes itself, without a token per value: rule files reach
// 64 MiB. It may report nothing for JSON that is not valid.
func DuplicateKey(data []byte) (string, bool) {
	d := dupScanner{data: data}
	d.value()
	return d.path, d.found
}

// dupScanner walks JSON for DuplicateKey.
type dupScanner struct {
	data  []byte
	i     int
	found bool
	path  string
	// trail is the path to the value being read, innermost last: object
	// keys, and array indexes as "[3]".
	trail []string
}

func (d *dupScanner) skipSpace() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value reads one value; it stops early, leaving found set, at a
// duplicate, and at the first byte that cannot start or continue one.
func (d *dupScanner) value() bool {
	d.skipSpace()
	if d.i >= len(d.data) {
		return false
	}
	switch d.data[d.i] {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		_, ok := d.str()
		return ok
	}
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return true
		}
		d.i++
	}
	return true
}

func (d *dupScanner) object() bool {
	d.i++ // {
	var keys map[string]bool
	for {
		d.skipSpace()
		if d.i < len(d.data) && d.data[d.i] == '}' {
			d.i++
			return true
		}
		key, ok := d.str()
		if !ok {
			return false
		}
		if keys == nil {
			keys = map[string]bool{}
		}
		if keys[key] {
			d.found, d.path = true, joinTrail(append(d.trail, key))
			return false
		}
		keys[key] = true
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return false
		}
		d.i++
		if more, ok := d.member(key, '}'); !more {
			return ok
		}
	}
}

func (d *dupScanner) array() bool {
	d.i++ // [
	for index := 0; ; index++ {
		d.skipSpace()
		if d.i < len(d.data) && d.data[d.i] == ']' {
			d.i++
			return true
		}
		if more, ok := d.member("["+strconv.Itoa(index)+"]", ']'); !more {
			return ok
		}
	}
}

// member reads the value of an object's key or an array's element, named
// by step in paths, and what follows it: more is true after a ',', ok
// false on a duplicate or bad JSON.
func (d *dupScanner) member(step string, closing byte) (more, ok bool) {
	d.trail = append(d.trail, step)
	ok = d.value()
	d.trail = d.trail[:len(d.trail)-1]
	if !ok {
		return false, false
	}
	d.skipSpace()
	if d.i >= len(d.data) {
		return false, false
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		return true, true
	case closing:
		d.i++
		return false, true
	}
	return false, false
}

// str reads a string and returns it unescaped ("\u0061" and "a" are one
// key).
func (d *dupScanner) str() (string, bool) {
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return "", false
	}
	start, escaped := d.i, false
	for d.i++; d.i < len(d.data); d.i++ {
		switch d.data[d.i] {
		case '\\':
			escaped = true
			d.i++
		case '"':
			d.i++
			raw := d.data[start:d.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), true
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

// joinTrail writes a trail as a field path: rules[3].threshold.
func joinTrail(trail []string) string {
	var b strings.Builder
	for i, part := range trail {
		if i > 0 && !strings.HasPrefix(part, "[") {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}

// Scalars is the source text of the scalars of a YAML body that its
// JSON holds as a number, true or false written otherwise (1.0 as 1, 0755
// as 755, True as true), by the value's field path ("rules[3].name"). A
// field that takes a string takes the text as written: a name 1.0 is
// "1.0", not "1", and a resource 0755 is "0755". The YAML converter cannot do
// it alone, for it does not know which fields take strings; it records
// only the texts that JSON changed, so that a 64 MiB rule file of
// thresholds does not double its size here.
type Scalars map[string]string
