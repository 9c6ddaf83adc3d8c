package guardtest

import (
	"net/netip"
	"testing"
)

// Kit is one middleware's extractors and the options that take them, of
// which the shared cases build their guards.
type Kit[X interface{ Key() string }, O any] struct {
	ClientIP                    func() X
	Header, Query, Path, Cookie func(name string) X
	// Tenant is the func extractor keyed "tenant" that reads the X-Tenant
	// header in lower case.
	Tenant             X
	WithOrigin         func(X) O
	WithParam          func(X) O
	WithTrustedProxies func(...netip.Prefix) O
}

// extractor is the kit's extractor of a case's source.
func (k Kit[X, O]) extractor(t *testing.T, s Source) X {
	t.Helper()
	switch s.Kind {
	case "ip":
		return k.ClientIP()
	case "header":
		return k.Header(s.Name)
	case "query":
		return k.Query(s.Name)
	case "path":
		return k.Path(s.Name)
	case "cookie":
		return k.Cookie(s.Name)
	case "func":
		return k.Tenant
	}
	t.Fatalf("no extractor %q", s.Kind)
	var none X
	return none
}

// Options are the options of the case's origin, params and proxies.
func (k Kit[X, O]) Options(t *testing.T, c ParamCase) []O {
	t.Helper()
	var opts []O
	if c.Origin != nil {
		opts = append(opts, k.WithOrigin(k.extractor(t, *c.Origin)))
	}
	for _, s := range c.Params {
		opts = append(opts, k.WithParam(k.extractor(t, s)))
	}
	if c.Proxies != nil {
		opts = append(opts, k.WithTrustedProxies(c.Proxies...))
	}
	return opts
}

// CheckKeys checks that the kit's extractors name the param keys of
// docs/api.md, which hotspot rules name.
func (k Kit[X, O]) CheckKeys(t *testing.T) {
	t.Helper()
	for _, tt := range []struct {
		x    X
		want string
	}{
		{k.ClientIP(), "ip"},
		{k.Header("X-User"), "header:X-User"},
		{k.Header("x-user"), "header:x-user"},
		{k.Query("key"), "query:key"},
		{k.Path("id"), "path:id"},
		{k.Cookie("session"), "cookie:session"},
		{k.Tenant, "tenant"},
	} {
		if got := tt.x.Key(); got != tt.want {
			t.Errorf("Key() = %q, want %q", got, tt.want)
		}
	}
}
