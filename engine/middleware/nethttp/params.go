package nethttp

import (
	"net"
	"net/http"
	"net/netip"

	"github.com/sluicehq/sluice/engine/middleware/internal/guard"
)

// Extractor reads one value of a request: the caller's origin (WithOrigin)
// or a param (WithParam), under the param key that hotspot rules name. An
// empty value counts as absent: the call has no origin, or not that param,
// so the key's hotspot rules do not limit it.
type Extractor struct {
	key  string
	kind extractorKind
	name string
	fn   func(*http.Request) string
}

type extractorKind int

const (
	kindNone extractorKind = iota // the zero Extractor: reads nothing
	kindIP
	kindHeader
	kindQuery
	kindPath
	kindFunc
)

// Key returns the param key the extractor's value goes under.
func (x Extractor) Key() string { return x.key }

// ClientIP reads the client's IP address, param key "ip": the host of
// r.RemoteAddr, the peer that opened the connection. Behind a proxy, that
// is the proxy; give its addresses with WithTrustedProxies to read the
// client's from X-Forwarded-For. The header is never believed otherwise,
// since any client can send one.
func ClientIP() Extractor { return Extractor{key: guard.IPKey, kind: kindIP} }

// Header reads the request header name, param key "header:<name>" (as
// given, such as "header:X-User"); of several lines, the first.
func Header(name string) Extractor {
	return Extractor{key: guard.HeaderKey(name), kind: kindHeader, name: http.CanonicalHeaderKey(name)}
}

// Query reads the query parameter name, param key "query:<name>"; of
// several, the first.
func Query(name string) Extractor {
	return Extractor{key: guard.QueryKey(name), kind: kindQuery, name: name}
}

// PathValue reads the wildcard name of the route's ServeMux pattern
// ("{id}" of "GET /orders/{id}", as r.PathValue), param key "path:<name>".
// It works whether the guard wraps the ServeMux or its handlers.
func PathValue(name string) Extractor {
	return Extractor{key: guard.PathKey(name), kind: kindPath, name: name}
}

// Func reads what fn returns, under the caller-chosen param key; "" means
// absent. fn runs before every guarded request, so keep it cheap.
func Func(key string, fn func(r *http.Request) string) Extractor {
	return Extractor{key: key, kind: kindFunc, fn: fn}
}

// WithOrigin names each request's origin (the calling app, tenant or
// user), which authority rules allow or deny and flow rules with a
// limitApp count apart. Only the extractor's value is used, not its key.
func WithOrigin(x Extractor) Option {
	return func(c *config) { c.origin = &x }
}

// WithParam gives each request the extractor's value as a param, which
// hotspot rules with the extractor's key limit per value. Give it once per
// param.
func WithParam(x Extractor) Option {
	return func(c *config) { c.params = append(c.params, x) }
}

// WithTrustedProxies makes ClientIP believe X-Forwarded-For when the
// request comes from one of these networks (e.g. 10.0.0.0/8, or a single
// proxy's 192.0.2.10/32): the client is the rightmost address of the
// header that is not a trusted proxy. Without it, the header is ignored.
func WithTrustedProxies(proxies ...netip.Prefix) Option {
	return func(c *config) { c.proxies = append(c.proxies, proxies...) }
}

// value reads x of r; pattern is the route's ServeMux pattern, "" if
// not known yet.
func (g *httpGuard) value(x *Extractor, r *http.Request, pattern string) string {
	switch x.kind {
	case kindIP:
		return g.clientIP(r)
	case kindHeader:
		if v := r.Header[x.name]; len(v) > 0 {
			return v[0]
		}
		return ""
	case kindQuery:
		return guard.QueryValue(r.URL.RawQuery, x.name)
	case kindPath:
		if r.Pattern != "" {
			return r.PathValue(x.name)
		}
		if pattern == "" && g.mux != nil {
			_, pattern = g.mux.Handler(r)
		}
		return guard.PathValue(pattern, r.URL.EscapedPath(), x.name)
	case kindFunc:
		return x.fn(r)
	}
	return ""
}

// clientIP is the host of r.RemoteAddr, or the client X-Forwarded-For
// names when that host is a trusted proxy.
func (g *httpGuard) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(g.cfg.proxies) == 0 {
		return host
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if client, ok := g.cfg.proxies.Forwarded(peer, r.Header["X-Forwarded-For"]); ok {
		return client
	}
	return host
}
