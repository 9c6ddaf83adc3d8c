package descriptor

import (
	"slices"
	"testing"
)

func TestResourceNamesParseBack(t *testing.T) {
	cases := []struct {
		domain string
		path   []Entry
		want   string
	}{
		{"edge", []Entry{{"remote_address", ""}}, "edge:remote_address"},
		{"mongo_cps", []Entry{{"database", "users"}}, "mongo_cps:database=users"},
		{"rl", []Entry{{"key1", "value1"}, {"user", ""}, {"path", "/api/v1"}}, "rl:key1=value1/user/path=%2Fapi%2Fv1"},
		{"a:b", []Entry{{"k=1", "50%"}}, "a%3Ab:k%3D1=50%25"},
		{"d", []Entry{{"k", "tab\there"}}, "d:k=tab%09here"},
	}
	for _, c := range cases {
		got := Resource(c.domain, c.path)
		if got != c.want {
			t.Errorf("Resource(%q, %v) = %q, want %q", c.domain, c.path, got, c.want)
		}
		domain, path, ok := Parse(got)
		if !ok || domain != c.domain || !slices.Equal(path, c.path) {
			t.Errorf("Parse(%q) = %q, %v, %v", got, domain, path, ok)
		}
	}
}

func TestParseRefusesOtherNames(t *testing.T) {
	for _, name := range []string{"GET:/api/orders", "orders", ":k", "d:", "d:k=", "d:k//j", "d:%zz", "d:k%2", "d:a%41", "d:k=v=w"} {
		if d, p, ok := Parse(name); ok {
			t.Errorf("Parse(%q) = %q, %v, want not a descriptor resource", name, d, p)
		}
	}
}

func TestParamsOfWildcards(t *testing.T) {
	path := []Entry{{"tenant", "acme"}, {"user", ""}, {"path/x", ""}}
	if got := ParamKey(path); got != "user/path%2Fx" {
		t.Errorf("ParamKey = %q", got)
	}
	if got := ParamKey(path[:1]); got != "" {
		t.Errorf("ParamKey without wildcards = %q", got)
	}
	if got := ParamValue([]string{"ann", "/a/b"}); got != "ann/%2Fa%2Fb" {
		t.Errorf("ParamValue = %q", got)
	}
}
