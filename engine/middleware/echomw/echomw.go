// Package echomw guards echo routes with a Sluice engine. It is a module
// of its own, so that a service that does not use echo links none of it.
//
//	e := echo.New()
//	e.Use(echomw.Guard(eng))
//	e.GET("/orders/:id", getOrder) // resource "GET /orders/:id"
//
// It has the options, the extractors and the block answer of the net/http
// guard (engine/middleware/nethttp).
package echomw

import (
	"net"
	"net/http"
	"net/netip"
	"reflect"

	"github.com/labstack/echo/v4"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/adapter"
)

// Option adjusts the middleware.
type Option func(*config)

type config struct {
	resource func(echo.Context) string
	blocked  func(echo.Context, *engine.BlockError) error
	details  bool
	limits   adapter.Limits
	extract  adapter.Extractors[echoRequest]
}

// WithResource names the resource of each request; "" lets the request
// through unguarded and uncounted. The default is the method and the
// route's pattern, "GET /orders/:id" (c.Path()).
func WithResource(name func(c echo.Context) string) Option {
	return func(cfg *config) { cfg.resource = name }
}

// WithBlocked answers blocked requests; an error it returns goes to the
// echo's HTTP error handler. The guard has set Retry-After (from the rule
// that blocked: see middleware.RetryAfter) and the rate-limit headers
// (WithRateLimitHeaders) on the response before it calls answer, which
// may change them. The default answers 429 with the JSON error envelope
// of Sluice's API, whose message is "too many requests" (see
// WithBlockDetails).
func WithBlocked(answer func(c echo.Context, blk *engine.BlockError) error) Option {
	return func(cfg *config) { cfg.blocked = answer }
}

// WithBlockDetails makes the default block answer name the rule that
// blocked ("too many requests: blocked by flow rule orders-qps"), for
// services whose callers may know their rules.
func WithBlockDetails() Option {
	return func(cfg *config) { cfg.details = true }
}

// WithRateLimitHeaders tells each caller its limit, what remains of it and
// when its window has room again, in the headers of style: those of the
// IETF httpapi draft (middleware.HeadersDraft) or Envoy's X-RateLimit-*
// (middleware.HeadersXRateLimit), on passed requests and block answers
// alike, when the route has an enforced window rule. The draft's policy
// is named "default", or the rule with WithBlockDetails. Optional.
// Default: middleware.HeadersOff, which costs passed requests nothing;
// the headers cost each one a search of the rule's window.
func WithRateLimitHeaders(style middleware.RateLimitHeaders) Option {
	return func(cfg *config) { cfg.limits.Style = style }
}

// Guard returns an echo middleware that asks eng before the route's
// handler runs. echo routes a request before the middleware of e.Use
// runs, so e.Use(Guard(eng)) names each request by its route; e.Pre
// middleware would see no route. A request no route takes (a 404 or 405) is not
// guarded. A handler's error is handed to the echo's HTTP error handler
// here, so that the status it chooses decides whether the call failed (5xx
// or a panic counts as failed); the guard then returns nil, as echo's
// logger middleware does. A panic goes on, to middleware.Recover if it is
// used before the guard. A throttled request waits its turn (up to the
// rule's maxQueueingTimeMs) before the handler runs.
func Guard(eng *engine.Engine, opts ...Option) echo.MiddlewareFunc {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.blocked == nil {
		cfg.blocked = blockedAnswer(cfg.details)
	}
	cfg.limits.Details = cfg.details
	g := &echoGuard{eng: eng, cfg: cfg, routes: adapter.NewResourceCache[route](eng)}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return g.handle(c, next) }
	}
}

// route is a request's method and pattern.
type route struct{ method, pattern string }

func routeName(r route) string { return r.method + " " + r.pattern }

type echoGuard struct {
	eng    *engine.Engine
	cfg    config
	routes *adapter.ResourceCache[route]
}

func (g *echoGuard) handle(c echo.Context, next echo.HandlerFunc) error {
	var res *engine.Resource
	if g.cfg.resource != nil {
		name := g.cfg.resource(c)
		if name == "" {
			return next(c)
		}
		res = g.eng.Resource(name)
	} else {
		pattern := c.Path()
		if pattern == "" || unrouted(c.Handler()) {
			return next(c)
		}
		res = g.routes.Get(route{c.Request().Method, pattern}, routeName)
	}
	// Requests come in: system rules guard them.
	var buf [adapter.MaxStackOptions]engine.EntryOption
	opts := append(buf[:0], engine.WithInbound())
	opts = g.cfg.extract.Append(opts, res, echoRequest{c: c})
	e, blk := res.Entry(opts...)
	var headers [adapter.MaxHeaders]middleware.Header
	if blk != nil {
		setHeaders(c.Response().Header(), g.cfg.limits.Blocked(headers[:0], res, opts, blk))
		return g.cfg.blocked(c, blk)
	}
	if g.cfg.limits.On() {
		setHeaders(c.Response().Header(), g.cfg.limits.Passed(headers[:0], res, opts))
	}
	returned := false
	defer func() {
		if !returned {
			e.Exit(engine.WithError(adapter.ErrPanicked))
		}
	}()
	if err := next(c); err != nil {
		c.Error(err)
	}
	returned = true
	var failed error
	if c.Response().Status >= http.StatusInternalServerError {
		failed = adapter.ErrServerError
	}
	e.Exit(engine.WithError(failed))
	return nil
}

// echo's answers for a request no route takes: a path that matched a
// node of the router but not the method has its pattern, and would
// otherwise count under a resource of no route.
var (
	notFound         = reflect.ValueOf(echo.NotFoundHandler).Pointer()
	methodNotAllowed = reflect.ValueOf(echo.MethodNotAllowedHandler).Pointer()
)

// unrouted reports whether h is echo's 404 or 405 answer.
func unrouted(h echo.HandlerFunc) bool {
	p := reflect.ValueOf(h).Pointer()
	return p == notFound || p == methodNotAllowed
}

func setHeaders(h http.Header, fields []middleware.Header) {
	for _, f := range fields {
		h.Set(f.Name, f.Value)
	}
}

// blockedAnswer is the default block answer; the guard has set
// Retry-After.
func blockedAnswer(detailed bool) func(echo.Context, *engine.BlockError) error {
	return func(c echo.Context, blk *engine.BlockError) error {
		return c.Blob(http.StatusTooManyRequests, "application/json; charset=utf-8", adapter.BlockedBody(blk, detailed))
	}
}

// Extractor reads one value of a request: the caller's origin (WithOrigin)
// or a param (WithParam), under the param key that hotspot rules name. An
// empty value counts as absent.
type Extractor struct {
	x adapter.Extractor[echoRequest]
}

// Key returns the param key the extractor's value goes under.
func (x Extractor) Key() string { return x.x.Key() }

// ClientIP reads the client's IP address, param key "ip": the address of
// the peer that opened the connection. Behind a proxy, give its addresses
// with WithTrustedProxies to read the client's from X-Forwarded-For;
// echo's IPExtractor (c.RealIP) is not used.
func ClientIP() Extractor { return Extractor{adapter.ClientIP[echoRequest]()} }

// Header reads the request header name, param key "header:<name>" (as
// given, such as "header:X-User").
func Header(name string) Extractor {
	return Extractor{adapter.Header[echoRequest](name, http.CanonicalHeaderKey(name))}
}

// Query reads the query parameter name, param key "query:<name>".
func Query(name string) Extractor { return Extractor{adapter.Query[echoRequest](name)} }

// Param reads the route parameter name (":id" of "/orders/:id", as
// c.Param), param key "path:<name>".
func Param(name string) Extractor { return Extractor{adapter.PathParam[echoRequest](name)} }

// Cookie reads the cookie name, param key "cookie:<name>".
func Cookie(name string) Extractor { return Extractor{adapter.Cookie[echoRequest](name)} }

// Func reads what fn returns, under the caller-chosen param key; "" means
// absent. fn runs before every guarded request, so keep it cheap.
func Func(key string, fn func(c echo.Context) string) Extractor {
	return Extractor{adapter.Func(key, func(req echoRequest) string { return fn(req.c) })}
}

// WithOrigin names each request's origin (the calling app, tenant or
// user), which authority rules allow or deny and flow rules with a
// limitApp count apart.
func WithOrigin(x Extractor) Option { return func(cfg *config) { cfg.extract.SetOrigin(x.x) } }

// WithParam gives each request the extractor's value as a param, which
// hotspot rules with the extractor's key limit per value.
func WithParam(x Extractor) Option { return func(cfg *config) { cfg.extract.AddParam(x.x) } }

// WithTrustedProxies makes ClientIP believe X-Forwarded-For when the
// request comes from one of these networks; without it, the header is
// ignored.
func WithTrustedProxies(proxies ...netip.Prefix) Option {
	return func(cfg *config) { cfg.extract.TrustProxies(proxies) }
}

// echoRequest is what the extractors read of a request.
type echoRequest struct{ c echo.Context }

// Header returns the first line of the header; name is canonical.
func (req echoRequest) Header(name string) string {
	if v := req.c.Request().Header[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// HeaderLine returns line i of the header; name is canonical.
func (req echoRequest) HeaderLine(name string, i int) (string, bool) {
	if v := req.c.Request().Header[name]; i < len(v) {
		return v[i], true
	}
	return "", false
}

// Query returns the first value of the query parameter.
func (req echoRequest) Query(name string) string { return req.c.QueryParam(name) }

// PathParam returns the route parameter.
func (req echoRequest) PathParam(name string) string { return req.c.Param(name) }

// Cookie returns the value of the cookie.
func (req echoRequest) Cookie(name string) string {
	c, err := req.c.Request().Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}

// RemoteIP is the peer's address.
func (req echoRequest) RemoteIP() netip.Addr {
	a, _ := netip.ParseAddr(req.RemoteIPText())
	return a
}

// RemoteIPText is the host of the request's RemoteAddr, the peer's, or
// all of it when it has no port.
func (req echoRequest) RemoteIPText() string {
	addr := req.c.Request().RemoteAddr
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
