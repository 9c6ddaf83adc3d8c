package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/servertest"
)

// routePolicy is docs/api.md's authorisation, route by route: the least role
// each needs, "" for the public ones. It is written out here, not read from
// the server, so that the test checks the server against the contract; a
// route missing from it fails the walks below.
var routePolicy = map[string]string{
	"GET /api/v1/health":                  "",
	"POST /api/v1/auth/login":             "",
	"POST /api/v1/auth/logout":            roleViewer,
	"GET /api/v1/me":                      roleViewer,
	"PATCH /api/v1/me/password":           roleViewer,
	"GET /api/v1/users":                   roleAdmin,
	"POST /api/v1/users":                  roleAdmin,
	"GET /api/v1/users/:id":               roleAdmin,
	"PATCH /api/v1/users/:id":             roleAdmin,
	"DELETE /api/v1/users/:id":            roleAdmin,
	"GET /api/v1/tokens":                  roleAdmin,
	"POST /api/v1/tokens":                 roleAdmin,
	"DELETE /api/v1/tokens/:id":           roleAdmin,
	"POST /api/v1/check":                  roleEditor,
	"POST /api/v1/check/batch":            roleEditor,
	"POST /api/v1/complete":               roleEditor,
	"GET /api/v1/rules":                   roleViewer,
	"POST /api/v1/rules":                  roleEditor,
	"GET /api/v1/rules/export":            roleViewer,
	"GET /api/v1/rules/fields":            roleViewer,
	"POST /api/v1/rules/apply":            roleEditor,
	"POST /api/v1/rules/impact":           roleViewer,
	"POST /api/v1/rules/import":           roleEditor,
	"GET /api/v1/rules/:id":               roleViewer,
	"PUT /api/v1/rules/:id":               roleEditor,
	"PATCH /api/v1/rules/:id":             roleEditor,
	"DELETE /api/v1/rules/:id":            roleEditor,
	"GET /api/v1/rules/:id/revisions":     roleViewer,
	"POST /api/v1/rules/:id/rollback":     roleEditor,
	"GET /api/v1/breakers":                roleViewer,
	"GET /api/v1/breakers/transitions":    roleViewer,
	"GET /api/v1/resources":               roleViewer,
	"GET /api/v1/resources/:name/metrics": roleViewer,
	"GET /api/v1/metrics/top":             roleViewer,
	"GET /api/v1/metrics/history-steps":   roleViewer,
	"GET /api/v1/metrics/stream":          roleViewer,
	"GET /api/v1/rules/snapshot":          roleViewer,
	"POST /api/v1/instances/report":       roleEditor,
	"GET /api/v1/instances":               roleViewer,

	// A resource's hotspot rules' hottest values (the console's resource page).
	"GET /api/v1/resources/:name/hot-values": roleViewer,

	// Scale-out: the cluster rules' state, and the instances' leasing
	// (admins besides instances, to look into it).
	"GET /api/v1/cluster":           roleViewer,
	"POST /api/v1/cluster/exchange": roleAdmin,

	// Event webhooks: their URLs and secrets are an admin's.
	"GET /api/v1/webhooks":                    roleAdmin,
	"POST /api/v1/webhooks":                   roleAdmin,
	"GET /api/v1/webhooks/:id":                roleAdmin,
	"PATCH /api/v1/webhooks/:id":              roleAdmin,
	"DELETE /api/v1/webhooks/:id":             roleAdmin,
	"POST /api/v1/webhooks/:id/test":          roleAdmin,
	"POST /api/v1/webhooks/:id/resume":        roleAdmin,
	"POST /api/v1/webhooks/:id/rotate-secret": roleAdmin,
	"GET /api/v1/webhooks/:id/deliveries":     roleAdmin,
}

// instanceRoutes are the routes a token of role instance may use besides
// the roles routePolicy gives (docs/api.md, "Instances"): every other answers
// it 403.
var instanceRoutes = map[string]bool{
	"GET /api/v1/rules/snapshot":    true,
	"POST /api/v1/instances/report": true,
	"POST /api/v1/cluster/exchange": true,
}

// walkPassword is the password of the users the walk logs in as.
const walkPassword = "walk-password-0123"

// walkRequest is a request that the route's own role would see succeed:
// the walk sends it under every other spelling of its path, and as every
// role, and fails on any 2xx the route's rule does not allow.
type walkRequest struct {
	path, query, body string
	// session sends it as a fresh console session of a new user of the
	// route's role instead of a token: the routes about one's own
	// account answer a token 4xx whatever its role.
	session bool
}

// walkFixtures make, for each route, a request that succeeds: each makes
// its own rule, user or token, so that no route's success spoils another's.
func walkFixtures(t *testing.T, n *authNode) map[string]func() walkRequest {
	t.Helper()
	newRule := func() int64 {
		resp, body := n.Do(t, http.MethodPost, "/api/v1/rules", strings.NewReader(`{"kind":"flow","resource":"walk","threshold":1000}`))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create a rule: %d %s", resp.StatusCode, body)
		}
		var r rules.APIRule
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	newUser := func() int64 {
		id, _ := n.newUser(t, roleViewer)
		return id
	}
	newToken := func() int64 {
		_, id := n.newToken(t, fmt.Sprintf("walk-%d", time.Now().UnixNano()), roleViewer, "")
		return id
	}
	// The walk's endpoints are disabled: the test events it queues are
	// never posted to the documentation address they name.
	const walkWebhook = `{"url":"https://203.0.113.10/hook","events":["*"],"enabled":false}`
	newWebhook := func() int64 {
		resp, body := n.Do(t, http.MethodPost, "/api/v1/webhooks", strings.NewReader(walkWebhook))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create a webhook: %d %s", resp.StatusCode, body)
		}
		var w Webhook
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatal(err)
		}
		return w.ID
	}
	webhookRoute := func(suffix, body string) func() walkRequest {
		return func() walkRequest {
			return walkRequest{path: fmt.Sprintf("/api/v1/webhooks/%d%s", newWebhook(), suffix), body: body}
		}
	}
	fixed := func(path, query, body string) func() walkRequest {
		return func() walkRequest { return walkRequest{path: path, query: query, body: body} }
	}
	ruleRoute := func(suffix, query, body string) func() walkRequest {
		return func() walkRequest {
			return walkRequest{path: fmt.Sprintf("/api/v1/rules/%d%s", newRule(), suffix), query: query, body: body}
		}
	}
	// The resource the check fixtures touch is known from here on.
	if resp, body := n.Do(t, http.MethodPost, "/api/v1/check", strings.NewReader(`{"resource":"walk"}`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("check: %d %s", resp.StatusCode, body)
	}
	return map[string]func() walkRequest{
		"GET /api/v1/health":      fixed("/api/v1/health", "", ""),
		"POST /api/v1/auth/login": fixed("/api/v1/auth/login", "", fmt.Sprintf(`{"username":"admin","password":%q}`, adminPassword)),
		"POST /api/v1/auth/logout": func() walkRequest {
			return walkRequest{path: "/api/v1/auth/logout", session: true}
		},
		"GET /api/v1/me": fixed("/api/v1/me", "", ""),
		"PATCH /api/v1/me/password": func() walkRequest {
			return walkRequest{path: "/api/v1/me/password", session: true,
				body: fmt.Sprintf(`{"currentPassword":%q,"newPassword":%q}`, walkPassword, walkPassword+"-new")}
		},
		"GET /api/v1/users": fixed("/api/v1/users", "", ""),
		"POST /api/v1/users": func() walkRequest {
			return walkRequest{path: "/api/v1/users",
				body: fmt.Sprintf(`{"username":"walk-made-%d","role":"admin","password":%q}`, time.Now().UnixNano(), walkPassword)}
		},
		"GET /api/v1/users/:id": func() walkRequest { return walkRequest{path: fmt.Sprintf("/api/v1/users/%d", newUser())} },
		"PATCH /api/v1/users/:id": func() walkRequest {
			return walkRequest{path: fmt.Sprintf("/api/v1/users/%d", newUser()), body: `{"role":"admin"}`}
		},
		"DELETE /api/v1/users/:id": func() walkRequest { return walkRequest{path: fmt.Sprintf("/api/v1/users/%d", newUser())} },
		"GET /api/v1/tokens":       fixed("/api/v1/tokens", "", ""),
		"POST /api/v1/tokens": func() walkRequest {
			return walkRequest{path: "/api/v1/tokens", body: fmt.Sprintf(`{"name":"walk-made-%d","role":"admin"}`, time.Now().UnixNano())}
		},
		"DELETE /api/v1/tokens/:id":           func() walkRequest { return walkRequest{path: fmt.Sprintf("/api/v1/tokens/%d", newToken())} },
		"POST /api/v1/check":                  fixed("/api/v1/check", "", `{"resource":"walk"}`),
		"POST /api/v1/check/batch":            fixed("/api/v1/check/batch", "", `{"checks":[{"resource":"walk"}]}`),
		"POST /api/v1/complete":               fixed("/api/v1/complete", "", `{"resource":"walk","rtMs":3}`),
		"GET /api/v1/rules":                   fixed("/api/v1/rules", "", ""),
		"POST /api/v1/rules":                  fixed("/api/v1/rules", "", `{"kind":"flow","resource":"walk","threshold":1000}`),
		"GET /api/v1/rules/export":            fixed("/api/v1/rules/export", "", ""),
		"GET /api/v1/rules/fields":            fixed("/api/v1/rules/fields", "", ""),
		"POST /api/v1/rules/apply":            fixed("/api/v1/rules/apply", "", `{"rules":[{"name":"walk-applied","kind":"flow","resource":"walk","threshold":7}]}`),
		"POST /api/v1/rules/import":           fixed("/api/v1/rules/import", "format=sentinel", `[{"resource":"walk-imported","threshold":7}]`),
		"POST /api/v1/rules/impact":           fixed("/api/v1/rules/impact", "", `{"kind":"flow","resource":"walk","threshold":7}`),
		"GET /api/v1/rules/:id":               ruleRoute("", "", ""),
		"PUT /api/v1/rules/:id":               ruleRoute("", "", `{"kind":"flow","resource":"walk","threshold":5}`),
		"PATCH /api/v1/rules/:id":             ruleRoute("", "", `{"threshold":6}`),
		"DELETE /api/v1/rules/:id":            ruleRoute("", "", ""),
		"GET /api/v1/rules/:id/revisions":     ruleRoute("/revisions", "", ""),
		"POST /api/v1/rules/:id/rollback":     ruleRoute("/rollback", "toVersion=1", ""),
		"GET /api/v1/breakers":                fixed("/api/v1/breakers", "", ""),
		"GET /api/v1/breakers/transitions":    fixed("/api/v1/breakers/transitions", "", ""),
		"GET /api/v1/resources":               fixed("/api/v1/resources", "", ""),
		"GET /api/v1/resources/:name/metrics": fixed("/api/v1/resources/walk/metrics", "", ""),
		"GET /api/v1/metrics/top":             fixed("/api/v1/metrics/top", "", ""),
		"GET /api/v1/metrics/history-steps":   fixed("/api/v1/metrics/history-steps", "", ""),
		"GET /api/v1/metrics/stream":          fixed("/api/v1/metrics/stream", "", ""),
		"GET /api/v1/rules/snapshot":          fixed("/api/v1/rules/snapshot", "", ""),
		"POST /api/v1/instances/report": fixed("/api/v1/instances/report", "",
			`{"instance":{"id":"walk"},"minutes":[{"resource":"walk","time":"2026-11-20T14:00:00Z","pass":1}],"live":[{"resource":"walk","passQps":1}]}`),
		"GET /api/v1/instances":                   fixed("/api/v1/instances", "", ""),
		"GET /api/v1/resources/:name/hot-values":  fixed("/api/v1/resources/walk/hot-values", "", ""),
		"GET /api/v1/cluster":                     fixed("/api/v1/cluster", "", ""),
		"POST /api/v1/cluster/exchange":           fixed("/api/v1/cluster/exchange", "", `{"engine":"walk"}`),
		"GET /api/v1/webhooks":                    fixed("/api/v1/webhooks", "", ""),
		"POST /api/v1/webhooks":                   fixed("/api/v1/webhooks", "", walkWebhook),
		"GET /api/v1/webhooks/:id":                webhookRoute("", ""),
		"PATCH /api/v1/webhooks/:id":              webhookRoute("", `{"description":"walked"}`),
		"DELETE /api/v1/webhooks/:id":             webhookRoute("", ""),
		"POST /api/v1/webhooks/:id/test":          webhookRoute("/test", ""),
		"POST /api/v1/webhooks/:id/resume":        webhookRoute("/resume", ""),
		"POST /api/v1/webhooks/:id/rotate-secret": webhookRoute("/rotate-secret", ""),
		"GET /api/v1/webhooks/:id/deliveries":     webhookRoute("/deliveries", ""),
	}
}

// newUser makes a user with role and the walk's password as the admin.
func (n *authNode) newUser(t *testing.T, role string) (int64, string) {
	t.Helper()
	name := fmt.Sprintf("walk-%s-%d", role, time.Now().UnixNano())
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/users",
		fmt.Sprintf(`{"username":%q,"role":%q,"password":%q}`, name, role, walkPassword))
	if status != http.StatusCreated {
		t.Fatalf("create user: %d %s", status, data)
	}
	var u struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(data, &u); err != nil {
		t.Fatal(err)
	}
	return u.ID, name
}

// spellings are the other ways to write path (without its query), a
// request to the route pattern, that an attacker would try: another case,
// doubled, encoded or dotted slashes and segments, a trailing slash. None
// may reach the route. A parameter's value is not the path's spelling (a
// resource name travels URL-escaped), so its encoding is left alone.
func spellings(pattern, path string) []string {
	params := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	segments := strings.Split(strings.TrimPrefix(path, "/"), "/")
	join := func(parts []string) string { return "/" + strings.Join(parts, "/") }
	out := []string{strings.ToUpper(path), path + "/", path + "/.", "/" + path, path + "%2F"}
	for i, seg := range segments {
		with := func(s string) string {
			parts := append([]string(nil), segments...)
			parts[i] = s
			return join(parts)
		}
		if !strings.HasPrefix(params[i], ":") {
			out = append(out,
				with(strings.ToUpper(seg[:1])+seg[1:]),
				with(fmt.Sprintf("%%%02X", seg[0])+seg[1:]),
				with(fmt.Sprintf("%%%02x", seg[0])+seg[1:]),
			)
		}
		out = append(out,
			with("/"+seg),
			with("./"+seg),
			with("x/../"+seg),
			with("%2E/"+seg),
			with("x/%2E%2E/"+seg),
		)
		if i > 0 {
			out = append(out, join(segments[:i])+"%2F"+strings.Join(segments[i:], "/"))
		}
	}
	return out
}

// TestNoSpellingGivesARoleMore walks every registered /api/v1 route with
// every spelling of its path, as every role, by token and by session: no
// spelling but the route's own reaches it (never a 2xx, never a 5xx), the
// route's own answers 403 to the roles below its rule, an instance token
// reaches only instanceRoutes (403 everywhere else), and the request used
// succeeds for the role it needs, so the walk's requests are ones a route
// would have taken.
func TestNoSpellingGivesARoleMore(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	tokens := map[string]string{roleAdmin: servertest.AdminToken}
	sessions := map[string]http.Header{}
	for _, role := range []string{roleViewer, roleEditor, roleAdmin} {
		if role != roleAdmin {
			tokens[role], _ = n.newToken(t, "walk-"+role, role, "")
		}
		_, name := n.newUser(t, role)
		cookie, csrf := n.login(t, name, walkPassword)
		sessions[role] = withCookie(cookie, csrf)
	}
	tokens[roleInstance], _ = n.newToken(t, "walk-instance", roleInstance, "")
	fixtures := walkFixtures(t, n)

	seen := map[string]bool{}
	for _, route := range n.app.GetRoutes(true) {
		key := route.Method + " " + route.Path
		if !strings.HasPrefix(route.Path, "/api/v1") || route.Method == http.MethodHead || seen[key] {
			continue
		}
		seen[key] = true
		need, known := routePolicy[key]
		fixture := fixtures[key]
		if !known || fixture == nil {
			t.Errorf("%s: not in routePolicy or walkFixtures: add the rule docs/api.md gives it", key)
			continue
		}
		t.Run(key, func(t *testing.T) {
			req := fixture()
			target := func(path string) string {
				if req.query != "" {
					return path + "?" + req.query
				}
				return path
			}
			creds := []http.Header{bearer(tokens[roleInstance])}
			for _, role := range []string{roleViewer, roleEditor, roleAdmin} {
				creds = append(creds, bearer(tokens[role]), sessions[role])
			}
			for _, path := range spellings(route.Path, req.path) {
				for _, h := range append(creds, nil) {
					status := rawRequest(t, n.Addr, route.Method, target(path), h, req.body)
					if status >= 200 && status < 300 || status >= 500 {
						t.Errorf("%s %s (%s): %d, want it to reach no route", route.Method, path, describe(h), status)
					}
				}
			}
			for _, role := range []string{roleViewer, roleEditor} {
				if need == "" || roleRank[role] >= roleRank[need] {
					continue
				}
				for _, h := range []http.Header{bearer(tokens[role]), sessions[role]} {
					if status := rawRequest(t, n.Addr, route.Method, target(req.path), h, req.body); status != http.StatusForbidden {
						t.Errorf("%s (%s): %d, want 403", req.path, describe(h), status)
					}
				}
			}
			if need != "" {
				status := rawRequest(t, n.Addr, route.Method, target(req.path), bearer(tokens[roleInstance]), req.body)
				if ok := status >= 200 && status < 300; instanceRoutes[key] && !ok || !instanceRoutes[key] && status != http.StatusForbidden {
					t.Errorf("%s as an instance token: %d, want 2xx only on the instances' routes, else 403", req.path, status)
				}
			}
			h := bearer(tokens[need])
			switch {
			case need == "":
				h = nil
			case req.session:
				_, name := n.newUser(t, need)
				cookie, csrf := n.login(t, name, walkPassword)
				h = withCookie(cookie, csrf)
			}
			if status := rawRequest(t, n.Addr, route.Method, target(req.path), h, req.body); status < 200 || status >= 300 {
				t.Errorf("%s as %q: %d, want 2xx: the walk's request must be one the route takes", req.path, need, status)
			}
		})
	}
	for key := range routePolicy {
		if !seen[key] {
			t.Errorf("%s is in routePolicy but not registered", key)
		}
	}
}

// describe names the credentials of a walk request.
func describe(h http.Header) string {
	switch {
	case h == nil:
		return "no credentials"
	case h.Get("Authorization") != "":
		return "token"
	}
	return "session"
}

// TestPlansAreReads: asking apply or import for a plan changes nothing, so
// a viewer may; applying needs an editor.
func TestPlansAreReads(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	viewer, _ := n.newToken(t, "viewer", roleViewer, "")
	for _, tt := range []struct{ path, body string }{
		{"/api/v1/rules/apply", `{"rules":[{"name":"plan","kind":"flow","resource":"plan","threshold":7}]}`},
		{"/api/v1/rules/import?format=sentinel", `[{"resource":"plan","threshold":7}]`},
	} {
		sep := "?"
		if strings.Contains(tt.path, "?") {
			sep = "&"
		}
		for _, q := range []string{"", "dryRun=false"} {
			path := tt.path
			if q != "" {
				path += sep + q
			}
			if status, body := n.as(t, bearer(viewer), http.MethodPost, path, tt.body); status != http.StatusForbidden {
				t.Errorf("viewer POST %s: %d %s, want 403", path, status, body)
			}
		}
		path := tt.path + sep + "dryRun=true"
		status, body := n.as(t, bearer(viewer), http.MethodPost, path, tt.body)
		if status != http.StatusOK {
			t.Fatalf("viewer POST %s: %d %s, want 200", path, status, body)
		}
		if plan := decodePlan(t, body); !plan.DryRun || len(plan.Created) != 1 {
			t.Errorf("viewer's plan = %+v, want a dry run creating one rule", plan)
		}
	}
	if resp, body := n.Do(t, http.MethodGet, "/api/v1/rules", nil); !strings.Contains(string(body), `"total":0`) {
		t.Errorf("after the viewer's plans: %d %s, want no rule", resp.StatusCode, body)
	}
}

// TestWrongMethodIs405 asks every /api/v1 path with each method it has no
// route for: 405, with an Allow that lists exactly the path's own methods,
// never a parameter route's beside it (GET /rules/apply is not rule
// "apply").
func TestWrongMethodIs405(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	methods := map[string]map[string]bool{} // by path, with "1" for parameters
	for _, route := range n.app.GetRoutes(true) {
		if !strings.HasPrefix(route.Path, "/api/v1") {
			continue
		}
		path := routeParam.ReplaceAllString(route.Path, "1")
		if methods[path] == nil {
			methods[path] = map[string]bool{}
		}
		methods[path][route.Method] = true
	}
	for path, own := range methods {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if own[method] {
				continue
			}
			resp, body := n.DoWith(t, method, path, strings.NewReader("{}"), bearer(servertest.AdminToken))
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d %s, want 405", method, path, resp.StatusCode, body)
				continue
			}
			allowed := map[string]bool{}
			for _, m := range strings.Split(resp.Header.Get("Allow"), ",") {
				allowed[strings.TrimSpace(m)] = true
			}
			if fmt.Sprint(allowed) != fmt.Sprint(own) {
				t.Errorf("%s %s: Allow %q, want the path's own methods %v", method, path, resp.Header.Get("Allow"), own)
			}
		}
	}
}
