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

// outsideAPIPolicy is docs/api.md's authorisation of the routes outside
// /api/v1, as routePolicy is of those inside: the least role each needs,
// "" for the public ones. /metrics takes a bearer token unless the server
// runs with --public-metrics, which the walk's does not; an instance token
// is not one it takes (docs/api.md, "Instances": nothing but its own routes).
var outsideAPIPolicy = map[string]string{
	"GET /metrics":          roleViewer,
	"GET /swagger/doc.json": "",
	"GET /swagger/*":        "",
}

// ownAccountRoutes are about the caller's own login, which a token has
// none of whatever its role: the walk asks them of the roles that log in
// with a session of that role.
var ownAccountRoutes = map[string]bool{"POST /api/v1/auth/logout": true, "PATCH /api/v1/me/password": true}

// walker is one caller of the role walk: a role, scoped to the app shop
// or not.
type walker struct {
	role   string
	scoped bool
}

func (w walker) String() string {
	if w.scoped {
		return w.role + " scoped to shop"
	}
	return w.role
}

// walkers are the callers the role walk asks every route as.
var walkers = []walker{
	{roleInstance, false}, {roleInstance, true}, {roleViewer, false},
	{roleEditor, false}, {roleEditor, true}, {roleAdmin, false},
}

// scopeProbe is, for a route a scope limits (docs/api.md, "Per-app scopes"), a
// request that reaches outside the app shop, which a caller scoped to shop
// is refused (403) where its role alone would let it through; within, if
// set, is the request within shop that such a caller sends in place of the
// walk's own, which names no app; only, if set, is the one role the scope
// limits there (reads are the role's: only an instance's scope limits
// them). In targets, {other} is the id of the rule walk-other, of the app
// other.
type scopeProbe struct {
	outside, outsideBody, within, only string
}

// scopeProbes are the probes of every route a scope limits; a scoped
// caller is asked every other route as its role is.
var scopeProbes = map[string]scopeProbe{
	"POST /api/v1/rules":              {"/api/v1/rules", `{"kind":"flow","app":"other","resource":"x","threshold":1}`, "", ""},
	"PUT /api/v1/rules/:id":           {"/api/v1/rules/{other}", `{"kind":"flow","app":"shop","resource":"x","threshold":1}`, "", ""},
	"PATCH /api/v1/rules/:id":         {"/api/v1/rules/{other}", `{"threshold":5}`, "", ""},
	"DELETE /api/v1/rules/:id":        {"/api/v1/rules/{other}", "", "", ""},
	"POST /api/v1/rules/:id/rollback": {"/api/v1/rules/{other}/rollback?toVersion=1", "", "", ""},
	"POST /api/v1/rules/apply":        {"/api/v1/rules/apply?prune=true", `{"rules":[{"kind":"flow","name":"o","app":"other","resource":"x","threshold":1}]}`, "", ""},
	"POST /api/v1/rules/import":       {"/api/v1/rules/import?format=sentinel", `[{"resource":"x","threshold":1}]`, "", ""},
	"GET /api/v1/rules/snapshot":      {"/api/v1/rules/snapshot?app=other", "", "/api/v1/rules/snapshot?app=shop", roleInstance},
	"POST /api/v1/instances/report":   {"/api/v1/instances/report", `{"instance":{"id":"walk","app":"other"}}`, "", ""},
}

// TestEveryRouteAnswersEachRoleItsOwn walks every registered route, HEAD
// included and those outside /api/v1 too, as an instance, a viewer, an
// editor and an admin, and as an instance and an editor scoped to the app
// shop: a route answers 403 exactly to the roles docs/api.md denies it (an
// instance token is denied everything but instanceRoutes), never 401 or
// 403 to the others, and a public route answers a credential as it
// answers none. A scoped caller is answered as its role, and on the routes
// a scope limits 403 too when it reaches outside its apps (scopeProbes),
// nothing written. A route without a policy fails it.
func TestEveryRouteAnswersEachRoleItsOwn(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	tokens := map[walker]string{{roleAdmin, false}: servertest.AdminToken}
	for _, w := range walkers {
		if w.role == roleAdmin {
			continue
		}
		if w.scoped {
			tokens[w], _ = n.newScopedToken(t, "role-walk-scoped-"+w.role, w.role, "shop")
		} else {
			tokens[w], _ = n.newToken(t, "role-walk-"+w.role, w.role, "")
		}
	}
	var other struct{ ID int64 }
	if status := n.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"walk-other","app":"other","resource":"x","threshold":1}`, &other); status != http.StatusCreated ||
		n.send(t, http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", other.ID), `{"threshold":2}`, nil) != http.StatusOK {
		t.Fatal("create the rule walk-other")
	}
	otherID := strconv.FormatInt(other.ID, 10)
	export := func() string {
		_, data := n.as(t, bearer(servertest.AdminToken), http.MethodGet, "/api/v1/rules/export", "")
		return string(data)
	}
	probed := map[string]bool{}

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
			t.Errorf("%s: no policy: add the rule docs/api.md gives it", key)
			continue
		}
		path := strings.Replace(routeParam.ReplaceAllString(route.Path, "999999"), "*", "index.html", 1)
		t.Run(key, func(t *testing.T) {
			anonymous := rawRequest(t, n.Addr, route.Method, path, nil, "{}")
			for _, w := range walkers {
				h := bearer(tokens[w])
				if ownAccountRoutes[policyKey] && w.role != roleInstance {
					name := n.walkUser(t, w)
					cookie, csrf := n.login(t, name, walkPassword)
					h = withCookie(cookie, csrf)
				}
				allowed := roleRank[w.role] >= roleRank[need]
				if w.role == roleInstance {
					allowed = instanceRoutes[policyKey]
				}
				target := path
				probe, limited := scopeProbes[policyKey]
				limited = limited && (probe.only == "" || probe.only == w.role)
				if w.scoped && limited && probe.within != "" {
					target = probe.within
				}
				status := rawRequest(t, n.Addr, route.Method, target, h, "{}")
				switch {
				case need == "":
					if status != anonymous {
						t.Errorf("as %s: %d, want %d as without credentials: the route is public", w, status, anonymous)
					}
				case !allowed:
					if status != http.StatusForbidden {
						t.Errorf("as %s: %d, want 403: the route needs %s", w, status, need)
					}
				case status == http.StatusForbidden || status == http.StatusUnauthorized:
					t.Errorf("as %s: %d, want past authorisation: the route needs %s", w, status, need)
				}
				if !w.scoped || !limited || !allowed || route.Method == http.MethodHead {
					continue
				}
				probed[policyKey] = true
				before := export()
				outside := strings.Replace(probe.outside, "{other}", otherID, 1)
				if status := rawRequest(t, n.Addr, route.Method, outside, h, probe.outsideBody); status != http.StatusForbidden {
					t.Errorf("as %s, outside its apps (%s): %d, want 403", w, outside, status)
				}
				if export() != before {
					t.Errorf("as %s, outside its apps (%s): the rules changed", w, outside)
				}
			}
		})
	}
	for key := range outsideAPIPolicy {
		if !seen[key] {
			t.Errorf("%s is in outsideAPIPolicy but not registered", key)
		}
	}
	for key := range scopeProbes {
		if !probed[key] {
			t.Errorf("%s is in scopeProbes but no scoped caller was asked it", key)
		}
	}
}

// walkUser creates a user of w's role and scope, who logs in with
// walkPassword, and returns the username.
func (n *authNode) walkUser(t *testing.T, w walker) string {
	t.Helper()
	if !w.scoped {
		_, name := n.newUser(t, w.role)
		return name
	}
	name := fmt.Sprintf("walk-scoped-%s-%d", w.role, time.Now().UnixNano())
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/users",
		fmt.Sprintf(`{"username":%q,"role":%q,"password":%q,"apps":["shop"]}`, name, w.role, walkPassword))
	if status != http.StatusCreated {
		t.Fatalf("create a scoped user: %d %s", status, data)
	}
	return name
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

// newScopedToken makes an API token of role scoped to apps and returns its
// secret and id.
func (n *authNode) newScopedToken(t *testing.T, name, role string, apps ...string) (string, int64) {
	t.Helper()
	list, _ := json.Marshal(apps)
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/tokens", fmt.Sprintf(`{"name":%q,"role":%q,"apps":%s}`, name, role, list))
	var created NewAPIToken
	if status != http.StatusCreated || json.Unmarshal(data, &created) != nil {
		t.Fatalf("create a scoped token: %d %s", status, data)
	}
	return created.Token, created.ID
}
