package e2e

import (
	"net/http"
	"testing"
)

// TestUnknownOutcome disables, then deletes, a rule while the server
// hangs: the server makes each change but its answer never comes. The console says the
// outcome is unknown, keeps the control from being clicked again, and once
// the server answers says the change was made, with the rule's version.
func TestUnknownOutcome(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	if status, body := n.call(t, http.MethodPatch, "/rules/1", `{"threshold": 60}`); status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", status, body)
	}
	tb := newTab(t, n.url)
	tb.shortTimeouts()
	tb.login()
	tb.visit("/resources/"+"GET%3A%2Fapi%2Forders", "GET:/api/orders")
	tb.historyDrawn()
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

	// A deletion from the list, the same way.
	tb.visit("/rules", "Rules")
	del := `button[aria-label="Delete orders-qps"]`
	tb.click(del)
	n.gate.hold()
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#outcomes", "Delete orders-qps: outcome unknown — checking…")
	// Disabled, or gone with the list if a reload of it (the change's
	// event) met the hung server: never clickable.
	tb.waitFor("Delete disabled while the outcome is unknown", `document.querySelector('`+del+`')?.disabled !== false`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Delete orders-qps: made. orders-qps is deleted (version 4).")
	tb.waitText("main tbody", "No rules yet")
}

// TestUnknownOutcomeForms saves a rule, rolls it back and creates another
// while the server hangs: each is made, and the console says so with the
// version once the server answers, the form's Save kept disabled meanwhile.
func TestUnknownOutcomeForms(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	tb := newTab(t, n.url)
	tb.shortTimeouts()
	tb.login()

	tb.visit("/rules/1/edit", "Edit orders-qps")
	tb.waitFor("the form loaded", `document.querySelector('#rule-flow-threshold')?.value === '50' && !document.querySelector('#rule-save').disabled`)
	tb.fill("#rule-flow-threshold", "70")
	n.gate.hold()
	tb.click("#rule-save")
	tb.waitText("#outcomes", "Save orders-qps: outcome unknown — checking…")
	tb.waitFor("Save disabled while the outcome is unknown", `document.querySelector('#rule-save').disabled`)
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Save orders-qps: made. orders-qps is saved (version 2).")
	tb.waitText("main h1", "Rules")

	tb.visit("/rules/1/history", "History of orders-qps")
	tb.click(`button[data-rollback="1"]`)
	n.gate.hold()
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#outcomes", "Roll orders-qps back to version 1: outcome unknown — checking…")
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Roll orders-qps back to version 1: made. orders-qps has the content of version 1 again (version 3).")
	if r := n.rule(t, 1); r.Version != 3 || r.Threshold == nil || *r.Threshold != 50 {
		t.Fatalf("the rule is v%d, want v3 with threshold 50", r.Version)
	}

	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-name", "payments-qps")
	tb.fill("#rule-resource", "POST:/api/payments")
	tb.fill("#rule-flow-threshold", "20")
	n.gate.hold()
	tb.click("#rule-save")
	tb.waitText("#outcomes", "Create payments-qps: outcome unknown — checking…")
	n.gate.release()
	tb.waitText("#outcomes .alert.ok:last-child", "Create payments-qps: made. payments-qps is created (version 1).")
	tb.waitText("main tbody", "payments-qps")
}
