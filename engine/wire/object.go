package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
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
	fields []field
	// index finds a field by name in an object of more than smallObject
	// fields, whose lookups would otherwise cost a hostile body's wide
	// object time in the square of its width.
	index map[string]int
}

// smallObject is the most fields an Object looks a name up among one by
// one, rather than in its index.
const smallObject = 16

// field is one of an Object's fields: its name, its value (valid JSON,
// without the white space around it) and whether it was read.
type field struct {
	name  []byte
	value json.RawMessage
	seen  bool
}

// Parse reads data as one JSON object. Data that is not JSON is an
// error; JSON that is no object (an array, a string, a number, true,
// false or null) is a *NotObjectError. The object keeps no reference to
// data.
//
// Valid JSON is split into its fields in one pass (split): an instance's
// report is hundreds of small objects, which encoding/json's decoder into
// a map made most of the report's cost on the server. Invalid JSON is
// given to the decoder, for its error.
func Parse(data []byte, path string, errs *[]engine.FieldError) (*Object, error) {
	if json.Valid(data) {
		return ParseValid(bytes.Clone(data), path, errs)
	}
	return nil, syntaxError(data)
}

// syntaxError says what is wrong with data, which is no valid JSON, as
// encoding/json's decoder finds it: no value, a syntax error, or a value
// followed by more.
func syntaxError(data []byte) error {
	var fields map[string]json.RawMessage
	err := json.NewDecoder(bytes.NewReader(data)).Decode(&fields)
	_, wrongType := errors.AsType[*json.UnmarshalTypeError](err)
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("no JSON value")
	case err != nil && !wrongType:
		return err
	}
	return errors.New("more than one JSON value")
}

// ParseValid is Parse of data known to be one valid JSON value, such as
// an element that Elements split out of an Object's value, which it does
// not check again; the object's values are slices of data.
func ParseValid(data []byte, path string, errs *[]engine.FieldError) (*Object, error) {
	o := &Object{Path: path, Errs: errs}
	if !o.split(data) {
		return nil, &NotObjectError{Got: jsonType(data)}
	}
	return o, nil
}

// split sets o's fields to those of data, one valid JSON value, or
// returns false when it is no object. A name given twice keeps its last
// value, as encoding/json's decoder does (request bodies with one are
// refused before, server/codec.CheckBody). The values are slices of data.
func (o *Object) split(data []byte) bool {
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return false
	}
	o.fields = make([]field, 0, 8)
	i = skipSpace(data, i+1)
	if data[i] == '}' {
		return true
	}
	for {
		end := stringEnd(data, i)
		name := unquote(data[i:end])
		if name == nil {
			name = data[i+1 : end-1]
		}
		i = skipSpace(data, skipSpace(data, end)+1)
		vEnd := valueEnd(data, i)
		if f := o.find(string(name)); f != nil {
			f.value = data[i:vEnd]
		} else {
			o.add(field{name: name, value: data[i:vEnd]})
		}
		i = skipSpace(data, vEnd)
		if data[i] == '}' {
			return true
		}
		i = skipSpace(data, i+1)
	}
}

// add appends f, a field of a name o has not got, indexing o's fields
// once there are more than smallObject.
func (o *Object) add(f field) {
	o.fields = append(o.fields, f)
	switch n := len(o.fields); {
	case o.index != nil:
		o.index[string(f.name)] = n - 1
	case n > smallObject:
		o.index = make(map[string]int, 2*n)
		for i, f := range o.fields {
			o.index[string(f.name)] = i
		}
	}
}

// Elements returns the elements of v, one valid JSON value, or false
// when it is no array: what json.Unmarshal into a []json.RawMessage gives,
// without copying. The elements are slices of v.
func Elements(v json.RawMessage) ([]json.RawMessage, bool) {
	i := skipSpace(v, 0)
	if i == len(v) || v[i] != '[' {
		return nil, false
	}
	items := []json.RawMessage{}
	i = skipSpace(v, i+1)
	if v[i] == ']' {
		return items, true
	}
	for {
		end := valueEnd(v, i)
		items = append(items, v[i:end])
		i = skipSpace(v, end)
		if v[i] == ']' {
			return items, true
		}
		i = skipSpace(v, i+1)
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at i.
func stringEnd(data []byte, i int) int {
	for i++; data[i] != '"'; i++ {
		if data[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the index just past the value that starts at i.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// unquote returns the text of s, a valid JSON string, as encoding/json
// decodes it (invalid UTF-8 becomes U+FFFD), or nil when that is the
// bytes between its quotes.
func unquote(s []byte) []byte {
	if _, ok := plain(s); ok {
		return nil
	}
	var str string
	if err := json.Unmarshal(s, &str); err != nil {
		panic("wire: unquote of no JSON string: " + err.Error())
	}
	return []byte(str)
}

// plain returns the bytes between the quotes of v if it is a JSON string
// without escapes, of valid UTF-8: most are, and need no decoder.
func plain(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	body := v[1 : len(v)-1]
	ascii := true
	for _, c := range body {
		switch {
		case c == '\\' || c == '"' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(body) {
		return nil, false
	}
	return body, true
}

// find returns o's field named name, or nil.
func (o *Object) find(name string) *field {
	if o.index != nil {
		if i, ok := o.index[name]; ok {
			return &o.fields[i]
		}
		return nil
	}
	for i := range o.fields {
		if string(o.fields[i].name) == name {
			return &o.fields[i]
		}
	}
	return nil
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
	f := o.find(name)
	if f == nil {
		return nil, false
	}
	f.seen = true
	if string(f.value) == "null" {
		return nil, true
	}
	return f.value, true
}

// Has reports whether the field is present and not null.
func (o *Object) Has(name string) bool {
	f := o.find(name)
	return f != nil && string(f.value) != "null"
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
	if b, ok := plain(v); ok {
		*dst = string(b)
	} else if err := json.Unmarshal(v, dst); err != nil {
		o.Fail(name, "must be a string")
	}
	return true
}

// PeekStr is what Str would read from the field, or "" if it is absent
// or no string; unlike Str it neither marks the field read nor reports a
// bad value, so that a rule's name can label its errors before its fields
// are read.
func (o *Object) PeekStr(name string) string {
	f := o.find(name)
	if f == nil {
		return ""
	}
	var s string
	if json.Unmarshal(f.value, &s) != nil {
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
	if !isJSONNumber(v) {
		o.Fail(name, "must be a number")
		return true
	}
	f, err := strconv.ParseFloat(string(v), 64)
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
	if !isJSONNumber(v) {
		o.Fail(name, "must be a whole number")
		return true
	}
	if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		*dst = i
		return true
	}
	f, err := strconv.ParseFloat(string(v), 64)
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

// isJSONNumber tells a JSON number from the other values: v is one valid
// JSON value (Parse), so a first byte of a number's is a number.
func isJSONNumber(v json.RawMessage) bool {
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}

// Rest reports every field not read so far: as belonging to another kind
// when other says so, else as unknown.
func (o *Object) Rest(other func(name string) string) {
	var unread []string
	for _, f := range o.fields {
		if !f.seen {
			unread = append(unread, string(f.name))
		}
	}
	slices.Sort(unread)
	for _, name := range unread {
		if msg := other(name); msg != "" {
			o.Fail(name, msg)
		} else {
			o.Fail(name, "is not a known field")
		}
	}
}
