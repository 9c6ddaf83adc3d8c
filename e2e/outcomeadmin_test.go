package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/server/servertest"
)

// TestUnknownOutcomeAdminWrites applies a rule file, creates a token,
// deletes a user and a webhook while the server hangs: the server makes
// each, its answer never comes. The console says each outcome is unknown,
// keeps the control from being clicked again, and once the server answers
// says what happened.
func TestUnknownOutcomeAdminWrites(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{webhooks: true})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(recv.Close)
	if status, body := n.call(t, http.MethodPost, "/users", `{"username": "victor", "role": "viewer", "password": "viewer-password"}`); status != http.StatusCreated {
		t.Fatalf("create the viewer: %d %s", status, body)
	}
	if status, body := n.call(t, http.MethodPost, "/webhooks", fmt.Sprintf(`{"url": %q, "events": ["*"]}`, recv.URL)); status != http.StatusCreated {
		t.Fatalf("create the webhook: %d %s", status, body)
	}
	tb := newTab(t, n.url)
	tb.shortTimeouts()
	tb.login()

	// Apply: one transaction, so a preview of the same file tells.
	tb.visit("/apply", "Apply a rule file")
	tb.fill("#apply-text", "rules:\n  - name: orders-qps\n    kind: flow\n    resource: GET:/api/orders\n    threshold: 100\n")
	tb.click("#apply-dry-run")
	tb.waitText("#plan-headline", "1")
	tb.waitFor("Apply enabled", `!document.querySelector('#apply-apply').disabled`)
	tb.click("#apply-apply")
	n.gate.hold()
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#outcomes", "Apply the rule file: outcome unknown — checking…")
	tb.waitFor("Apply disabled while the outcome is unknown", `document.querySelector('#apply-apply').disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Apply the rule file: made. A preview of the file now changes nothing")

	// A token: its secret went with the lost answer, and the console says so.
	tb.visit("/tokens", "API tokens")
	tb.fill("#token-name", "ci-deploy")
	n.gate.hold()
	tb.click("#token-create")
	tb.waitText("#outcomes", "Create token ci-deploy: outcome unknown — checking…")
	tb.waitFor("Create disabled while the outcome is unknown", `document.querySelector('#token-create').disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Create token ci-deploy: made. ci-deploy exists now. Its secret was in the answer that never came")
	tb.waitFor("Create usable again", `!document.querySelector('#token-create').disabled`)

	// A user's deletion.
	tb.visit("/users", "Users")
	del := `button[aria-label="Delete victor"]`
	tb.click(del)
	n.gate.hold()
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#outcomes", "Delete victor: outcome unknown — checking…")
	// Disabled, or gone with the list if a reload of it (the change's
	// event) met the hung server: never clickable.
	tb.waitFor("Delete disabled while the outcome is unknown", `document.querySelector('`+del+`')?.disabled !== false`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Delete victor: made. victor is deleted.")
	tb.waitFor("victor gone from the list", `!document.querySelector('tr[data-user="victor"]')`)

	// A webhook's deletion.
	tb.visit("/webhooks", "Webhooks")
	delHook := fmt.Sprintf(`button[aria-label="Delete the webhook to %s"]`, recv.URL)
	tb.click(delHook)
	n.gate.hold()
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#outcomes", "outcome unknown — checking…")
	tb.waitFor("Delete disabled (or gone with the list) while the outcome is unknown", `document.querySelector(`+js(delHook)+`)?.disabled !== false`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Delete the webhook to "+recv.URL+": made.")
	if got := tb.text("#outcomes"); strings.Contains(got, "not made") {
		t.Errorf("an outcome said not made: %s", got)
	}
}

// TestUnknownOutcomeLastWrites sets a user's apps, resumes a paused
// webhook, sends it a test event and changes one's own password while the
// server hangs: the server makes each, its answer never comes. The console
// says each outcome is unknown, keeps the control disabled, and once the
// server answers says what happened; for the password, that the session
// it ended says so, since a password cannot be read back.
func TestUnknownOutcomeLastWrites(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	failing.Store(true)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	n := startNode(t, nodeConfig{webhooks: true})
	if status, body := n.call(t, http.MethodPost, "/users", `{"username": "victor", "role": "viewer", "password": "viewer-password"}`); status != http.StatusCreated {
		t.Fatalf("create the viewer: %d %s", status, body)
	}
	if status, body := n.call(t, http.MethodPost, "/webhooks", fmt.Sprintf(`{"url": %q, "events": ["*"]}`, recv.URL)); status != http.StatusCreated {
		t.Fatalf("create the webhook: %d %s", status, body)
	}
	if status, body := n.call(t, http.MethodPost, "/webhooks/1/test", nil); status != http.StatusAccepted {
		t.Fatalf("send a test event: %d %s", status, body)
	}
	servertest.WaitUntil(t, "the webhook paused", waitTimeout, func() bool {
		_, data := n.call(t, http.MethodGet, "/webhooks/1", nil)
		return strings.Contains(string(data), `"state":"paused"`)
	})
	failing.Store(false)
	tb := newTab(t, n.url)
	tb.shortTimeouts()
	tb.login()

	// A user's apps, read back from the user.
	tb.visit("/users", "Users")
	tb.fill(`tr[data-user="victor"] input[type=text]`, "checkout")
	n.gate.hold()
	tb.click(`tr[data-user="victor"] td:nth-of-type(2) button`)
	tb.waitText("#outcomes", "victor: apps set to checkout: outcome unknown — checking…")
	tb.waitFor("Set apps disabled while the outcome is unknown", `document.querySelector('tr[data-user="victor"] td:nth-of-type(2) button').disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "victor: apps set to checkout: made. victor is viewer, apps checkout.")

	// A resume, read back from the endpoint's state.
	tb.visit("/webhooks", "Webhooks")
	tb.waitText(`tr[data-webhook="1"]`, "paused")
	resume := `tr[data-webhook="1"] button[aria-label^="Resume"]`
	n.gate.hold()
	tb.click(resume)
	tb.waitText("#outcomes", "Resume "+recv.URL+": outcome unknown — checking…")
	tb.waitFor("Resume disabled while the outcome is unknown", `document.querySelector(`+js(resume)+`).disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Resume "+recv.URL+": made. It is active")
	tb.waitText(`tr[data-webhook="1"]`, "active")

	// A test event, read back from the endpoint's deliveries: the page
	// reads them just before the send, so only the send is held.
	test := `tr[data-webhook="1"] button[aria-label^="Send test"]`
	n.gate.holdAt("POST /api/v1/webhooks/1/test")
	tb.click(test)
	tb.waitText("#outcomes", "Send test to "+recv.URL+": outcome unknown — checking…")
	tb.waitFor("Send test disabled while the outcome is unknown", `document.querySelector(`+js(test)+`).disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Send test to "+recv.URL+": made. Test event msg_")
	tb.waitFor("Send test usable again", `document.querySelector(`+js(test)+`)?.disabled === false`)

	// One's own password: it ends the session, which tells.
	tb.visit("/account", "Your account")
	tb.fill("#account-current", adminPassword)
	tb.fill("#account-new", "admin-password-2")
	n.gate.hold()
	tb.click("#password-form button[type=submit]")
	tb.waitText("#outcomes", "Change your password: outcome unknown — checking…")
	tb.waitFor("Change password disabled while the outcome is unknown", `document.querySelector('#password-form button[type=submit]').disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Change your password: made. Your session has ended, as a password change ends it.")
	tb.waitText("main h1", "Log in")
	tb.loginAs("admin", "admin-password-2")
}
