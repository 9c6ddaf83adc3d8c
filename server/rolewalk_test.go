package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

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

// scoped prefixes a role to name a caller of that role scoped to the one
// app walkApp (API.md, "Per-app scopes").
const scoped = "scoped "

// walkApp is the app the walk's scoped callers hold.
const walkApp = "walk"

// scopeDenies are the routes a scoped caller is refused (403) as the walk
// asks them, where its role alone is not: the walk's snapshot names no
// app, and an instance token's scope holds its reads of the snapshot to
// its apps.
var scopeDenies = map[string]bool{
	scoped + roleInstance + " GET /api/v1/rules/snapshot": true,
}

// newScopedToken makes an API token of role scoped to walkApp and returns
// its secret.
func (n *authNode) newScopedToken(t *testing.T, name, role string) string {
	t.Helper()
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/tokens",
		fmt.Sprintf(`{"name":%q,"role":%q,"apps":[%q]}`, name, role, walkApp))
	if status != http.StatusCreated {
		t.Fatalf("create scoped token: %d %s", status, data)
	}
	var created NewAPIToken
	if err := json.Unmarshal(data, &created); err != nil {
		t.Fatal(err)
	}
	return created.Token
}

// ownAccountRoutes are about the caller's own login, which a token has
// none of whatever its role: the walk asks them of the roles that log in
// with a session of that role.
var ownAccountRoutes = map[string]bool{"POST /api/v1/auth/logout": true, "PATCH /api/v1/me/password": true}

// TestEveryRouteAnswersEachRoleItsOwn walks every registered route, HEAD
// included and those outside /api/v1 too, as an instance, a viewer, an
// editor and an admin, and as an instance, a viewer and an editor scoped
// to one app: a route answers 403 exactly to the roles API.md denies it
// (an instance token is denied everything but instanceRoutes), never 401
// or 403 to the others, and a public route answers a credential as it
// answers none. A scope takes nothing from a role but what scopeDenies
// names (its writes of other apps' rules are TestScopeHoldsEveryRuleWrite's
// walk). A route without a policy fails it.
func TestEveryRouteAnswersEachRoleItsOwn(t *testing.T) {
	n := startAuthNode(t)
	tokens := map[string]string{roleAdmin: servertest.AdminToken}
	for _, role := range []string{roleInstance, roleViewer, roleEditor} {
		tokens[role], _ = n.newToken(t, "role-walk-"+role, role, "")
		tokens[scoped+role] = n.newScopedToken(t, "role-walk-scoped-"+role, role)
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
			anonymous := rawRequest(t, n.Addr, route.Method, path, nil, "{}")
			for _, caller := range []string{roleInstance, roleViewer, roleEditor, roleAdmin, scoped + roleInstance, scoped + roleViewer, scoped + roleEditor} {
				role := strings.TrimPrefix(caller, scoped)
				h := bearer(tokens[caller])
				if ownAccountRoutes[policyKey] && role != roleInstance {
					_, name := n.newUser(t, role)
					cookie, csrf := n.login(t, name, walkPassword)
					h = withCookie(cookie, csrf)
				}
				allowed := roleRank[role] >= roleRank[need]
				if role == roleInstance {
					allowed = instanceRoutes[policyKey]
				}
				if role != caller && scopeDenies[caller+" "+policyKey] {
					allowed = false
				}
				status := rawRequest(t, n.Addr, route.Method, path, h, "{}")
				switch {
				case need == "":
					if status != anonymous {
						t.Errorf("as %s: %d, want %d as without credentials: the route is public", caller, status, anonymous)
					}
				case !allowed:
					if status != http.StatusForbidden {
						t.Errorf("as %s: %d, want 403: the route needs %s, or the caller's scope is denied it", caller, status, need)
					}
				case status == http.StatusForbidden || status == http.StatusUnauthorized:
					t.Errorf("as %s: %d, want past authorisation: the route needs %s", caller, status, need)
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

// rawRequest sends method and target exactly as written, with header and
// body, on a connection of its own and answers the status of the answer's
// first line, reading nothing more: an event stream does not hold it, and
// what one answer leaves on a connection cannot decide the next one's.
func rawRequest(t *testing.T, addr, method, target string, header http.Header, body string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: sluice.test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, target, len(body))
	for k, vs := range header {
		for _, v := range vs {
			req += k + ": " + v + "\r\n"
		}
	}
	if _, err := conn.Write([]byte(req + "\r\n" + body)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, target, err)
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if err != nil || !strings.HasPrefix(proto, "HTTP/1.") {
		t.Fatalf("%s %s: status line %q", method, target, line)
	}
	return status
}
