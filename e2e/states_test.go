package e2e

import (
	"testing"
)

// TestHistoryStates: a rule's history says it is loading while the server
// has not answered, shows the versions once it has, and says why it could
// not load a rule that does not exist, with a way to try again.
func TestHistoryStates(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	tb := newTab(t, n.url)
	tb.login()
	n.gate.hold()
	tb.visit("/rules/1/history", "History")
	tb.waitText("#revisions li.loading", "Loading the history")
	n.gate.release()
	tb.waitText("#revisions", "Version 1")

	tb.visit("/rules/999/history", "History")
	tb.waitText("#revisions li.error [role=alert]", "")
	tb.waitText("#revisions li.error", "Try again")
}

// TestResourceAddressNotEscaped opens a resource page whose address does
// not decode (a cut %-escape): the page says no such resource, where
// decoding it threw and left the page as it was.
func TestResourceAddressNotEscaped(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/%E0%A4%A", "No such resource")
	tb.waitText("main .alert", "This address names no resource")
}
