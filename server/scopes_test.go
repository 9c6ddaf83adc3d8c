package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/cluster/redistest"
	"github.com/sluicehq/sluice/server/servertest"
)

// scopedToken creates a token of role with apps (a JSON array) as the
// admin and returns its secret.
func (n *authNode) scopedToken(t *testing.T, name, role, apps string) string {
	t.Helper()
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/tokens",
		fmt.Sprintf(`{"name":%q,"role":%q,"apps":%s}`, name, role, apps))
	if status != http.StatusCreated {
		t.Fatalf("create token %s: %d %s", name, status, data)
	}
	var created NewAPIToken
	if err := json.Unmarshal(data, &created); err != nil {
		t.Fatal(err)
	}
	return created.Token
}

// TestScopeShowsInTokensUsersAndMe: a scope given to a token or a user is
// answered by the create, by GET /tokens, GET /users and the caller's GET
// /me, and a user's PATCH changes or (null) clears it from their next
// request on, their session kept; an unscoped one has no apps field.
func TestScopeShowsInTokensUsersAndMe(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	admin := bearer(servertest.AdminToken)
	secret := n.scopedToken(t, "ci-checkout", roleEditor, `["checkout","payments"]`)
	status, data := n.as(t, admin, http.MethodGet, "/api/v1/tokens", "")
	var tokens TokenList
	if err := json.Unmarshal(data, &tokens); status != http.StatusOK || err != nil {
		t.Fatalf("GET /tokens: %d %s %v", status, data, err)
	}
	for _, tok := range tokens.Items {
		want := []string(nil)
		if tok.Name == "ci-checkout" {
			want = []string{"checkout", "payments"}
		}
		if !slices.Equal(tok.Apps, want) {
			t.Errorf("GET /tokens: %s has apps %q, want %q", tok.Name, tok.Apps, want)
		}
	}
	if strings.Contains(string(data), `"apps":null`) || strings.Count(string(data), `"apps"`) != 1 {
		t.Errorf("GET /tokens shows apps on an unscoped token: %s", data)
	}
	var me Me
	status, data = n.as(t, bearer(secret), http.MethodGet, "/api/v1/me", "")
	if err := json.Unmarshal(data, &me); status != http.StatusOK || err != nil {
		t.Fatalf("GET /me: %d %s %v", status, data, err)
	}
	if !slices.Equal(me.Apps, []string{"checkout", "payments"}) || me.Token == nil || !slices.Equal(me.Token.Apps, me.Apps) {
		t.Errorf("GET /me of the scoped token: %s", data)
	}

	status, data = n.as(t, admin, http.MethodPost, "/api/v1/users",
		fmt.Sprintf(`{"username":"carol","role":"editor","password":%q,"apps":["checkout"]}`, walkPassword))
	var carol User
	if err := json.Unmarshal(data, &carol); status != http.StatusCreated || err != nil || !slices.Equal(carol.Apps, []string{"checkout"}) {
		t.Fatalf("create a scoped user: %d %s %v", status, data, err)
	}
	cookie, csrf := n.login(t, "carol", walkPassword)
	meApps := func() []string {
		t.Helper()
		status, data := n.as(t, withCookie(cookie, csrf), http.MethodGet, "/api/v1/me", "")
		var me Me
		if err := json.Unmarshal(data, &me); status != http.StatusOK || err != nil {
			t.Fatalf("GET /me: %d %s %v", status, data, err)
		}
		if me.User == nil || !slices.Equal(me.User.Apps, me.Apps) {
			t.Errorf("GET /me: the user's apps differ from the caller's: %s", data)
		}
		return me.Apps
	}
	if got := meApps(); !slices.Equal(got, []string{"checkout"}) {
		t.Errorf("GET /me of the scoped user: apps %q", got)
	}
	path := fmt.Sprintf("/api/v1/users/%d", carol.ID)
	for _, step := range []struct {
		body string
		want []string
	}{
		{`{"apps":["payments","search"]}`, []string{"payments", "search"}},
		{`{"role":"viewer"}`, []string{"payments", "search"}},
		{`{"apps":null}`, nil},
	} {
		status, data := n.as(t, admin, http.MethodPatch, path, step.body)
		var u User
		if err := json.Unmarshal(data, &u); status != http.StatusOK || err != nil || !slices.Equal(u.Apps, step.want) {
			t.Fatalf("PATCH %s: %d %s, want apps %q", step.body, status, data, step.want)
		}
		if got := meApps(); !slices.Equal(got, step.want) {
			t.Errorf("GET /me after PATCH %s: apps %q, want %q", step.body, got, step.want)
		}
		status, data = n.as(t, admin, http.MethodGet, "/api/v1/users?pageSize=500", "")
		var list UserList
		if err := json.Unmarshal(data, &list); status != http.StatusOK || err != nil {
			t.Fatalf("GET /users: %d %s", status, data)
		}
		for _, listed := range list.Items {
			if listed.ID == carol.ID && !slices.Equal(listed.Apps, step.want) {
				t.Errorf("GET /users after PATCH %s: apps %q, want %q", step.body, listed.Apps, step.want)
			}
		}
	}
}

// TestScopeValidation: apps must be 1 to 64 app names, none twice, and
// not on an admin; each fault is a 422 naming the field, and nothing is
// made or changed.
func TestScopeValidation(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	admin := bearer(servertest.AdminToken)
	id, _ := n.newUser(t, roleEditor)
	status, data := n.as(t, admin, http.MethodPatch, fmt.Sprintf("/api/v1/users/%d", id), `{"apps":["checkout"]}`)
	if status != http.StatusOK {
		t.Fatalf("scope the user: %d %s", status, data)
	}
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("app-%d", i))
	}
	bad := []struct {
		name, apps, role, field string
	}{
		{"empty", `[]`, roleEditor, "apps"},
		{"too many", "[" + strings.Join(many, ",") + "]", roleEditor, "apps"},
		{"not an array", `"checkout"`, roleEditor, "apps"},
		{"not names", `[1]`, roleEditor, "apps"},
		{"bad name", `["Checkout"]`, roleEditor, "apps[0]"},
		{"twice", `["checkout","payments","checkout"]`, roleEditor, "apps[2]"},
		{"admin", `["checkout"]`, roleAdmin, "apps"},
	}
	for _, tc := range bad {
		for _, req := range []struct{ method, path, body string }{
			{http.MethodPost, "/api/v1/tokens", fmt.Sprintf(`{"name":"bad-token","role":%q,"apps":%s}`, tc.role, tc.apps)},
			{http.MethodPost, "/api/v1/users", fmt.Sprintf(`{"username":"bad-user","role":%q,"password":%q,"apps":%s}`, tc.role, walkPassword, tc.apps)},
			{http.MethodPatch, fmt.Sprintf("/api/v1/users/%d", id), fmt.Sprintf(`{"role":%q,"apps":%s}`, tc.role, tc.apps)},
		} {
			status, data := n.as(t, admin, req.method, req.path, req.body)
			var answer ErrorResponse
			if err := json.Unmarshal(data, &answer); status != http.StatusUnprocessableEntity || err != nil ||
				!slices.ContainsFunc(answer.Error.Details, func(f FieldError) bool { return f.Field == tc.field }) {
				t.Errorf("%s: %s %s: %d %s, want 422 naming %s", tc.name, req.method, req.path, status, data, tc.field)
			}
		}
	}
	// A scoped user made admin without clearing the scope is refused too.
	status, data = n.as(t, admin, http.MethodPatch, fmt.Sprintf("/api/v1/users/%d", id), `{"role":"admin"}`)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(data), `"field":"apps"`) {
		t.Errorf("promote a scoped user: %d %s, want 422 naming apps", status, data)
	}
	status, data = n.as(t, admin, http.MethodGet, fmt.Sprintf("/api/v1/users/%d", id), "")
	var u User
	if err := json.Unmarshal(data, &u); status != http.StatusOK || err != nil || u.Role != roleEditor || !slices.Equal(u.Apps, []string{"checkout"}) {
		t.Errorf("the user after the refused changes: %d %s", status, data)
	}
	status, data = n.as(t, admin, http.MethodGet, "/api/v1/tokens", "")
	if status != http.StatusOK || strings.Contains(string(data), "bad-token") {
		t.Errorf("the tokens after the refused changes: %d %s, want no bad-token", status, data)
	}
	// Promoting while clearing the scope is fine.
	status, data = n.as(t, admin, http.MethodPatch, fmt.Sprintf("/api/v1/users/%d", id), `{"role":"admin","apps":null}`)
	if status != http.StatusOK {
		t.Errorf("promote and clear the scope: %d %s", status, data)
	}
}

// scopeFixture is the rules TestScopeEditorWrites starts from, by name:
// co (app checkout, at version 2 by a change of threshold), pay (app
// payments), global (no app) and moved (app payments at version 1,
// moved to checkout at version 2).
func scopeFixture(t *testing.T, n *authNode) map[string]int64 {
	t.Helper()
	admin := bearer(servertest.AdminToken)
	ids := map[string]int64{}
	for _, r := range []struct{ name, app string }{{"co", "checkout"}, {"pay", "payments"}, {"global", ""}, {"moved", "payments"}} {
		body := fmt.Sprintf(`{"name":%q,"kind":"flow","resource":"GET:/%s","threshold":10}`, r.name, r.name)
		if r.app != "" {
			body = fmt.Sprintf(`{"name":%q,"kind":"flow","app":%q,"resource":"GET:/%s","threshold":10}`, r.name, r.app, r.name)
		}
		status, data := n.as(t, admin, http.MethodPost, "/api/v1/rules", body)
		var created struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(data, &created); status != http.StatusCreated || err != nil {
			t.Fatalf("create %s: %d %s", r.name, status, data)
		}
		ids[r.name] = created.ID
	}
	for name, patch := range map[string]string{"co": `{"threshold":20}`, "moved": `{"app":"checkout"}`} {
		if status, data := n.as(t, admin, http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", ids[name]), patch); status != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s", name, status, data)
		}
	}
	return ids
}

// TestScopeEditorWrites: an editor scoped to checkout and search writes
// (create, PUT, PATCH, DELETE, rollback, apply in JSON and YAML with and
// without prune or dry run, import) the rules of those apps; a write of a
// rule of another app or of none, or that would move a rule into or out
// of the scope, is 403 naming the app field and writes nothing; its
// apply's prune and plan leave the other apps' rules out.
func TestScopeEditorWrites(t *testing.T) {
	t.Parallel()
	const (
		inScope   = `{"rules":[{"name":"co","kind":"flow","app":"checkout","resource":"GET:/co","threshold":30},{"name":"new","kind":"flow","app":"search","resource":"GET:/new","threshold":5}]}`
		inScopeYA = "rules:\n  - name: co\n    kind: flow\n    app: checkout\n    resource: GET:/co\n    threshold: 30\n"
		otherApp  = `{"rules":[{"name":"co","kind":"flow","app":"checkout","resource":"GET:/co","threshold":30},{"name":"new","kind":"flow","app":"payments","resource":"GET:/new","threshold":5}]}`
		otherYA   = "rules:\n  - name: new\n    kind: flow\n    resource: GET:/new\n    threshold: 5\n"
		takeOver  = `{"rules":[{"name":"pay","kind":"flow","app":"checkout","resource":"GET:/pay","threshold":10}]}`
		sentinel  = `[{"resource":"GET:/imported","threshold":7}]`
	)
	yaml := http.Header{"Content-Type": {"application/yaml"}}
	for _, tc := range []struct {
		name, method, path, body string
		header                   http.Header
		want                     int
		field                    string   // the 403's detail
		deleted                  []string // an apply's plan.deleted
	}{
		{"create in scope", http.MethodPost, "/api/v1/rules", `{"name":"new","kind":"flow","app":"search","resource":"GET:/new","threshold":1}`, nil, http.StatusCreated, "", nil},
		{"create of another app", http.MethodPost, "/api/v1/rules", `{"name":"new","kind":"flow","app":"payments","resource":"GET:/new","threshold":1}`, nil, http.StatusForbidden, "app", nil},
		{"create without app", http.MethodPost, "/api/v1/rules", `{"name":"new","kind":"flow","resource":"GET:/new","threshold":1}`, nil, http.StatusForbidden, "app", nil},
		{"PUT in scope", http.MethodPut, "/api/v1/rules/{co}", `{"kind":"flow","app":"checkout","resource":"GET:/co","threshold":1}`, nil, http.StatusOK, "", nil},
		{"PUT moving out", http.MethodPut, "/api/v1/rules/{co}", `{"kind":"flow","app":"payments","resource":"GET:/co","threshold":1}`, nil, http.StatusForbidden, "app", nil},
		{"PUT dropping the app", http.MethodPut, "/api/v1/rules/{co}", `{"kind":"flow","resource":"GET:/co","threshold":1}`, nil, http.StatusForbidden, "app", nil},
		{"PUT moving in", http.MethodPut, "/api/v1/rules/{pay}", `{"kind":"flow","app":"checkout","resource":"GET:/pay","threshold":1}`, nil, http.StatusForbidden, "app", nil},
		{"PATCH in scope", http.MethodPatch, "/api/v1/rules/{co}", `{"threshold":1}`, nil, http.StatusOK, "", nil},
		{"PATCH between own apps", http.MethodPatch, "/api/v1/rules/{co}", `{"app":"search"}`, nil, http.StatusOK, "", nil},
		{"PATCH moving out", http.MethodPatch, "/api/v1/rules/{co}", `{"app":"payments"}`, nil, http.StatusForbidden, "app", nil},
		{"PATCH clearing the app", http.MethodPatch, "/api/v1/rules/{co}", `{"app":null}`, nil, http.StatusForbidden, "app", nil},
		{"PATCH moving in", http.MethodPatch, "/api/v1/rules/{pay}", `{"app":"checkout"}`, nil, http.StatusForbidden, "app", nil},
		{"PATCH of a rule without app", http.MethodPatch, "/api/v1/rules/{global}", `{"app":"checkout"}`, nil, http.StatusForbidden, "app", nil},
		{"DELETE in scope", http.MethodDelete, "/api/v1/rules/{co}", "", nil, http.StatusNoContent, "", nil},
		{"DELETE of another app", http.MethodDelete, "/api/v1/rules/{pay}", "", nil, http.StatusForbidden, "app", nil},
		{"DELETE of a rule without app", http.MethodDelete, "/api/v1/rules/{global}", "", nil, http.StatusForbidden, "app", nil},
		{"rollback in scope", http.MethodPost, "/api/v1/rules/{co}/rollback?toVersion=1", "", nil, http.StatusOK, "", nil},
		{"rollback to another app", http.MethodPost, "/api/v1/rules/{moved}/rollback?toVersion=1", "", nil, http.StatusForbidden, "app", nil},
		{"rollback of another app", http.MethodPost, "/api/v1/rules/{pay}/rollback?toVersion=1", "", nil, http.StatusForbidden, "app", nil},
		{"apply in scope", http.MethodPost, "/api/v1/rules/apply", inScope, nil, http.StatusOK, "", []string{}},
		{"apply with prune", http.MethodPost, "/api/v1/rules/apply?prune=true", inScope, nil, http.StatusOK, "", []string{"moved"}},
		{"apply with prune, dry run", http.MethodPost, "/api/v1/rules/apply?prune=true&dryRun=true", inScope, nil, http.StatusOK, "", []string{"moved"}},
		{"apply YAML with prune", http.MethodPost, "/api/v1/rules/apply?prune=true", inScopeYA, yaml, http.StatusOK, "", []string{"moved"}},
		{"apply of another app", http.MethodPost, "/api/v1/rules/apply", otherApp, nil, http.StatusForbidden, "rules[1].app", nil},
		{"apply of another app, dry run", http.MethodPost, "/api/v1/rules/apply?dryRun=true&prune=true", otherApp, nil, http.StatusForbidden, "rules[1].app", nil},
		{"apply YAML without app", http.MethodPost, "/api/v1/rules/apply?prune=true", otherYA, yaml, http.StatusForbidden, "rules[0].app", nil},
		{"apply taking another app's rule", http.MethodPost, "/api/v1/rules/apply", takeOver, nil, http.StatusForbidden, "rules[0].app", nil},
		{"import in scope", http.MethodPost, "/api/v1/rules/import?format=sentinel&app=checkout", sentinel, nil, http.StatusOK, "", []string{}},
		{"import in scope, dry run", http.MethodPost, "/api/v1/rules/import?format=sentinel&app=search&dryRun=true", sentinel, nil, http.StatusOK, "", []string{}},
		{"import to another app", http.MethodPost, "/api/v1/rules/import?format=sentinel&app=payments", sentinel, nil, http.StatusForbidden, "app", nil},
		{"import without app", http.MethodPost, "/api/v1/rules/import?format=sentinel", sentinel, nil, http.StatusForbidden, "rules[0].app", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := startAuthNode(t)
			ids := scopeFixture(t, n)
			editor := bearer(n.scopedToken(t, "ci-checkout", roleEditor, `["checkout","search"]`))
			for k, v := range tc.header {
				editor[k] = v
			}
			path := tc.path
			for name, id := range ids {
				path = strings.ReplaceAll(path, "{"+name+"}", fmt.Sprint(id))
			}
			export := func() string {
				t.Helper()
				status, data := n.as(t, bearer(servertest.AdminToken), http.MethodGet, "/api/v1/rules/export", "")
				if status != http.StatusOK {
					t.Fatalf("export: %d %s", status, data)
				}
				return string(data)
			}
			before := export()
			status, data := n.as(t, editor, tc.method, path, tc.body)
			if status != tc.want {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, path, status, data, tc.want)
			}
			if tc.want == http.StatusForbidden {
				var answer ErrorResponse
				if err := json.Unmarshal(data, &answer); err != nil || answer.Error.Code != "forbidden" ||
					len(answer.Error.Details) == 0 || answer.Error.Details[0].Field != tc.field {
					t.Errorf("the 403: %s, want forbidden naming %s", data, tc.field)
				}
				if after := export(); after != before {
					t.Errorf("a refused write changed the rules:\nbefore %s\nafter  %s", before, after)
				}
			}
			if tc.deleted != nil {
				var plan struct {
					Deleted []struct {
						Name string `json:"name"`
					} `json:"deleted"`
				}
				if err := json.Unmarshal(data, &plan); err != nil {
					t.Fatal(err)
				}
				var deleted []string
				for _, d := range plan.Deleted {
					deleted = append(deleted, d.Name)
				}
				if !slices.Equal(deleted, tc.deleted) && len(deleted)+len(tc.deleted) > 0 {
					t.Errorf("plan.deleted %q, want %q", deleted, tc.deleted)
				}
				after := export()
				for _, kept := range []string{`"pay"`, `"global"`} {
					if !strings.Contains(after, kept) {
						t.Errorf("the apply deleted %s, outside the scope: %s", kept, after)
					}
				}
			}
		})
	}
}

// TestScopeInstanceToken: an instance token scoped to shop reads the
// snapshot and reports only for shop: another app, or none, is 403 naming
// the field; an unscoped instance token and a scoped viewer read any
// app's snapshot (a viewer's reads are its role's), and a scoped editor's
// reports are held to its apps like the token's.
func TestScopeInstanceToken(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	scoped := bearer(n.scopedToken(t, "fleet-shop", roleInstance, `["shop"]`))
	unscoped := bearer(n.scopedToken(t, "fleet", roleInstance, `null`))
	viewer := bearer(n.scopedToken(t, "dash-shop", roleViewer, `["shop"]`))
	editor := bearer(n.scopedToken(t, "ci-shop", roleEditor, `["shop"]`))
	report := func(app string) string {
		if app == "" {
			return `{"instance":{"id":"i1"}}`
		}
		return fmt.Sprintf(`{"instance":{"id":"i1","app":%q}}`, app)
	}
	for _, tc := range []struct {
		name   string
		as     http.Header
		method string
		path   string
		body   string
		want   int
		field  string
	}{
		{"snapshot of its app", scoped, http.MethodGet, "/api/v1/rules/snapshot?app=shop", "", http.StatusOK, ""},
		{"snapshot of another app", scoped, http.MethodGet, "/api/v1/rules/snapshot?app=billing", "", http.StatusForbidden, "app"},
		{"snapshot without app", scoped, http.MethodGet, "/api/v1/rules/snapshot", "", http.StatusForbidden, "app"},
		{"unscoped snapshot of any app", unscoped, http.MethodGet, "/api/v1/rules/snapshot?app=billing", "", http.StatusOK, ""},
		{"scoped viewer's snapshot of another app", viewer, http.MethodGet, "/api/v1/rules/snapshot?app=billing", "", http.StatusOK, ""},
		{"report of its app", scoped, http.MethodPost, reportPath, report("shop"), http.StatusNoContent, ""},
		{"report of another app", scoped, http.MethodPost, reportPath, report("billing"), http.StatusForbidden, "instance.app"},
		{"report without app", scoped, http.MethodPost, reportPath, report(""), http.StatusForbidden, "instance.app"},
		{"unscoped report of any app", unscoped, http.MethodPost, reportPath, report("billing"), http.StatusNoContent, ""},
		{"scoped editor's report of its app", editor, http.MethodPost, reportPath, report("shop"), http.StatusNoContent, ""},
		{"scoped editor's report of another app", editor, http.MethodPost, reportPath, report("billing"), http.StatusForbidden, "instance.app"},
	} {
		status, data := n.as(t, tc.as, tc.method, tc.path, tc.body)
		if status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, status, data, tc.want)
			continue
		}
		if tc.field != "" && !strings.Contains(string(data), `"field":"`+tc.field+`"`) {
			t.Errorf("%s: %s, want a detail naming %s", tc.name, data, tc.field)
		}
	}
}

// TestScopeClusterExchange: an instance token scoped to shop leases from
// the cluster rules of shop and from those without app (every app runs
// them), and gets nothing for another app's, as for an unknown key.
func TestScopeClusterExchange(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	n := clusterNode(t, rds.URL(), "a")
	admin := bearer(servertest.AdminToken)
	for _, body := range []string{
		`{"name":"pay","kind":"flow","resource":"pay","threshold":20,"scope":"cluster","app":"shop"}`,
		`{"name":"bill","kind":"flow","resource":"bill","threshold":20,"scope":"cluster","app":"billing"}`,
		`{"name":"all","kind":"flow","resource":"all","threshold":20,"scope":"cluster"}`,
	} {
		if status, data := n.as(t, admin, http.MethodPost, "/api/v1/rules", body); status != http.StatusCreated {
			t.Fatalf("create a cluster rule: %d %s", status, data)
		}
	}
	exchange := func(token, asks string) []wire.ClusterLease {
		t.Helper()
		status, data := n.as(t, bearer(token), http.MethodPost, "/api/v1/cluster/exchange", `{"engine":"i1","asks":`+asks+`}`)
		var answer wire.ClusterAnswer
		if err := json.Unmarshal(data, &answer); status != http.StatusOK || err != nil {
			t.Fatalf("exchange: %d %s", status, data)
		}
		return answer.Leases
	}
	leases := exchange(n.scopedToken(t, "fleet-shop", roleInstance, `["shop"]`),
		`[{"key":"pay","want":20},{"key":"bill","want":20},{"key":"all","want":20}]`)
	for i, want := range []int64{20, 0, 20} {
		if len(leases) != 3 || leases[i].Granted != want {
			t.Fatalf("the scoped token's leases %+v: want %d granted for ask %d", leases, want, i)
		}
	}
	// The passes of bill are still unleased: an unscoped token gets them.
	if leases := exchange(n.scopedToken(t, "fleet", roleInstance, `null`), `[{"key":"bill","want":20}]`); len(leases) != 1 || leases[0].Granted != 20 {
		t.Errorf("the unscoped token's lease of bill: %+v, want 20 granted", leases)
	}
}

// scopedRuleWrites is, for every write route under /api/v1/rules, a
// request that an unscoped editor sees succeed on the rule {id}, of app
// billing, and the field a 403 of it names.
var scopedRuleWrites = map[string]struct{ path, body, field string }{
	"POST /api/v1/rules":              {"/api/v1/rules", `{"name":"bill-2","kind":"flow","app":"billing","resource":"GET:/bill-2","threshold":1}`, "app"},
	"POST /api/v1/rules/apply":        {"/api/v1/rules/apply?prune=true", `{"rules":[{"name":"bill","kind":"flow","app":"billing","resource":"GET:/bill","threshold":3}]}`, "rules[0].app"},
	"POST /api/v1/rules/import":       {"/api/v1/rules/import?format=sentinel&app=billing", `[{"resource":"GET:/imported","threshold":7}]`, "app"},
	"PUT /api/v1/rules/:id":           {"/api/v1/rules/{id}", `{"kind":"flow","app":"billing","resource":"GET:/bill","threshold":3}`, "app"},
	"PATCH /api/v1/rules/:id":         {"/api/v1/rules/{id}", `{"threshold":3}`, "app"},
	"DELETE /api/v1/rules/:id":        {"/api/v1/rules/{id}", "", "app"},
	"POST /api/v1/rules/:id/rollback": {"/api/v1/rules/{id}/rollback?toVersion=1", "", "app"},
}

// TestScopeHoldsEveryRuleWrite walks every write route under
// /api/v1/rules: an editor scoped to shop, by a token or by a console
// session, is refused it on a rule of app billing with a 403 naming the
// app field, and the rules stay as they were; an unscoped editor's same
// request succeeds. A write route without a request in scopedRuleWrites
// fails it. POST /rules/impact writes nothing: it estimates a rule from
// the history, which a scope does not narrow.
func TestScopeHoldsEveryRuleWrite(t *testing.T) {
	t.Parallel()
	routes := startAuthNode(t).app.GetRoutes(true)
	seen := map[string]bool{http.MethodPost + " " + apiPrefix + "/rules/impact": true}
	for _, route := range routes {
		key := route.Method + " " + route.Path
		if !strings.HasPrefix(route.Path, apiPrefix+"/rules") || safeMethod(route.Method) || seen[key] {
			continue
		}
		seen[key] = true
		req, ok := scopedRuleWrites[key]
		if !ok {
			t.Errorf("%s: no request in scopedRuleWrites: add one", key)
			continue
		}
		t.Run(key, func(t *testing.T) {
			n := startAuthNode(t)
			admin := bearer(servertest.AdminToken)
			status, data := n.as(t, admin, http.MethodPost, "/api/v1/rules", `{"name":"bill","kind":"flow","app":"billing","resource":"GET:/bill","threshold":1}`)
			var created struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(data, &created); status != http.StatusCreated || err != nil {
				t.Fatalf("create the rule: %d %s", status, data)
			}
			path := strings.ReplaceAll(req.path, "{id}", fmt.Sprint(created.ID))
			if status, data := n.as(t, admin, http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", created.ID), `{"threshold":2}`); status != http.StatusOK {
				t.Fatalf("PATCH the rule: %d %s", status, data)
			}
			status, data = n.as(t, admin, http.MethodPost, "/api/v1/users",
				fmt.Sprintf(`{"username":"shop-editor","role":"editor","password":%q,"apps":["shop"]}`, walkPassword))
			if status != http.StatusCreated {
				t.Fatalf("create the scoped user: %d %s", status, data)
			}
			cookie, csrf := n.login(t, "shop-editor", walkPassword)
			export := func() string {
				_, data := n.as(t, admin, http.MethodGet, "/api/v1/rules/export", "")
				return string(data)
			}
			before := export()
			for as, h := range map[string]http.Header{
				"a scoped token":   bearer(n.scopedToken(t, "ci-shop", roleEditor, `["shop"]`)),
				"a scoped session": withCookie(cookie, csrf),
			} {
				status, data := n.as(t, h, route.Method, path, req.body)
				if status != http.StatusForbidden || !strings.Contains(string(data), `"field":"`+req.field+`"`) {
					t.Errorf("as %s: %d %s, want 403 naming %s", as, status, data, req.field)
				}
				if after := export(); after != before {
					t.Errorf("as %s: the refused write changed the rules:\nbefore %s\nafter  %s", as, before, after)
				}
			}
			editor := bearer(n.scopedToken(t, "ci", roleEditor, `null`))
			if status, data := n.as(t, editor, route.Method, path, req.body); status/100 != 2 {
				t.Errorf("as an unscoped editor: %d %s, want 2xx", status, data)
			}
		})
	}
	for key := range scopedRuleWrites {
		if !seen[key] {
			t.Errorf("%s is in scopedRuleWrites but no write route under /api/v1/rules", key)
		}
	}
}
