package server

import (
	"fmt"
	"net/http"
	"strings"

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

// instancesOr is the access of the routes instances use (reading the
// rule snapshot, posting reports): a token of role instance may, and any
// other principal needs what need asks. No other route names the role, so
// an instance token can do nothing else: a fleet's baked-in token can
// never change a rule.
func instancesOr(need access) access {
	return func(c *fiber.Ctx) string {
		if p := principalOf(c); p != nil && p.role == roleInstance {
			return roleInstance
		}
		return need(c)
	}
}

// editorsOrPlans is the access of apply and import: writing needs an
// editor, but a dry run only answers the plan and changes nothing, so a
// viewer may ask for it (a pull request's pipeline needs no secret that
// can change production). It reads dryRun as the handlers do; a bad value
// needs only a viewer too, so that every role gets the handler's 400
// naming dryRun rather than a 403 that hides it.
func editorsOrPlans(c *fiber.Ctx) string {
	if dryRun, err := boolParam(c, "dryRun"); err != nil || dryRun != nil && *dryRun {
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
	// first, when set, runs before each route's access check: the check
	// API's routes, bound ahead of the middlewares, do their work in it
	// (Server.serveTraffic).
	first fiber.Handler
	guard fiber.Handler // nil: not guarded by the engine
	// fixed, when set, collects the methods of each path without
	// parameters (fixedPaths).
	fixed fixedPaths
	// ruleFiles collects the routes postRuleFile binds.
	ruleFiles ruleFileRoutes
}

// fixedPaths are the methods of each /api/v1 path without parameters, so
// that such a path asked with another method is 405 with its own Allow,
// not a parameter of the route beside it: GET /rules/apply is not the
// rule "apply", and POST /rules/export is not allowed what /rules/{id} is.
type fixedPaths map[string][]string

// allow answers the methods of path, a request's whole path, if it is a
// fixed one.
func (f fixedPaths) allow(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, apiPrefix)
	if !ok {
		return "", false
	}
	methods, ok := f[rel]
	return strings.Join(methods, ", "), ok
}

// notFixed is the first handler of a route with parameters: a fixed path
// it matched is 405.
func (f fixedPaths) notFixed(c *fiber.Ctx) error {
	if allow, ok := f.allow(c.Path()); ok {
		c.Set(fiber.HeaderAllow, allow)
		return fiber.ErrMethodNotAllowed
	}
	return c.Next()
}

func (r apiRoutes) add(method, path string, need access, handlers ...fiber.Handler) {
	check := func(c *fiber.Ctx) error {
		p := principalOf(c)
		if p == nil {
			// The auth middleware lets only the public routes through
			// without a principal, and they are not bound here.
			c.Set(fiber.HeaderWWWAuthenticate, bearerChallenge)
			return NewError(http.StatusUnauthorized, "credentials are required: a bearer token or a console session")
		}
		if want := need(c); roleRank[p.role] < roleRank[want] {
			return NewError(http.StatusForbidden, fmt.Sprintf("this needs the %s role; yours is %s", want, p.role))
		}
		return c.Next()
	}
	chain := []fiber.Handler{check}
	switch {
	case r.fixed == nil:
	case strings.Contains(path, ":"):
		chain = []fiber.Handler{r.fixed.notFixed, check}
	default:
		r.fixed[path] = append(r.fixed[path], method)
	}
	if r.first != nil {
		chain = append([]fiber.Handler{r.first}, chain...)
	}
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

// postRuleFile binds a POST route that takes a rule file: its body, up to
// maxRuleFileBytes, is read only once the access check has let the caller
// through.
func (r apiRoutes) postRuleFile(path string, need access, h fiber.Handler) {
	r.ruleFiles[http.MethodPost+" "+apiPrefix+path] = true
	r.add(http.MethodPost, path, need, readBody(maxRuleFileBytes), h)
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
