package nethttp

import (
	"cmp"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/internal/guard"
)

// Option adjusts the middleware.
type Option func(*config)

type config struct {
	resource func(*http.Request) string
	pattern  func(*http.Request) string
	logger   *slog.Logger
	blocked  func(http.ResponseWriter, *http.Request, *engine.BlockError)
	details  bool
	limits   guard.Limits
	extract  guard.Extractors[httpRequest]
}

// WithResource names the resource of each request; "" lets the request
// through unguarded and uncounted, as the function chose. The default is
// the method and the route's pattern, "GET /orders/{id}" (the pattern's
// own method, if any, replaced by the request's): the pattern of the
// ServeMux the guard wraps, or else r.Pattern, which a ServeMux (and chi)
// sets for the handlers it routes to. A request the wrapped ServeMux has
// no route for (it answers 404 or 405) is not guarded; one whose route
// the guard cannot tell at all is counted under
// middleware.UnroutedResource, and logged once.
func WithResource(name func(r *http.Request) string) Option {
	return func(c *config) { c.resource = name }
}

// WithRoutePattern tells the guard each request's route pattern when it
// runs before the router has routed it, as middleware of a router's
// top-level Use does: fn asks the router, and the resource is the method
// and that pattern, as by default. "" means fn found no route: the request
// is counted under middleware.UnroutedResource, and logged once. For chi's
// r.Use(guard):
//
//	nethttp.WithRoutePattern(func(r *http.Request) string {
//		return router.Find(chi.NewRouteContext(), r.Method, r.URL.Path)
//	})
func WithRoutePattern(fn func(r *http.Request) string) Option {
	return func(c *config) { c.pattern = fn }
}

// WithLogger is where the guard says that it cannot tell a request's
// route. Optional. Default: slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) { c.logger = logger }
}

// WithBlocked answers blocked requests. The guard has set Retry-After
// (from the rule that blocked: see middleware.RetryAfter) and the
// rate-limit headers (WithRateLimitHeaders) on w before it calls answer,
// which may change them. The default answers 429 with the JSON error
// envelope of Sluice's API, whose message is "too many requests" (see
// WithBlockDetails).
func WithBlocked(answer func(w http.ResponseWriter, r *http.Request, blk *engine.BlockError)) Option {
	return func(c *config) { c.blocked = answer }
}

// WithBlockDetails makes the default block answer name the rule that
// blocked ("too many requests: blocked by flow rule orders-qps"), for
// services whose callers may know their rules. Without it, end users
// learn nothing of them.
func WithBlockDetails() Option {
	return func(c *config) { c.details = true }
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
	return func(c *config) { c.limits.Style = style }
}

// Guard returns net/http middleware that asks eng before each request. Wrap
// a whole *http.ServeMux, or the handlers registered on one: either way the
// default resource name is the route's pattern. A ServeMux tells the
// pattern only to the handler it calls, so a guard in front of one matches
// each request's route a second time (a few hundred nanoseconds); guarding
// the handlers saves that. A throttled request waits its turn (up to the
// rule's maxQueueingTimeMs) before the handler runs.
//
// Behind another router, guard its routes, where it has set r.Pattern
// (chi: r.With(guard) or r.Use inside r.Group); as middleware that runs
// before it routes (chi's top-level r.Use), give WithRoutePattern, or the
// requests are counted under middleware.UnroutedResource.
func Guard(eng *engine.Engine, opts ...Option) func(http.Handler) http.Handler {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.blocked == nil {
		cfg.blocked = blockedWriter(cfg.details)
	}
	cfg.limits.Details = cfg.details
	cfg.logger = cmp.Or(cfg.logger, slog.Default())
	return func(next http.Handler) http.Handler {
		g := &httpGuard{eng: eng, next: next, cfg: cfg, routes: guard.NewResourceCache[httpRoute](eng)}
		g.mux, _ = next.(*http.ServeMux)
		return g
	}
}

type httpGuard struct {
	eng    *engine.Engine
	next   http.Handler
	mux    *http.ServeMux // next, when it is one: it tells the pattern before routing
	cfg    config
	routes *guard.ResourceCache[httpRoute]
	// warned is set once the guard logged that it cannot tell a route.
	warned atomic.Bool
}

// httpRoute is a method and a ServeMux pattern.
type httpRoute struct {
	method  string
	pattern string
}

func (g *httpGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, pattern, guarded := g.resource(r)
	if !guarded {
		g.next.ServeHTTP(w, r)
		return
	}
	// Requests come in: system rules guard them.
	var buf [guard.MaxStackOptions]engine.EntryOption
	opts := append(buf[:0], engine.WithInbound())
	opts = g.cfg.extract.Append(opts, res, httpRequest{r: r, mux: g.mux, pattern: pattern})
	e, blk := res.Entry(opts...)
	var headers [guard.MaxHeaders]middleware.Header
	if blk != nil {
		setHeaders(w.Header(), g.cfg.limits.Blocked(headers[:0], res, opts, blk))
		g.cfg.blocked(w, r, blk)
		return
	}
	if g.cfg.limits.On() {
		setHeaders(w.Header(), g.cfg.limits.Passed(headers[:0], res, opts))
	}
	rec := recorders.Get().(*statusRecorder)
	rec.ResponseWriter, rec.status, rec.wrote = w, http.StatusOK, false
	returned := false
	defer func() {
		if !returned {
			e.Exit(engine.WithError(guard.ErrPanicked))
		}
	}()
	g.next.ServeHTTP(rec, r)
	returned = true
	var failed error
	if rec.status >= http.StatusInternalServerError {
		failed = guard.ErrServerError
	}
	rec.ResponseWriter = nil
	recorders.Put(rec)
	e.Exit(engine.WithError(failed))
}

// resource finds the request's resource, and the route's pattern when it
// looked for it; false means unguarded.
func (g *httpGuard) resource(r *http.Request) (res *engine.Resource, pattern string, guarded bool) {
	if g.cfg.resource != nil {
		name := g.cfg.resource(r)
		if name == "" {
			return nil, "", false
		}
		return g.eng.Resource(name), "", true
	}
	switch {
	case g.cfg.pattern != nil:
		pattern = g.cfg.pattern(r)
	case g.mux != nil:
		// A ServeMux the guard wraps routes the request by its own
		// pattern; r.Pattern, if set, is an outer mux's, which mounted
		// this one.
		if _, pattern = g.mux.Handler(r); pattern == "" {
			// No route: the ServeMux answers 404 or 405 itself.
			return nil, "", false
		}
	default:
		pattern = r.Pattern
	}
	if pattern == "" {
		return g.unrouted(r), "", true
	}
	key := httpRoute{method: r.Method, pattern: pattern}
	if !standardMethod(r.Method) {
		// Clients choose the method: naming resources after any method
		// they invent would let them create resources without end.
		return g.eng.Resource(routeName(key)), pattern, true
	}
	return g.routes.Get(key, routeName), pattern, true
}

// unrouted is the resource of a request whose route the guard cannot
// tell; the first such request is logged, with how to fix it.
func (g *httpGuard) unrouted(r *http.Request) *engine.Resource {
	if !g.warned.Swap(true) {
		g.cfg.logger.Warn("sluice: the guard cannot tell the request's route, so requests without one are counted under "+
			middleware.UnroutedResource+"; guard the router's routes (chi: r.With or r.Group), or give nethttp.WithRoutePattern",
			"method", r.Method, "path", r.URL.Path)
	}
	return g.routes.Get(httpRoute{}, func(httpRoute) string { return middleware.UnroutedResource })
}

// routeName is "METHOD /path/{param}": the pattern with the request's
// method in place of the pattern's own.
func routeName(k httpRoute) string {
	pattern := k.pattern
	if method, rest, found := strings.Cut(pattern, " "); found && !strings.Contains(method, "/") {
		pattern = strings.TrimLeft(rest, " \t")
	}
	return k.method + " " + pattern
}

func standardMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

func setHeaders(h http.Header, fields []middleware.Header) {
	for _, f := range fields {
		h.Set(f.Name, f.Value)
	}
}

// blockedWriter is the default block answer; the guard has set
// Retry-After.
func blockedWriter(detailed bool) func(http.ResponseWriter, *http.Request, *engine.BlockError) {
	return func(w http.ResponseWriter, _ *http.Request, blk *engine.BlockError) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write(guard.BlockedBody(blk, detailed))
	}
}

// statusRecorder remembers the status a handler answers. Unwrap lets
// http.ResponseController reach the writer underneath (hijacking, deadlines).
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

var recorders = sync.Pool{New: func() any { return new(statusRecorder) }}

// WriteHeader records the status and sends it.
func (s *statusRecorder) WriteHeader(status int) {
	if !s.wrote && status >= 200 {
		s.status, s.wrote = status, true
	}
	s.ResponseWriter.WriteHeader(status)
}

// Write sends body bytes; the status is 200 unless one was written.
func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client, if the writer underneath can.
func (s *statusRecorder) Flush() {
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap returns the writer underneath, for http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
