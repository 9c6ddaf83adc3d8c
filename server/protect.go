package server

import (
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
)

// identityParam is the param key of the caller's identity in the guard
// of the API's own routes: a user's name, or "token:<name>" for an API
// token, as revisions name them.
const identityParam = "identity"

// callerIdentity reads the identity of the request's principal; "" (no
// param) on a route without one, which the guard does not see.
var callerIdentity = fibermw.Func(identityParam, func(c *fiber.Ctx) string {
	if p := principalOf(c); p != nil {
		return p.actorName()
	}
	return ""
})

// guard returns the engine's guard for the API's routes, as any service
// that uses Sluice's Fiber middleware has: each route is a resource named
// by its method and pattern ("GET /api/v1/rules/:id"), so a new server
// shows its own traffic from the first request, and rules can cap its API.
// It is nil with Config.UnguardedAPI.
//
// The guard runs after authentication and the route's role check (see
// apiRoutes), so a request refused 401 or 403 takes no quota, and every
// request it sees has a principal. It names each request's params "ip",
// the address of the peer (X-Forwarded-For is not read: the server trusts
// no proxy), and "identity", the caller; the caller is the origin too.
// So hotspot rules on an API route limit each client or each caller apart
// (paramKey "ip" or "identity"), and authority rules allow or deny
// callers by name ("token:ci", "alice"). Health and /auth/* are never
// guarded (routes binds them outside apiRoutes).
func (s *Server) guard() fiber.Handler {
	if s.unguardedAPI {
		return nil
	}
	return fibermw.Guard(s.engine,
		fibermw.WithBlocked(apiBlocked),
		fibermw.WithOrigin(callerIdentity),
		fibermw.WithParam(fibermw.ClientIP()),
		fibermw.WithParam(callerIdentity),
	)
}

// apiBlocked answers a blocked API request 429, in the error envelope,
// with the Retry-After the guard computed from the rule; except an
// admin's, which is served all the same (the block is counted), without
// it: a rule on the API's own routes must never lock out the people who
// can remove it.
func apiBlocked(c *fiber.Ctx, blk *engine.BlockError) error {
	if p := principalOf(c); p != nil && p.role == roleAdmin {
		c.Response().Header.Del(fiber.HeaderRetryAfter)
		return c.Next()
	}
	return NewError(http.StatusTooManyRequests, middleware.BlockedMessage(blk))
}
