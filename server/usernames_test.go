package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestUsernamesAreCaseInsensitive: a username is one whatever its case:
// no second user takes it in another, login matches it in any, and the
// failed logins of every spelling count together.
func TestUsernamesAreCaseInsensitive(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	if status := n.send(t, http.MethodPost, "/api/v1/users", `{"username":"ed","role":"viewer","password":"eds-password-1"}`, nil); status != http.StatusCreated {
		t.Fatalf("create ed: %d", status)
	}
	for _, name := range []string{"ED", "Ed", "ADMIN"} {
		resp, body := n.Do(t, http.MethodPost, "/api/v1/users", strings.NewReader(`{"username":"`+name+`","role":"viewer","password":"another-password-1"}`))
		wantError(t, resp, body, http.StatusConflict, "conflict")
	}

	cookie, _ := n.login(t, "ED", "eds-password-1")
	resp, body := n.DoWith(t, http.MethodGet, "/api/v1/me", nil, withCookie(cookie, ""))
	mustStatus(t, resp, body, http.StatusOK)
	me := decodeStrict[Me](t, body)
	if me.Name != "ed" || me.User == nil || me.User.Username != "ed" {
		t.Errorf("GET /me after logging in as ED = %s, want the user ed", body)
	}

	for i, name := range []string{"admin", "Admin", "ADMIN", "aDmin", "admiN"}[:maxFailuresPerUser] {
		if status, _ := n.as(t, nil, http.MethodPost, "/api/v1/auth/login", `{"username":"`+name+`","password":"wrong-password"}`); status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, status)
		}
	}
	if status, _ := n.as(t, nil, http.MethodPost, "/api/v1/auth/login", `{"username":"AdMiN","password":"`+adminPassword+`"}`); status != http.StatusTooManyRequests {
		t.Errorf("the right password after %d failures in other spellings: %d, want 429", maxFailuresPerUser, status)
	}
}
