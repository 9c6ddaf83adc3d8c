package codec

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
	"strings"
	"unicode/utf16"
	"unicode/utf8"

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

// ParseBody reads a request body as one JSON object, like Parse, after
// refusing what CheckBody refuses.
func ParseBody(data []byte, errs *[]engine.FieldError) (*Object, error) {
	if err := CheckBody(data); err != nil {
		return nil, err
	}
	return Parse(data, "", errs)
}

// CheckBody refuses a request body whose text is no JSON text a decoder
// should take (a *TextError), and one that has a key twice in any of its
// objects (a *DuplicateKeyError): which of the two a decoder keeps is an
// accident, and a typo in CI must not pass silently. JSON it cannot read
// is left to the decoder, which says what is wrong with it.
func CheckBody(data []byte) error {
	if err := checkText(data); err != nil {
		return err
	}
	if path, ok := DuplicateKey(data); ok {
		return &DuplicateKeyError{Path: path}
	}
	return nil
}

// TextError is a body whose text no JSON decoder should take.
type TextError struct {
	// Offset is the byte at which the text goes wrong.
	Offset int
	// Problem says what is wrong: "is not valid UTF-8".
	Problem string
}

func (e *TextError) Error() string {
	return fmt.Sprintf("the body %s (at byte %d)", e.Problem, e.Offset)
}

// checkText refuses a body that is not UTF-8, or that escapes half of a
// UTF-16 surrogate pair (a lone "\ud800"): Go's JSON decoder would read
// either as U+FFFD and store a character nobody sent. JSON (RFC 8259)
// is UTF-8, and I-JSON (RFC 7493) refuses lone surrogates.
func checkText(data []byte) error {
	if !utf8.Valid(data) {
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				return &TextError{Offset: i, Problem: "is not valid UTF-8"}
			}
			i += size
		}
	}
	if !bytes.Contains(data, []byte(`\u`)) {
		return nil
	}
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 < len(data) && data[i+1] == 'u' {
				if n := surrogateEscape(data, i); n < 0 {
					return &TextError{Offset: i, Problem: "escapes half of a surrogate pair, which is no character"}
				} else if n > 0 {
					i += n - 1
					continue
				}
			}
			i++ // the escaped character
		}
	}
	return nil
}

// surrogateEscape judges the \u escape at data[i:]: 0 if it is no
// surrogate (or no escape of four hex digits, which the decoder refuses), the
// length of the pair if it starts a high surrogate followed by an escaped
// low one, and -1 for half a pair.
func surrogateEscape(data []byte, i int) int {
	r, ok := hexEscape(data, i)
	switch {
	case !ok || !utf16.IsSurrogate(r):
		return 0
	case r >= 0xDC00: // a low surrogate first
		return -1
	}
	if low, ok := hexEscape(data, i+6); ok && low >= 0xDC00 && low <= 0xDFFF {
		return 12
	}
	return -1
}

// hexEscape reads the \uXXXX escape at data[i:].
func hexEscape(data []byte, i int) (rune, bool) {
	if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
	return rune(n), err == nil
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
// 64 MiB. It may report nothing for JSON that is not valid, nor for JSON
// nested deeper than MaxDepth, which encoding/json refuses to decode: a
// 64 MiB body of brackets would otherwise recurse past the stack's limit
// and crash the server.
func DuplicateKey(data []byte) (string, bool) {
	d := dupScanner{data: data}
	d.value()
	return d.path, d.found
}

// MaxDepth is how deeply JSON values may nest: encoding/json's own limit.
const MaxDepth = 10000

// dupScanner walks JSON for DuplicateKey.
type dupScanner struct {
	data  []byte
	i     int
	depth int
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
	case '{', '[':
		if d.depth == MaxDepth {
			return false
		}
		d.depth++
		var ok bool
		if d.data[d.i] == '{' {
			ok = d.object()
		} else {
			ok = d.array()
		}
		d.depth--
		return ok
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
