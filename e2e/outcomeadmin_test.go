package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	tb.waitFor("Delete disabled while the outcome is unknown", `document.querySelector('`+del+`')?.disabled`)
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
	tb.waitFor("Delete disabled while the outcome is unknown", `document.querySelector(`+js(delHook)+`)?.disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Delete the webhook to "+recv.URL+": made.")
	if got := tb.text("#outcomes"); strings.Contains(got, "not made") {
		t.Errorf("an outcome said not made: %s", got)
	}
}
