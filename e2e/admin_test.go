package e2e

import (
	"strings"
	"testing"
)

// TestAdminPageErrors makes the users and tokens pages refuse something:
// the last admin's demotion names them by username (the API's message
// names the id), and a token's failed creation hides the secret of the
// token created before it, which read as this try's answer.
func TestAdminPageErrors(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/users", "Users")
	tb.fill(`tr[data-user="admin"] select`, "viewer")
	tb.click(`tr[data-user="admin"] td:nth-of-type(1) button`)
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("main .alert.error", "admin is the last admin")
	if got := tb.text("main .alert.error"); strings.Contains(got, "user 1") {
		t.Fatalf("the error reads %q, want the username, not the id", got)
	}

	tb.visit("/tokens", "API tokens")
	tb.fill("#token-name", "ci-deploy")
	tb.click("#token-create")
	tb.waitText("#token-secret-box", "Token ci-deploy created")
	tb.fill("#token-name", "")
	tb.click("#token-create")
	tb.waitFor("the error of the second try", `!document.querySelector('#token-form .alert.error').hidden`)
	tb.waitFor("the first token's secret gone", `document.querySelector('#token-secret-box').hidden && !document.querySelector('#token-secret')`)
}
