package rules

import (
	"fmt"
	"strings"
)

// slugName is the name given to a rule created without one:
// <kind>-<slug of resource>, lower case, every run of characters other than
// a-z and 0-9 turned into one '-', cut to leave room for suffix ("-2" when
// the plain name is taken).
func slugName(kind, resource, suffix string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(resource) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		} else {
			dash = true
		}
	}
	slug := b.String()
	if slug == "" {
		slug = "rule"
	}
	prefix := strings.ToLower(kind) + "-"
	if room := maxRuleNameLen - len(prefix) - len(suffix); len(slug) > room {
		slug = strings.TrimRight(slug[:room], "-")
	}
	return prefix + slug + suffix
}

const maxRuleNameLen = 128

// uniqueName returns the first of slugName's names, plain then -2, -3, …,
// for which taken is false.
func uniqueName(kind, resource string, taken func(string) (bool, error)) (string, error) {
	for n := 1; ; n++ {
		suffix := ""
		if n > 1 {
			suffix = fmt.Sprintf("-%d", n)
		}
		name := slugName(kind, resource, suffix)
		t, err := taken(name)
		if err != nil || !t {
			return name, err
		}
	}
}
