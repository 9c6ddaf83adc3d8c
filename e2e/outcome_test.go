package e2e

import (
	"net/http"
	"testing"
)

// TestUnknownOutcome disables a rule while the server hangs: the server
// makes the change but its answer never comes. The console says the
// outcome is unknown, keeps the switch from being clicked again, and once
// the server answers says the change was made, with the rule's version.
func TestUnknownOutcome(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	if status, body := n.call(t, http.MethodPatch, "/rules/1", `{"threshold": 60}`); status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", status, body)
	}
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+"GET%3A%2Fapi%2Forders", "GET:/api/orders")
	box := `input[type=checkbox][data-rule="orders-qps"]`
	tb.waitFor("the Enabled switch", `document.querySelector('`+box+`')?.checked === true`)

	tb.click(box)
	tb.waitText("dialog[open]", "Disable orders-qps?")
	n.gate.hold()
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#outcomes", "Disable orders-qps: outcome unknown — checking…")
	tb.waitFor("the switch disabled while the outcome is unknown", `document.querySelector('`+box+`').disabled`)
	tb.checkAccessibility("the unknown outcome")

	n.gate.release()
	tb.waitText("#outcomes .alert.ok", "Disable orders-qps: made. orders-qps is now disabled (version 3).")
	tb.waitFor("the switch off and usable", `(() => {
		const box = document.querySelector('`+box+`');
		return box && !box.checked && !box.disabled;
	})()`)
	if r := n.rule(t, 1); r.Enabled || r.Version != 3 {
		t.Fatalf("the rule is v%d enabled=%v, want v3 disabled", r.Version, r.Enabled)
	}
}
