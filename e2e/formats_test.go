package e2e

import (
	"testing"
)

// TestFormats reads the console's figures and moves as an operator would:
// a resource whose calls take under a millisecond shows "<1 ms" (not the
// no-data mark), chart axes of small values have the decimals they need,
// a deletion leaves focus on the rule that took the deleted one's place,
// and a page's message does not follow the person to the next page.
func TestFormats(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "a-orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	n.createRule(t, `{"name": "b-orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 60}`)
	driveRt(t, n.engine, "GET:/api/fast", 2, 0)
	tb := newTab(t, n.url)
	tb.login()

	tb.waitText(`main thead`, "Passed/s")
	tb.waitText(`tr[data-resource="GET:/api/fast"] td[data-label="Avg RT"]`, "<1 ms")

	tb.waitFor("axis values with their decimals", `(window.axisCheck ??= import('/js/charts.js').then((m) => {
		window.axisOut = [m.axisValues([0, 0.01, 0.02, 0.03]), m.axisValues([0, 2.5, 5]), m.axisValues([0, 200, 400])].map((v) => v.join(' ')).join(' | ');
	})) && window.axisOut === '0.00 0.01 0.02 0.03 | 0.0 2.5 5.0 | 0 200 400'`)

	tb.visit("/rules", "Rules")
	tb.click(`button[aria-label="Delete a-orders-qps"]`)
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#toast", "Deleted a-orders-qps")
	tb.waitFor("focus on the rule that took its place", `!document.querySelector('tr[data-rule="a-orders-qps"]') &&
		document.activeElement?.textContent === 'b-orders-qps'`)

	// Checked on arrival: the toast would go by itself within 8 s.
	tb.visit("/instances", "Instances")
	if hidden, err := eval[bool](tb, `document.querySelector('#toast').hidden`); err != nil || !hidden {
		t.Fatalf("the toast of the rules page is still shown on the instances page (err %v)", err)
	}

	// A save's message is about the list it goes to: it stays.
	tb.visit("/rules/2/edit", "Edit b-orders-qps")
	tb.waitFor("the form loaded", `document.querySelector('#rule-flow-threshold')?.value === '60' && !document.querySelector('#rule-save').disabled`)
	tb.fill("#rule-flow-threshold", "70")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText("#toast", "Saved b-orders-qps (version 2)")
}
