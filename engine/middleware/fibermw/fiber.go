package fibermw

import (
	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/internal/guard"
)

// Option adjusts the middleware.
type Option func(*config)

type config struct {
	resource func(*fiber.Ctx) string
	blocked  func(*fiber.Ctx, *engine.BlockError) error
	details  bool
	limits   guard.Limits
	extract  guard.Extractors[fiberRequest]
}

// WithResource names the resource of each request; "" lets the request
// through unguarded and uncounted. The default is the method and the
// route's pattern, "GET /orders/:id".
func WithResource(name func(c *fiber.Ctx) string) Option {
	return func(cfg *config) { cfg.resource = name }
}

// WithBlocked answers blocked requests; an error it returns goes to
// the app's error handler. The guard has set Retry-After (from the rule
// that blocked: see middleware.RetryAfter) and the rate-limit headers
// (WithRateLimitHeaders) on the response before it calls answer, which
// may change them. The default answers 429 with the JSON error envelope
// of Sluice's API, whose message is "too many requests" (see
// WithBlockDetails).
func WithBlocked(answer func(c *fiber.Ctx, blk *engine.BlockError) error) Option {
	return func(cfg *config) { cfg.blocked = answer }
}

// WithBlockDetails makes the default block answer name the rule that
// blocked ("too many requests: blocked by flow rule orders-qps"), for
// services whose callers may know their rules. Without it, end users
// learn nothing of them.
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

// Guard returns a Fiber handler that asks eng before the rest of the route's
// handlers run. Put it first in a route's handlers
// (app.Get("/orders/:id", guard, getOrder)), or protect every route of a
// router with Router.
//
// Fiber picks a request's route only when it reaches the route's own
// handlers: mounted with app.Use, the guard would see the Use's prefix
// instead of the route, so the default name would be "GET /" for every
// path. Use Router for app-wide protection, or WithResource.
//
// An error of the handlers is handed to the app's error handler here, so
// that the status it chooses decides whether the call failed; the guard
// then returns nil, as Fiber's logger middleware does. A throttled request
// waits its turn (up to the rule's maxQueueingTimeMs) before the handlers
// run.
func Guard(eng *engine.Engine, opts ...Option) fiber.Handler {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.blocked == nil {
		cfg.blocked = blockedAnswer(cfg.details)
	}
	cfg.limits.Details = cfg.details
	g := &fiberGuard{eng: eng, cfg: cfg, routes: guard.NewResourceCache[*fiber.Route](eng)}
	return g.handle
}

type fiberGuard struct {
	eng    *engine.Engine
	cfg    config
	routes *guard.ResourceCache[*fiber.Route]
}

func (g *fiberGuard) handle(c *fiber.Ctx) error {
	var res *engine.Resource
	if g.cfg.resource != nil {
		name := g.cfg.resource(c)
		if name == "" {
			return c.Next()
		}
		res = g.eng.Resource(name)
	} else {
		route := c.Route()
		if len(route.Handlers) == 0 {
			// Not reached through a route (Fiber makes one up then):
			// there is no pattern to name.
			return c.Next()
		}
		res = g.routes.Get(route, fiberRouteName)
	}
	// Requests come in: system rules guard them.
	var buf [guard.MaxStackOptions]engine.EntryOption
	opts := append(buf[:0], engine.WithInbound())
	opts = g.cfg.extract.Append(opts, res, fiberRequest{c: c})
	e, blk := res.Entry(opts...)
	var headers [guard.MaxHeaders]middleware.Header
	if blk != nil {
		setHeaders(c, g.cfg.limits.Blocked(headers[:0], res, opts, blk))
		return g.cfg.blocked(c, blk)
	}
	if g.cfg.limits.On() {
		setHeaders(c, g.cfg.limits.Passed(headers[:0], res, opts))
	}
	returned := false
	defer func() {
		if !returned {
			e.Exit(engine.WithError(guard.ErrPanicked))
		}
	}()
	if err := c.Next(); err != nil {
		if err := c.App().ErrorHandler(c, err); err != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	returned = true
	var failed error
	if c.Response().StatusCode() >= fiber.StatusInternalServerError {
		failed = guard.ErrServerError
	}
	e.Exit(engine.WithError(failed))
	return nil
}

func fiberRouteName(r *fiber.Route) string { return r.Method + " " + r.Path }

func setHeaders(c *fiber.Ctx, fields []middleware.Header) {
	for _, f := range fields {
		c.Set(f.Name, f.Value)
	}
}

// blockedAnswer is the default block answer; the guard has set
// Retry-After.
func blockedAnswer(detailed bool) func(*fiber.Ctx, *engine.BlockError) error {
	return func(c *fiber.Ctx, blk *engine.BlockError) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Status(fiber.StatusTooManyRequests).Send(guard.BlockedBody(blk, detailed))
	}
}

// Router returns a router that registers routes on r with guard as
// their first handler, so that the guard sees each route's pattern. Use
// handlers, static files and mounted apps it registers stay unguarded, and
// so do routes registered on r directly.
//
//	api := fibermw.Router(app.Group("/api"), fibermw.Guard(eng))
//	api.Get("/orders/:id", getOrder) // resource "GET /api/orders/:id"
func Router(r fiber.Router, guard fiber.Handler) fiber.Router {
	return &guardedRouter{Router: r, guard: guard}
}

type guardedRouter struct {
	fiber.Router
	guard fiber.Handler
}

func (g *guardedRouter) with(handlers []fiber.Handler) []fiber.Handler {
	return append([]fiber.Handler{g.guard}, handlers...)
}

// Use registers middleware, unguarded.
func (g *guardedRouter) Use(args ...any) fiber.Router {
	g.Router.Use(args...)
	return g
}

// Get registers a guarded GET (and HEAD) route.
func (g *guardedRouter) Get(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Get(path, g.with(handlers)...)
	return g
}

// Head registers a guarded HEAD route.
func (g *guardedRouter) Head(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Head(path, g.with(handlers)...)
	return g
}

// Post registers a guarded POST route.
func (g *guardedRouter) Post(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Post(path, g.with(handlers)...)
	return g
}

// Put registers a guarded PUT route.
func (g *guardedRouter) Put(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Put(path, g.with(handlers)...)
	return g
}

// Delete registers a guarded DELETE route.
func (g *guardedRouter) Delete(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Delete(path, g.with(handlers)...)
	return g
}

// Connect registers a guarded CONNECT route.
func (g *guardedRouter) Connect(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Connect(path, g.with(handlers)...)
	return g
}

// Options registers a guarded OPTIONS route.
func (g *guardedRouter) Options(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Options(path, g.with(handlers)...)
	return g
}

// Trace registers a guarded TRACE route.
func (g *guardedRouter) Trace(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Trace(path, g.with(handlers)...)
	return g
}

// Patch registers a guarded PATCH route.
func (g *guardedRouter) Patch(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Patch(path, g.with(handlers)...)
	return g
}

// Add registers a guarded route for method.
func (g *guardedRouter) Add(method, path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.Add(method, path, g.with(handlers)...)
	return g
}

// All registers a guarded route for every method.
func (g *guardedRouter) All(path string, handlers ...fiber.Handler) fiber.Router {
	g.Router.All(path, g.with(handlers)...)
	return g
}

// Static serves files, unguarded.
func (g *guardedRouter) Static(prefix, root string, config ...fiber.Static) fiber.Router {
	g.Router.Static(prefix, root, config...)
	return g
}

// Group returns a guarded sub-router; handlers run as its Use middleware.
func (g *guardedRouter) Group(prefix string, handlers ...fiber.Handler) fiber.Router {
	return &guardedRouter{Router: g.Router.Group(prefix, handlers...), guard: g.guard}
}

// Route calls fn with a guarded sub-router for prefix.
func (g *guardedRouter) Route(prefix string, fn func(router fiber.Router), name ...string) fiber.Router {
	return &guardedRouter{
		Router: g.Router.Route(prefix, func(r fiber.Router) {
			fn(&guardedRouter{Router: r, guard: g.guard})
		}, name...),
		guard: g.guard,
	}
}

// Mount mounts a sub-app, unguarded.
func (g *guardedRouter) Mount(prefix string, app *fiber.App) fiber.Router {
	g.Router.Mount(prefix, app)
	return g
}

// Name names the last route registered.
func (g *guardedRouter) Name(name string) fiber.Router {
	g.Router.Name(name)
	return g
}
