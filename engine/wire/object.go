package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/sluicehq/sluice/engine"
)

// Object decodes one JSON object field by field, so that every field gets
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
	Errs   *[]engine.FieldError
	fields map[string]json.RawMessage
	seen   map[string]bool
}

// Parse reads data as one JSON object. Data that is not JSON is an
// error; JSON that is no object (an array, a string, a number, true,
// false or null) is a *NotObjectError.
func Parse(data []byte, path string, errs *[]engine.FieldError) (*Object, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&fields)
	_, wrongType := errors.AsType[*json.UnmarshalTypeError](err)
	switch {
	case errors.Is(err, io.EOF):
		return nil, errors.New("no JSON value")
	case err != nil && !wrongType:
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	if wrongType || fields == nil {
		return nil, &NotObjectError{Got: jsonType(data)}
	}
	return &Object{Path: path, fields: fields, seen: map[string]bool{}, Errs: errs}, nil
}

// NotObjectError is JSON of another type where an object belongs.
type NotObjectError struct {
	// Got names the JSON's type with its article: "an array", "null".
	Got string
}

func (e *NotObjectError) Error() string { return "must be a JSON object, not " + e.Got }

// jsonType names the type of data, one JSON value, with its article.
func jsonType(data []byte) string {
	v := bytes.TrimLeft(data, " \t\r\n")
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	}
	return "a number"
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
// ""; in YAML too, where ~ and null are not set); it reports whether it
// was. A YAML number, true or false is no string, as in JSON.
func (o *Object) Str(name string, dst *string) bool {
	v, present := o.Value(name)
	if v == nil {
		if present {
			*dst = ""
		}
		return present
	}
	if err := json.Unmarshal(v, dst); err != nil {
		o.Fail(name, "must be a string")
	}
	return true
}

// PeekStr is what Str would read from the field, or "" if it is absent
// or no string; unlike Str it neither marks the field read nor reports a
// bad value, so that a rule's name can label its errors before its fields
// are read.
func (o *Object) PeekStr(name string) string {
	var s string
	if json.Unmarshal(o.fields[name], &s) != nil {
		return ""
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
