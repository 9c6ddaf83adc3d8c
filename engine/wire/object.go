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
// The text is checked and split into its fields in one pass (split): an
// instance's report is hundreds of small objects, which encoding/json's
// decoder into a map made most of the report's cost on the server, and
// checking it with json.Valid before the split a quarter of what was
// left. Invalid JSON is given to the decoder, for its error.
func Parse(data []byte, path string, errs *[]engine.FieldError) (*Object, error) {
	data = bytes.Clone(data)
	o := &Object{Path: path, Errs: errs}
	i := skipSpace(data, 0)
	isObject := i < len(data) && data[i] == '{'
	var end int
	if isObject {
		end = o.split(data, i, 1, true)
	} else {
		end = valueEnd(data, i, 0)
	}
	switch {
	case end < 0 || skipSpace(data, end) != len(data):
		return nil, syntaxError(data)
	case !isObject:
		return nil, &NotObjectError{Got: jsonType(data)}
	}
	return o, nil
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
	o := &Object{}
	if err := o.ReadValid(data, path, errs); err != nil {
		return nil, err
	}
	return o, nil
}

// ReadValid is ParseValid into o, whose fields it replaces, their room
// reused, and whose Path and Errs it sets (its Label cleared): a list's
// elements read one after the other into one Object cost no Object and
// no fields each, and a fleet's reports are thousands of elements a
// second. The caller keeps no reference to o's earlier fields.
func (o *Object) ReadValid(data []byte, path string, errs *[]engine.FieldError) error {
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return &NotObjectError{Got: jsonType(data)}
	}
	*o = Object{Path: path, Errs: errs, fields: o.fields[:0]}
	o.split(data, i, 1, false)
	return nil
}

// MaxDepth is how deeply JSON values may nest, objects and arrays
// counted from 1 at the outermost: encoding/json's own limit, past which
// it refuses the text.
const MaxDepth = 10000

// split reads the object that starts at data[i], nested depth deep, and
// returns the index just past it. With check, it checks the object as it
// goes, nested values and all (valueEnd), so that one pass both checks
// and splits the text, and returns -1 when it is not valid JSON; without,
// data is known valid, and the values are only skipped. When o is not
// nil, it sets o's fields to the object's, their values slices of data;
// a name given twice keeps its last value, as encoding/json's decoder
// does (request bodies with one are refused before,
// server/codec.CheckBody).
func (o *Object) split(data []byte, i, depth int, check bool) int {
	if depth > MaxDepth {
		return -1
	}
	if o != nil && o.fields == nil {
		o.fields = make([]field, 0, 8)
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		end := stringEnd(data, i)
		if end < 0 {
			return -1
		}
		nameAt := i
		if i = skipSpace(data, end); i >= len(data) || data[i] != ':' {
			return -1
		}
		i = skipSpace(data, i+1)
		var vEnd int
		if check {
			vEnd = valueEnd(data, i, depth)
		} else {
			vEnd = skipValue(data, i)
		}
		if vEnd < 0 {
			return -1
		}
		if o != nil {
			o.set(data[nameAt:end], data[i:vEnd])
		}
		var last bool
		if i, last = afterValue(data, vEnd, '}'); i < 0 || last {
			return i
		}
	}
}

// afterValue reads what follows a member of an object or an element of
// an array, closed by closer, that ends at end: the index past closer and
// true after the last, the next one's start and false after a comma, or
// -1 after anything else.
func afterValue(data []byte, end int, closer byte) (int, bool) {
	i := skipSpace(data, end)
	switch {
	case i >= len(data):
		return -1, false
	case data[i] == closer:
		return i + 1, true
	case data[i] == ',':
		return skipSpace(data, i+1), false
	}
	return -1, false
}

// set gives o's field of the quoted name the value.
func (o *Object) set(quoted []byte, value json.RawMessage) {
	name := unquote(quoted)
	if name == nil {
		name = quoted[1 : len(quoted)-1]
	}
	if f := o.find(string(name)); f != nil {
		f.value = value
	} else {
		o.add(field{name: name, value: value})
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
		end := skipValue(v, i)
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

// valueEnd checks the JSON value that starts at data[i], in a container
// nested depth deep (0 for none), and returns the index just past it, or
// -1 when no valid value starts there.
func valueEnd(data []byte, i, depth int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{':
		return (*Object)(nil).split(data, i, depth+1, true)
	case '[':
		return arrayEnd(data, i, depth+1)
	case 't':
		return literalEnd(data, i, "true")
	case 'f':
		return literalEnd(data, i, "false")
	case 'n':
		return literalEnd(data, i, "null")
	}
	return numberEnd(data, i)
}

// arrayEnd checks the array that starts at data[i], nested depth deep,
// and returns the index just past it, or -1 when it is not valid JSON.
func arrayEnd(data []byte, i, depth int) int {
	if depth > MaxDepth {
		return -1
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1
	}
	for {
		end := valueEnd(data, i, depth)
		if end < 0 {
			return -1
		}
		var last bool
		if i, last = afterValue(data, end, ']'); i < 0 || last {
			return i
		}
	}
}

// skipValue returns the index just past the value that starts at
// data[i], which is known valid JSON: it looks for the value's end only.
func skipValue(data []byte, i int) int {
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

// inString marks the bytes that end a string's run of plain ones: its
// closing quote, an escape, and the control characters JSON refuses
// unescaped. Other bytes, invalid UTF-8 included, encoding/json takes.
var inString = [256]bool{'"': true, '\\': true,
	0x00: true, 0x01: true, 0x02: true, 0x03: true, 0x04: true, 0x05: true, 0x06: true, 0x07: true,
	0x08: true, 0x09: true, 0x0a: true, 0x0b: true, 0x0c: true, 0x0d: true, 0x0e: true, 0x0f: true,
	0x10: true, 0x11: true, 0x12: true, 0x13: true, 0x14: true, 0x15: true, 0x16: true, 0x17: true,
	0x18: true, 0x19: true, 0x1a: true, 0x1b: true, 0x1c: true, 0x1d: true, 0x1e: true, 0x1f: true,
}

// stringEnd checks the string that starts at data[i] and returns the
// index just past it, or -1 when it is not valid JSON.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		if !inString[data[i]] {
			continue
		}
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			if i++; i == len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		default:
			return -1
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// literalEnd returns the index just past lit (true, false or null) at
// data[i], or -1 when it is not there.
func literalEnd(data []byte, i int, lit string) int {
	if !bytes.HasPrefix(data[i:], []byte(lit)) {
		return -1
	}
	return i + len(lit)
}

// numberEnd checks the number that starts at data[i], by JSON's grammar
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), and returns the index
// just past it, or -1 when none starts there. What follows is its
// container's to check.
func numberEnd(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digitsEnd(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		start := i + 1
		if i = digitsEnd(data, start); i == start {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		if i++; i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		start := i
		if i = digitsEnd(data, i); i == start {
			return -1
		}
	}
	return i
}

// digitsEnd returns the index just past the decimal digits from data[i].
func digitsEnd(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
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
