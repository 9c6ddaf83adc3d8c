package server

import (
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"
)

// access tells the least role a request to a route needs. It is given when
// the route is bound and checked first among the route's handlers, so the
// decision is made on the route Fiber matched, never on how the path was
// spelled: a spelling that matches no route reaches no handler at all.
type access func(c *fiber.Ctx) string

// role is the access of a route that always needs r.
func role(r string) access { return func(*fiber.Ctx) string { return r } }

var (
	viewers = role(roleViewer)
	editors = role(roleEditor)
	admins  = role(roleAdmin)
)

// editorsOrPlans is the access of apply and import: writing needs an
// editor, but a dry run only answers the plan and changes nothing, so a
// viewer may ask for it (a pull request's pipeline needs no secret that
// can change production). It reads dryRun as the handlers do; a bad value
// needs an editor, who then gets the handler's 400.
func editorsOrPlans(c *fiber.Ctx) string {
	if dryRun, err := boolParam(c, "dryRun"); err == nil && dryRun != nil && *dryRun {
		return roleViewer
	}
	return roleEditor
}

// apiRoutes registers the authenticated /api/v1 routes: each with its
// access check first, then the engine's guard (unless the API runs
// unguarded), then its handler. The role check comes before the guard, so
// that a request that is refused 403 never takes a rule's quota.
type apiRoutes struct {
	router fiber.Router
	guard  fiber.Handler // nil: not guarded by the engine
}

func (r apiRoutes) add(method, path string, need access, handlers ...fiber.Handler) {
	check := func(c *fiber.Ctx) error {
		p := principalOf(c)
		if p == nil {
			// The auth middleware lets only the public routes through
			// without a principal, and they are not bound here.
			return NewError(http.StatusUnauthorized, "credentials are required: a bearer token or a console session")
		}
		if want := need(c); roleRank[p.role] < roleRank[want] {
			return NewError(http.StatusForbidden, fmt.Sprintf("this needs the %s role; yours is %s", want, p.role))
		}
		return c.Next()
	}
	chain := []fiber.Handler{check}
	if r.guard != nil {
		chain = append(chain, r.guard)
	}
	r.router.Add(method, path, append(chain, handlers...)...)
}

func (r apiRoutes) get(path string, need access, h ...fiber.Handler) {
	r.add(http.MethodGet, path, need, h...)
	r.add(http.MethodHead, path, need, h...)
}

func (r apiRoutes) post(path string, need access, h ...fiber.Handler) {
	r.add(http.MethodPost, path, need, h...)
}

func (r apiRoutes) put(path string, need access, h ...fiber.Handler) {
	r.add(http.MethodPut, path, need, h...)
}

func (r apiRoutes) patch(path string, need access, h ...fiber.Handler) {
	r.add(http.MethodPatch, path, need, h...)
}

func (r apiRoutes) delete(path string, need access, h ...fiber.Handler) {
	r.add(http.MethodDelete, path, need, h...)
}
