package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestUserChangesAskFirst changes a user's role and password from the
// users page: each asks first, saying what it does (a demoted admin's
// tokens are revoked), Escape writes nothing, and the last admin is
// offered no deletion.
func TestUserChangesAskFirst(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	if status, body := n.call(t, http.MethodPost, "/users", `{"username": "bob", "role": "admin", "password": "bob-password-1"}`); status != http.StatusCreated {
		t.Fatalf("create bob: %d %s", status, body)
	}
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/users", "Users")
	tb.waitFor("two admins, each deletable", `document.querySelector('tr[data-user="admin"] button.danger') && document.querySelector('tr[data-user="bob"] button.danger')`)

	tb.fill(`tr[data-user="bob"] select`, "viewer")
	tb.click(`tr[data-user="bob"] td:nth-of-type(1) button`)
	tb.waitText("dialog[open]", "Make bob viewer?")
	tb.waitText("dialog[open]", "the admin API tokens they created (and those these created in turn) are revoked at once")
	tb.do("press Escape", chromedp.KeyEvent(kb.Escape))
	tb.waitFor("the dialog gone", `!document.querySelector('dialog')`)
	if got := userRole(t, n, "bob"); got != "admin" {
		t.Fatalf("after Escape bob is %s, want admin: nothing written", got)
	}
	tb.click(`tr[data-user="bob"] td:nth-of-type(1) button`)
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#toast", "bob: role set to viewer")
	if got := userRole(t, n, "bob"); got != "viewer" {
		t.Fatalf("after confirming bob is %s, want viewer", got)
	}
	tb.waitFor("no delete on the last admin", `document.querySelector('tr[data-user="bob"] button.danger') &&
		!document.querySelector('tr[data-user="admin"] button.danger') &&
		document.querySelector('tr[data-user="admin"]').textContent.includes('the last admin')`)

	tb.fill(`tr[data-user="bob"] input[type=password]`, "bob-password-2")
	tb.click(`tr[data-user="bob"] td:nth-of-type(3) button`)
	tb.waitText("dialog[open]", "Set a new password for bob?")
	tb.waitText("dialog[open]", "Their sessions end at once")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#toast", "bob: password changed")
	tb.checkAccessibility("the users page of one admin")
}

// userRole answers the role GET /users shows for username.
func userRole(t *testing.T, n *node, username string) string {
	t.Helper()
	status, data := n.call(t, http.MethodGet, "/users?pageSize=500", nil)
	if status != http.StatusOK {
		t.Fatalf("list users: %d %s", status, data)
	}
	var list struct {
		Items []struct {
			Username string `json:"username"`
			Role     string `json:"role"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		if u.Username == username {
			return u.Role
		}
	}
	t.Fatalf("no user %s", username)
	return ""
}
