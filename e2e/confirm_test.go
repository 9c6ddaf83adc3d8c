package e2e

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestConfirmWithReason changes enforcement from the resource page's
// Enabled switch and the rule list's Delete: each asks first in the same
// dialog (labelled, keyboard-bound, Escape cancels), and the reason given
// there lands in the rule's history.
func TestConfirmWithReason(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/resources/"+"GET%3A%2Fapi%2Forders", "GET:/api/orders")
	tb.historyDrawn()
	box := `input[type=checkbox][data-rule="orders-qps"]`
	tb.waitFor("the Enabled switch", `document.querySelector('`+box+`')?.checked === true`)

	// Escape cancels: nothing is written and the switch stays on.
	tb.click(box)
	tb.waitText("dialog[open]", "Disable orders-qps?")
	tb.waitFor("the dialog labelled by its title",
		`document.getElementById(document.querySelector('dialog[open]').getAttribute('aria-labelledby'))?.textContent === 'Disable orders-qps?'`)
	tb.waitFor("focus in the reason field", `document.activeElement?.dataset.role === 'reason'`)
	// Tab from the last control comes back to the first: focus stays in.
	tb.do("tab out of the dialog", chromedp.Focus(chromedp.CSS(`dialog[open] button[data-action="confirm"]`)), chromedp.KeyEvent(kb.Tab))
	tb.waitFor("focus kept in the dialog", `document.activeElement?.dataset.role === 'reason'`)
	tb.do("press Escape", chromedp.KeyEvent(kb.Escape))
	tb.waitFor("the dialog gone", `!document.querySelector('dialog')`)
	tb.waitFor("the switch still on", `document.querySelector('`+box+`').checked`)
	if r := n.rule(t, 1); !r.Enabled || r.Version != 1 {
		t.Fatalf("after Escape the rule is v%d enabled=%v, want v1 enabled: nothing written", r.Version, r.Enabled)
	}

	// Confirmed with a reason, the rule is disabled and says why.
	tb.click(box)
	tb.fill(`dialog[open] input[data-role="reason"]`, "incident 42: the limit blocks checkout")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitFor("the switch off", `!document.querySelector('`+box+`').checked && !document.querySelector('dialog')`)
	if r := n.rule(t, 1); r.Enabled || r.Version != 2 {
		t.Fatalf("after confirming the rule is v%d enabled=%v, want v2 disabled", r.Version, r.Enabled)
	}
	tb.visit("/rules/1/history", "History of orders-qps")
	tb.waitText(`li[data-version="2"]`, "incident 42: the limit blocks checkout")

	// Delete asks for a reason too.
	tb.visit("/rules", "Rules")
	tb.click(`button[aria-label="Delete orders-qps"]`)
	tb.fill(`dialog[open] input[data-role="reason"]`, "replaced by a breaker")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("main tbody", "No rules yet")
	if got := n.revisions(t, 1)[0]; got.Action != "delete" || got.Reason != "replaced by a breaker" {
		t.Fatalf("newest revision = %s %q, want delete with the dialog's reason", got.Action, got.Reason)
	}
}

// TestRetriedDeleteClearsItsAlert deletes a rule changed by someone else
// since the list was loaded (412, explained), then deletes it again: the
// alert that said it was not deleted goes once it is.
func TestRetriedDeleteClearsItsAlert(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/rules", "Rules")
	tb.waitText(`tr[data-rule="orders-qps"]`, "50 per second")
	if status, body := n.call(t, http.MethodPatch, "/rules/1", `{"threshold": 60}`); status != http.StatusOK {
		t.Fatalf("change: %d %s", status, body)
	}
	tb.click(`button[aria-label="Delete orders-qps"]`)
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("main .alert.error", "so it was not deleted")
	tb.waitText(`tr[data-rule="orders-qps"]`, "60 per second")

	tb.click(`button[aria-label="Delete orders-qps"]`)
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("main tbody", "No rules yet")
	tb.waitFor("the alert gone", `document.querySelector('main .alert.error').hidden`)
}

// TestPromoteAShadowRule enforces a shadow rule from its resource page:
// the Enforce button asks first, and the change is one revision with the
// reason given.
func TestPromoteAShadowRule(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-try", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50, "mode": "shadow"}`)
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+"GET%3A%2Fapi%2Forders", "GET:/api/orders")
	tb.historyDrawn()
	button := `button[aria-label="Enforce orders-try"]`
	tb.waitFor("the Enforce button", `!!document.querySelector('`+button+`')`)

	tb.click(button)
	tb.waitText("dialog[open]", "Enforce orders-try?")
	tb.fill(`dialog[open] input[data-role="reason"]`, "a week in shadow blocked only scrapers")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitFor("the rule enforcing, its button gone", `!document.querySelector('`+button+`') && document.querySelector('tr[data-rule="orders-try"]')?.textContent.includes('enforce')`)
	if r := n.rule(t, 1); r.Mode != "enforce" || r.Version != 2 {
		t.Fatalf("after enforcing, the rule is v%d in mode %s, want v2 enforce", r.Version, r.Mode)
	}
	if got := n.revisions(t, 1)[0]; got.Reason != "a week in shadow blocked only scrapers" {
		t.Fatalf("newest revision's reason = %q, want the dialog's", got.Reason)
	}
}
