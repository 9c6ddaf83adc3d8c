package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestLoginAndFirstSteps logs in to a brand-new install: the console asks
// for a login, refuses a wrong password, takes the right one from the
// keyboard, then shows what to do first.
func TestLoginAndFirstSteps(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)

	tb.do("open the console", chromedp.Navigate(n.url+"/"), chromedp.WaitVisible(chromedp.CSS("#login-username")))
	tb.screenshot("login")
	tb.do("log in with a wrong password",
		chromedp.SendKeys(chromedp.CSS("#login-username"), "admin"),
		chromedp.SendKeys(chromedp.CSS("#login-password"), "not the password"),
		chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
	tb.waitText("#login-form [role=alert]", "wrong username or password")

	// With the keyboard alone: the wrong password is selected, so typing
	// replaces it, and Enter submits.
	tb.waitFor("the password selected", `document.activeElement?.id === 'login-password'`)
	tb.do("type the right password", chromedp.KeyEvent(adminPassword+"\r"))
	tb.waitText("main h1", "Overview")
	tb.waitFor("the focus on the page's heading", `document.activeElement === document.querySelector('main h1')`)
	tb.waitText("#getting-started", "no rules yet")
	tb.waitText("#whoami", "admin (admin)")
	tb.screenshot("overview-new-install")
}

// TestViewerReadsOnly logs in as a viewer: the console offers no write and
// no admin page, and says why where a write would be.
func TestViewerReadsOnly(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	if status, resp := n.call(t, http.MethodPost, "/users", `{"username": "victor", "role": "viewer", "password": "viewer-password"}`); status != http.StatusCreated {
		t.Fatalf("create the viewer: %d %s", status, resp)
	}
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 10}`)
	tb := newTab(t, n.url)
	tb.loginAs("victor", "viewer-password")
	tb.waitText("#whoami", "victor (viewer)")
	tb.waitFor("no admin pages in the menu", `[...document.querySelectorAll('#nav [data-admin]')].every((a) => a.hidden)`)

	tb.visit("/rules", "Rules")
	tb.waitText(`tr[data-rule="orders-qps"]`, "orders-qps")
	tb.waitFor("no New rule and no Delete", `!document.querySelector('#new-rule') && !document.querySelector('button[aria-label="Delete orders-qps"]')`)
	tb.visit("/rules/1/edit", "Edit orders-qps")
	tb.waitText("#rule-form .alert.error", "can read rules but not change them")
	tb.waitFor("Save disabled", `document.querySelector('#rule-save').disabled`)

	tb.visit("/tokens", "Overview")
	tb.waitText("#toast", "That page is for admins")
}

// TestLoginAsAnotherUserInAnotherTab logs in as editor alice in one tab
// and as editor bob in a second tab of the same browser (one cookie jar):
// alice's tab, saving a rule after that, must not write it as bob, whose
// session its requests now carry. It writes nothing and reloads as bob.
func TestLoginAsAnotherUserInAnotherTab(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	for _, u := range []string{"alice", "bob"} {
		if status, resp := n.call(t, http.MethodPost, "/users", map[string]string{"username": u, "role": "editor", "password": u + "-password"}); status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", u, status, resp)
		}
	}
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 10}`)
	alice := newTab(t, n.url)
	alice.loginAs("alice", "alice-password")
	alice.visit("/rules/1/edit", "Edit orders-qps")
	alice.waitFor("the form filled in", `document.querySelector('#rule-flow-threshold').value === '10'`)

	bob := alice.another()
	bob.loginAs("bob", "bob-password")
	bob.waitText("#whoami", "bob (editor)")

	alice.fill("#rule-flow-threshold", "20")
	alice.click("#rule-save")
	alice.waitText("#whoami", "bob (editor)")
	alice.waitText("main h1", "Edit orders-qps")
	revs := n.revisions(t, 1)
	if len(revs) != 1 || revs[0].Actor == "bob" {
		t.Fatalf("rule 1 has %d versions, the newest by %q; want only the first: alice's save must not be made as bob", len(revs), revs[0].Actor)
	}
	if r := n.rule(t, 1); *r.Threshold != 10 {
		t.Fatalf("threshold = %v, want 10: nothing written", *r.Threshold)
	}
}

// TestLoginReason shows why the login page was opened only for the reason
// codes the console itself sends: a link with any other text in reason
// shows no message, never the link's words.
func TestLoginReason(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()
	tb.click("#logout")
	tb.waitText("#login-form .alert.info", "You are logged out.")

	tb.visit("/login?reason="+url.QueryEscape("Your account is locked: call +1 555 0100 with your password"), "Log in")
	tb.waitFor("no message on the login page", `document.querySelector('#login-form') && !document.querySelector('#login-form .alert.info')`)
	if got := tb.text("main"); strings.Contains(got, "call +1 555") {
		t.Fatalf("the login page shows the link's text: %q", got)
	}

	tb.visit("/login?reason=session-ended", "Log in")
	tb.waitText("#login-form .alert.info", "Your session has ended; log in again.")
}
