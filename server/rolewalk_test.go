package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/servertest"
)

// outsideAPIPolicy is API.md's authorisation of the routes outside
// /api/v1, as routePolicy is of those inside: the least role each needs,
// "" for the public ones. /metrics takes a bearer token unless the server
// runs with --public-metrics, which the walk's does not; an instance token
// is not one it takes (API.md, "Instances": nothing but its own routes).
var outsideAPIPolicy = map[string]string{
	"GET /metrics":          roleViewer,
	"GET /swagger/doc.json": "",
	"GET /swagger/*":        "",
}

// ownAccountRoutes are about the caller's own login, which a token has
// none of whatever its role: the walk asks them of the roles that log in
// with a session of that role.
var ownAccountRoutes = map[string]bool{"POST /api/v1/auth/logout": true, "PATCH /api/v1/me/password": true}

// TestEveryRouteAnswersEachRoleItsOwn walks every registered route, HEAD
// included and those outside /api/v1 too, as an instance, a viewer, an
// editor and an admin: a route answers 403 exactly to the roles API.md
// denies it (an instance token is denied everything but instanceRoutes),
// never 401 or 403 to the others, and a public route answers a credential
// as it answers none. A route without a policy fails it.
func TestEveryRouteAnswersEachRoleItsOwn(t *testing.T) {
	n := startAuthNode(t)
	tokens := map[string]string{roleAdmin: servertest.AdminToken}
	for _, role := range []string{roleInstance, roleViewer, roleEditor} {
		tokens[role], _ = n.newToken(t, "role-walk-"+role, role, "")
	}

	seen := map[string]bool{}
	for _, route := range n.app.GetRoutes(true) {
		key := route.Method + " " + route.Path
		if seen[key] {
			continue
		}
		seen[key] = true
		// HEAD is bound with GET and answers as it does.
		policyKey := strings.Replace(key, http.MethodHead+" ", http.MethodGet+" ", 1)
		policy := routePolicy
		if !strings.HasPrefix(route.Path, apiPrefix) {
			policy = outsideAPIPolicy
		}
		need, known := policy[policyKey]
		if !known {
			t.Errorf("%s: no policy: add the rule API.md gives it", key)
			continue
		}
		path := strings.Replace(routeParam.ReplaceAllString(route.Path, "999999"), "*", "index.html", 1)
		t.Run(key, func(t *testing.T) {
			anonymous, _ := n.as(t, nil, route.Method, path, "{}")
			for _, role := range []string{roleInstance, roleViewer, roleEditor, roleAdmin} {
				h := bearer(tokens[role])
				if ownAccountRoutes[policyKey] && role != roleInstance {
					_, name := n.newUser(t, role)
					cookie, csrf := n.login(t, name, walkPassword)
					h = withCookie(cookie, csrf)
				}
				allowed := roleRank[role] >= roleRank[need]
				if role == roleInstance {
					allowed = instanceRoutes[policyKey]
				}
				status, body := n.as(t, h, route.Method, path, "{}")
				switch {
				case need == "":
					if status != anonymous {
						t.Errorf("as %s: %d %s, want %d as without credentials: the route is public", role, status, body, anonymous)
					}
				case !allowed:
					if status != http.StatusForbidden {
						t.Errorf("as %s: %d %s, want 403: the route needs %s", role, status, body, need)
					}
				case status == http.StatusForbidden || status == http.StatusUnauthorized:
					t.Errorf("as %s: %d %s, want past authorisation: the route needs %s", role, status, body, need)
				}
			}
		})
	}
	for key := range outsideAPIPolicy {
		if !seen[key] {
			t.Errorf("%s is in outsideAPIPolicy but not registered", key)
		}
	}
}
