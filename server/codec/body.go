package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// ParseBody reads a request body as one JSON object, like wire.Parse, after
// refusing what CheckBody refuses.
func ParseBody(data []byte, errs *[]engine.FieldError) (*wire.Object, error) {
	if err := CheckBody(data); err != nil {
		return nil, err
	}
	return wire.Parse(data, "", errs)
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
const MaxDepth = wire.MaxDepth

// dupScanner walks JSON for DuplicateKey. It allocates nothing for a
// body without escaped keys or large objects: a fleet's reports are
// hundreds of small objects each, checked on every report.
type dupScanner struct {
	data  []byte
	i     int
	depth int
	found bool
	path  string
	// trail is the path to the value being read, innermost last.
	trail []step
}

// step is one step of a path: an object's key, or an array's index.
type step struct {
	key     []byte
	index   int
	element bool
}

// smallObject is the most keys an object's duplicates are looked for
// among by comparing each with the others, rather than in a map.
const smallObject = 16

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
		_, ok := d.str(false)
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
	var small [smallObject][]byte
	var n int
	var many map[string]bool
	for {
		d.skipSpace()
		if d.i < len(d.data) && d.data[d.i] == '}' {
			d.i++
			return true
		}
		key, ok := d.str(true)
		if !ok {
			return false
		}
		seen := false
		switch {
		case many != nil:
			seen = many[string(key)]
			many[string(key)] = true
		case n < smallObject:
			for _, k := range small[:n] {
				seen = seen || bytes.Equal(k, key)
			}
			small[n] = key
			n++
		default:
			many = make(map[string]bool, 2*smallObject)
			for _, k := range small {
				many[string(k)] = true
			}
			seen = many[string(key)]
			many[string(key)] = true
		}
		if seen {
			d.found, d.path = true, joinTrail(append(d.trail, step{key: key}))
			return false
		}
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return false
		}
		d.i++
		if more, ok := d.member(step{key: key}, '}'); !more {
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
		if more, ok := d.member(step{index: index, element: true}, ']'); !more {
			return ok
		}
	}
}

// member reads the value of an object's key or an array's element, the
// step to it from its container, and what follows it: more is true after
// a ',', ok false on a duplicate or bad JSON.
func (d *dupScanner) member(s step, closing byte) (more, ok bool) {
	d.trail = append(d.trail, s)
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

// str reads a string and, for a key, returns it unescaped ("\u0061" and
// "a" are one key): a slice of the body unless it has escapes.
func (d *dupScanner) str(key bool) ([]byte, bool) {
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return nil, false
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
			if !key || !escaped {
				return raw[1 : len(raw)-1], true
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, false
			}
			return []byte(s), true
		}
	}
	return nil, false
}

// joinTrail writes a trail as a field path: rules[3].threshold.
func joinTrail(trail []step) string {
	var b strings.Builder
	for i, s := range trail {
		switch {
		case s.element:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.Write(s.key)
		}
	}
	return b.String()
}
