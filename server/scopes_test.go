package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

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
	if strings.Contains(string(data), "bad-token") {
		t.Errorf("a refused token was made: %s", data)
	}
	// Promoting while clearing the scope is fine.
	status, data = n.as(t, admin, http.MethodPatch, fmt.Sprintf("/api/v1/users/%d", id), `{"role":"admin","apps":null}`)
	if status != http.StatusOK {
		t.Errorf("promote and clear the scope: %d %s", status, data)
	}
}
