package fibermw

import (
	"net/netip"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/sluicehq/sluice/engine/middleware/internal/guard"
)

// Extractor reads one value of a request: the caller's origin (WithOrigin)
// or a param (WithParam), under the param key that hotspot rules name. An
// empty value counts as absent: the call has no origin, or not that param,
// so the key's hotspot rules do not limit it.
//
// Fiber reuses a request's memory once its handler returns; the values go
// to the engine without a copy, since it copies those it keeps (a hotspot
// rule's values, a limitApp rule's origins) and reads the others only
// during the call.
type Extractor struct{ x guard.Extractor[fiberRequest] }

// Key returns the param key the extractor's value goes under.
func (x Extractor) Key() string { return x.x.Key() }

// ClientIP reads the client's IP address, param key "ip": the address of
// the peer that opened the connection. Behind a proxy, that is the proxy;
// give its addresses with WithTrustedProxies to read the client's from
// X-Forwarded-For. The header is never believed otherwise, since any
// client can send one; the app's own ProxyHeader setting is not used.
func ClientIP() Extractor { return Extractor{guard.ClientIP[fiberRequest]()} }

// Header reads the request header name, param key "header:<name>" (as
// given, such as "header:X-User").
func Header(name string) Extractor { return Extractor{guard.Header[fiberRequest](name, name)} }

// Query reads the query parameter name, param key "query:<name>".
func Query(name string) Extractor { return Extractor{guard.Query[fiberRequest](name)} }

// Param reads the route parameter name (":id" of "/orders/:id", as
// c.Params), param key "path:<name>".
func Param(name string) Extractor { return Extractor{guard.PathParam[fiberRequest](name)} }

// Cookie reads the cookie name, param key "cookie:<name>".
func Cookie(name string) Extractor { return Extractor{guard.Cookie[fiberRequest](name)} }

// Func reads what fn returns, under the caller-chosen param key; "" means
// absent. fn runs before every guarded request, so keep it cheap.
func Func(key string, fn func(c *fiber.Ctx) string) Extractor {
	return Extractor{guard.Func(key, func(req fiberRequest) string { return fn(req.c) })}
}

// WithOrigin names each request's origin (the calling app, tenant or
// user), which authority rules allow or deny and flow rules with a
// limitApp count apart. Only the extractor's value is used, not its key.
func WithOrigin(x Extractor) Option { return func(cfg *config) { cfg.extract.SetOrigin(x.x) } }

// WithParam gives each request the extractor's value as a param, which
// hotspot rules with the extractor's key limit per value. Give it once per
// param.
func WithParam(x Extractor) Option { return func(cfg *config) { cfg.extract.AddParam(x.x) } }

// WithTrustedProxies makes ClientIP believe X-Forwarded-For when the
// request comes from one of these networks (e.g. 10.0.0.0/8, or a single
// proxy's 192.0.2.10/32): the client is the rightmost address of the
// header that is not a trusted proxy. Without it, the header is ignored.
func WithTrustedProxies(proxies ...netip.Prefix) Option {
	return func(cfg *config) { cfg.extract.TrustProxies(proxies) }
}

// fiberRequest is what the extractors read of a request.
type fiberRequest struct{ c *fiber.Ctx }

// Header returns the first line of the header.
func (req fiberRequest) Header(name string) string { return req.c.Get(name) }

// HeaderLine returns line i of the header.
func (req fiberRequest) HeaderLine(name string, i int) (string, bool) {
	if lines := req.c.Request().Header.PeekAll(name); i < len(lines) {
		return utils.UnsafeString(lines[i]), true
	}
	return "", false
}

// Query returns the query parameter.
func (req fiberRequest) Query(name string) string { return req.c.Query(name) }

// PathParam returns the route parameter.
func (req fiberRequest) PathParam(name string) string { return req.c.Params(name) }

// Cookie returns the value of the cookie.
func (req fiberRequest) Cookie(name string) string { return req.c.Cookies(name) }

// RemoteIP is the peer's address.
func (req fiberRequest) RemoteIP() netip.Addr {
	peer, _ := netip.AddrFromSlice(req.c.Context().RemoteIP())
	return peer.Unmap()
}

// RemoteIPText is the peer's address as text; fasthttp keeps it as a
// net.IP, so this makes the text for each request.
func (req fiberRequest) RemoteIPText() string {
	if peer := req.RemoteIP(); peer.IsValid() {
		return peer.String()
	}
	return ""
}
