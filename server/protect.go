package server

import (
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
)

// guard returns the engine's guard for the API's routes, as any service
// that uses Sluice's Fiber middleware has: each route is a resource named
// by its method and pattern ("GET /api/v1/rules/:id"), so a new server
// shows its own traffic from the first request, and rules can cap its API.
// It is nil with Config.UnguardedAPI.
func (s *Server) guard() fiber.Handler {
	if s.unguardedAPI {
		return nil
	}
	return fibermw.Guard(s.engine, fibermw.WithBlocked(apiBlocked))
}

// apiBlocked answers a blocked API request 429, in the error envelope;
// except an admin's, which is served all the same (the block is counted):
// a rule on the API's own routes must never lock out the people who can
// remove it.
func apiBlocked(c *fiber.Ctx, blk *engine.BlockError) error {
	if p := principalOf(c); p != nil && p.role == roleAdmin {
		return c.Next()
	}
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(middleware.RetryAfterSeconds))
	return NewError(http.StatusTooManyRequests, middleware.BlockedMessage(blk))
}
