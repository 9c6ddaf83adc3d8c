package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/server/servertest"
)

// TestAdminTokensEndWithTheAdmin: an admin demoted or deleted keeps no
// admin access through the tokens they made. Their admin tokens, and the
// admin tokens these made, are revoked with the role; a token of a lesser
// role they made, and the admin tokens others made, keep working.
func TestAdminTokensEndWithTheAdmin(t *testing.T) {
	t.Parallel()
	admin := bearer(servertest.AdminToken)
	for _, tc := range []struct {
		name   string
		method string
		body   string
		want   int
	}{
		{"demoted to editor", http.MethodPatch, `{"role":"editor"}`, http.StatusOK},
		{"deleted", http.MethodDelete, "", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startAuthNode(t)
			id, name := n.newUser(t, roleAdmin)
			cookie, csrf := n.login(t, name, walkPassword)
			mint := func(as http.Header, token, role string) string {
				t.Helper()
				status, data := n.as(t, as, http.MethodPost, "/api/v1/tokens", fmt.Sprintf(`{"name":%q,"role":%q}`, token, role))
				if status != http.StatusCreated {
					t.Fatalf("create token %s: %d %s", token, status, data)
				}
				var created NewAPIToken
				if err := json.Unmarshal(data, &created); err != nil {
					t.Fatal(err)
				}
				return created.Token
			}
			own := mint(withCookie(cookie, csrf), "own-admin", roleAdmin)
			ci := mint(withCookie(cookie, csrf), "own-ci", roleEditor)
			second := mint(bearer(own), "minted-by-own", roleAdmin)
			others, _ := n.newToken(t, "others-admin", roleAdmin, "")

			if status, data := n.as(t, admin, tc.method, fmt.Sprintf("/api/v1/users/%d", id), tc.body); status != tc.want {
				t.Fatalf("%s the user: %d %s", tc.method, status, data)
			}
			for _, c := range []struct {
				token string
				want  int
			}{{own, http.StatusUnauthorized}, {second, http.StatusUnauthorized}, {ci, http.StatusOK}, {others, http.StatusOK}} {
				if status, data := n.as(t, bearer(c.token), http.MethodGet, "/api/v1/me", ""); status != c.want {
					t.Errorf("GET /me with a token after the admin was %s: %d %s, want %d", tc.name, status, data, c.want)
				}
			}
			if status, data := n.as(t, bearer(own), http.MethodPost, "/api/v1/users",
				`{"username":"backdoor","role":"admin","password":"backdoor-password-1"}`); status != http.StatusUnauthorized {
				t.Errorf("create an admin with the revoked token: %d %s, want 401", status, data)
			}
		})
	}
}
