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
type Extractor struct {
	key  string
	kind extractorKind
	name string
	fn   func(*fiber.Ctx) string
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

// ClientIP reads the client's IP address, param key "ip": the address of
// the peer that opened the connection. Behind a proxy, that is the proxy;
// give its addresses with WithTrustedProxies to read the client's from
// X-Forwarded-For. The header is never believed otherwise, since any
// client can send one; the app's own ProxyHeader setting is not used.
func ClientIP() Extractor { return Extractor{key: guard.IPKey, kind: kindIP} }

// Header reads the request header name, param key "header:<name>" (as
// given, such as "header:X-User").
func Header(name string) Extractor {
	return Extractor{key: guard.HeaderKey(name), kind: kindHeader, name: name}
}

// Query reads the query parameter name, param key "query:<name>".
func Query(name string) Extractor {
	return Extractor{key: guard.QueryKey(name), kind: kindQuery, name: name}
}

// Param reads the route parameter name (":id" of "/orders/:id", as
// c.Params), param key "path:<name>".
func Param(name string) Extractor {
	return Extractor{key: guard.PathKey(name), kind: kindPath, name: name}
}

// Func reads what fn returns, under the caller-chosen param key; "" means
// absent. fn runs before every guarded request, so keep it cheap.
func Func(key string, fn func(c *fiber.Ctx) string) Extractor {
	return Extractor{key: key, kind: kindFunc, fn: fn}
}

// WithOrigin names each request's origin (the calling app, tenant or
// user), which authority rules allow or deny and flow rules with a
// limitApp count apart. Only the extractor's value is used, not its key.
func WithOrigin(x Extractor) Option {
	return func(cfg *config) { cfg.origin = &x }
}

// WithParam gives each request the extractor's value as a param, which
// hotspot rules with the extractor's key limit per value. Give it once per
// param.
func WithParam(x Extractor) Option {
	return func(cfg *config) { cfg.params = append(cfg.params, x) }
}

// WithTrustedProxies makes ClientIP believe X-Forwarded-For when the
// request comes from one of these networks (e.g. 10.0.0.0/8, or a single
// proxy's 192.0.2.10/32): the client is the rightmost address of the
// header that is not a trusted proxy. Without it, the header is ignored.
func WithTrustedProxies(proxies ...netip.Prefix) Option {
	return func(cfg *config) { cfg.proxies = append(cfg.proxies, proxies...) }
}

// value reads x of c.
func (g *fiberGuard) value(x *Extractor, c *fiber.Ctx) string {
	switch x.kind {
	case kindIP:
		return g.clientIP(c)
	case kindHeader:
		return c.Get(x.name)
	case kindQuery:
		return c.Query(x.name)
	case kindPath:
		return c.Params(x.name)
	case kindFunc:
		return x.fn(c)
	}
	return ""
}

// clientIP is the peer's address, or the client X-Forwarded-For names
// when the peer is a trusted proxy.
func (g *fiberGuard) clientIP(c *fiber.Ctx) string {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	peer = peer.Unmap()
	if len(g.cfg.proxies) > 0 {
		lines := c.Request().Header.PeekAll(fiber.HeaderXForwardedFor)
		var buf [4]string
		forwarded := buf[:0]
		for _, l := range lines {
			forwarded = append(forwarded, utils.UnsafeString(l))
		}
		if client, ok := g.cfg.proxies.Forwarded(peer, forwarded); ok {
			return client
		}
	}
	if !peer.IsValid() {
		return ""
	}
	return peer.String()
}
