package descriptor

import (
	"strings"
)

// Entry is one entry of a descriptor path: a key, and its value, empty in
// a configuration node that matches any value.
type Entry struct{ Key, Value string }

// Wildcard reports whether the entry matches any value.
func (e Entry) Wildcard() bool { return e.Value == "" }

// Resource returns the resource name of the node of domain at path.
func Resource(domain string, path []Entry) string {
	var b strings.Builder
	escape(&b, domain)
	b.WriteByte(':')
	for i, e := range path {
		if i > 0 {
			b.WriteByte('/')
		}
		escape(&b, e.Key)
		if !e.Wildcard() {
			b.WriteByte('=')
			escape(&b, e.Value)
		}
	}
	return b.String()
}

// ParamKey returns the hotspot parameter key that the values of the
// wildcard entries of path are given under: their keys, escaped, joined
// by "/"; "" when path has none.
func ParamKey(path []Entry) string {
	var b strings.Builder
	for _, e := range path {
		if e.Wildcard() {
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			escape(&b, e.Key)
		}
	}
	return b.String()
}

// ParamValue returns the value a call gives under ParamKey: the values of
// the request's entries at the wildcard entries of the node, escaped,
// joined by "/".
func ParamValue(values []string) string {
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteByte('/')
		}
		escape(&b, v)
	}
	return b.String()
}

// Parse splits a resource name made by Resource back into its domain and
// path; ok is false for a name Resource does not make.
func Parse(resource string) (domain string, path []Entry, ok bool) {
	d, rest, found := strings.Cut(resource, ":")
	if !found || rest == "" {
		return "", nil, false
	}
	if domain, ok = unescape(d); !ok || domain == "" {
		return "", nil, false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		k, v, hasValue := strings.Cut(seg, "=")
		key, okKey := unescape(k)
		value, okValue := unescape(v)
		if !okKey || !okValue || key == "" || hasValue && value == "" {
			return "", nil, false
		}
		path = append(path, Entry{Key: key, Value: value})
	}
	return domain, path, true
}

const hex = "0123456789ABCDEF"

// escaped reports whether c is written as %XX.
func escaped(c byte) bool {
	return c == '%' || c == '/' || c == '=' || c == ':' || c < 0x20 || c == 0x7f
}

func escape(b *strings.Builder, s string) {
	for i := range len(s) {
		if c := s[i]; escaped(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
}

// unescape reverses escape; ok is false for a byte that escape would have
// escaped, or a bad %XX.
func unescape(s string) (string, bool) {
	if !strings.ContainsAny(s, "%/=:") && !hasControl(s) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if escaped(c) {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, lo := strings.IndexByte(hex, s[i+1]), strings.IndexByte(hex, s[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		d := byte(hi<<4 | lo)
		if !escaped(d) {
			return "", false // one name, one spelling
		}
		b.WriteByte(d)
		i += 2
	}
	return b.String(), true
}

func hasControl(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
