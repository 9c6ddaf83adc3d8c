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
type Extractor struct{ x guard.Extractor[httpRequest] }

// Key returns the param key the extractor's value goes under.
func (x Extractor) Key() string { return x.x.Key() }

// ClientIP reads the client's IP address, param key "ip": the host of
// r.RemoteAddr, the peer that opened the connection. Behind a proxy, that
// is the proxy; give its addresses with WithTrustedProxies to read the
// client's from X-Forwarded-For. The header is never believed otherwise,
// since any client can send one.
func ClientIP() Extractor { return Extractor{guard.ClientIP[httpRequest]()} }

// Header reads the request header name, param key "header:<name>" (as
// given, such as "header:X-User"); of several lines, the first.
func Header(name string) Extractor {
	return Extractor{guard.Header[httpRequest](name, http.CanonicalHeaderKey(name))}
}

// Query reads the query parameter name, param key "query:<name>"; of
// several, the first.
func Query(name string) Extractor { return Extractor{guard.Query[httpRequest](name)} }

// PathValue reads the wildcard name of the route's ServeMux pattern
// ("{id}" of "GET /orders/{id}", as r.PathValue), param key "path:<name>".
// It works whether the guard wraps the ServeMux or its handlers.
func PathValue(name string) Extractor { return Extractor{guard.PathParam[httpRequest](name)} }

// Cookie reads the cookie name, param key "cookie:<name>". Unlike the
// other extractors, it allocates: net/http parses the Cookie header for
// each request.
func Cookie(name string) Extractor { return Extractor{guard.Cookie[httpRequest](name)} }

// Func reads what fn returns, under the caller-chosen param key; "" means
// absent. fn runs before every guarded request, so keep it cheap.
func Func(key string, fn func(r *http.Request) string) Extractor {
	return Extractor{guard.Func(key, func(req httpRequest) string { return fn(req.r) })}
}

// WithOrigin names each request's origin (the calling app, tenant or
// user), which authority rules allow or deny and flow rules with a
// limitApp count apart. Only the extractor's value is used, not its key.
func WithOrigin(x Extractor) Option { return func(c *config) { c.extract.SetOrigin(x.x) } }

// WithParam gives each request the extractor's value as a param, which
// hotspot rules with the extractor's key limit per value. Give it once per
// param.
func WithParam(x Extractor) Option { return func(c *config) { c.extract.AddParam(x.x) } }

// WithTrustedProxies makes ClientIP believe X-Forwarded-For when the
// request comes from one of these networks (e.g. 10.0.0.0/8, or a single
// proxy's 192.0.2.10/32): the client is the rightmost address of the
// header that is not a trusted proxy. Without it, the header is ignored.
func WithTrustedProxies(proxies ...netip.Prefix) Option {
	return func(c *config) { c.extract.TrustProxies(proxies) }
}

// httpRequest is what the extractors read of a request: pattern is the
// route's ServeMux pattern, "" if not known yet, and mux the ServeMux the
// guard wraps, if it does, which tells the pattern before routing.
type httpRequest struct {
	r       *http.Request
	mux     *http.ServeMux
	pattern string
}

// Header returns the first line of the header; name is canonical.
func (req httpRequest) Header(name string) string {
	if v := req.r.Header[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// HeaderLine returns line i of the header; name is canonical.
func (req httpRequest) HeaderLine(name string, i int) (string, bool) {
	if v := req.r.Header[name]; i < len(v) {
		return v[i], true
	}
	return "", false
}

// Query returns the first value of the query parameter.
func (req httpRequest) Query(name string) string {
	return guard.QueryValue(req.r.URL.RawQuery, name)
}

// PathParam returns the value of the route's wildcard: r.PathValue once a
// ServeMux matched the request, or read off the pattern the guard's
// ServeMux will match.
func (req httpRequest) PathParam(name string) string {
	if req.r.Pattern != "" {
		return req.r.PathValue(name)
	}
	pattern := req.pattern
	if pattern == "" && req.mux != nil {
		_, pattern = req.mux.Handler(req.r)
	}
	return guard.PathValue(pattern, req.r.URL.EscapedPath(), name)
}

// Cookie returns the value of the cookie.
func (req httpRequest) Cookie(name string) string {
	c, err := req.r.Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}

// RemoteIP is the host of r.RemoteAddr.
func (req httpRequest) RemoteIP() netip.Addr {
	a, _ := netip.ParseAddr(req.RemoteIPText())
	return a
}

// RemoteIPText is the host of r.RemoteAddr, or all of it when it has no
// port.
func (req httpRequest) RemoteIPText() string {
	host, _, err := net.SplitHostPort(req.r.RemoteAddr)
	if err != nil {
		return req.r.RemoteAddr
	}
	return host
}
