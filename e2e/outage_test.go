package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// bannerShown is true while the connection banner says the figures are stale.
const bannerShown = `!document.querySelector('#connection-banner').hidden &&
	document.querySelector('#connection-banner').textContent.includes('figures are stale')`

// TestOutage stops the server mid-session and starts it again on the same
// address, then makes it hang: the console says since when its figures are
// stale, shows the failed load as an error (not as an empty list, not as
// "live"), and comes back by itself once the server answers.
func TestOutage(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	tb := newTab(t, n.url)
	tb.shortTimeouts()
	tb.login()
	tb.waitText("#live-status", "live")
	tb.visit("/rules", "Rules")
	tb.waitText("main tbody", "orders-qps")

	// Refused: the banner comes, and a page drawn now says it could not load.
	n.stop()
	tb.waitFor("the banner", bannerShown)
	tb.visit("/rules?q=orders", "Rules")
	tb.waitText("main tbody td.error", "Could not reach the server")
	tb.waitText("#connection-banner", "Server unreachable since")
	tb.waitFor("the header not live", `document.querySelector('#live-status').textContent !== 'live'`)
	for _, scheme := range []string{"dark", "light"} {
		tb.colorScheme(scheme)
		tb.checkAccessibility("the outage banner and error row (" + scheme + ")")
	}

	// Back on the same address: the banner goes and the page loads by
	// itself, nobody clicking.
	n.start()
	tb.waitFor("the banner gone", `document.querySelector('#connection-banner').hidden`)
	tb.waitText("main tbody", "orders-qps")
	tb.waitText("#live-status", "live")

	// Hung: connections open, nothing answered. The page says it is
	// loading, then that the server did not answer; never "live", never
	// an empty list.
	n.gate.hold()
	tb.visit("/rules", "Rules")
	tb.waitText("main tbody td.loading", "Loading the rules")
	tb.waitFor("the banner", bannerShown)
	tb.waitFor("the header not live", `document.querySelector('#live-status').textContent !== 'live'`)
	tb.waitText("main tbody td.error", "it did not answer within 10 s")
	n.gate.release()
	tb.waitFor("the banner gone", `document.querySelector('#connection-banner').hidden`)
	tb.waitText("main tbody", "orders-qps")
}

// TestFailedSaveShowsItsError saves a rule while the server is down, with
// the form's top out of sight: the error comes into view and takes focus.
func TestFailedSaveShowsItsError(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()
	tb.do("a short window", chromedp.EmulateViewport(1280, 500))
	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-name", "orders-qps")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-flow-threshold", "100")
	n.stop()
	tb.click("#rule-save")
	tb.waitFor("the error focused", `document.activeElement?.matches('#rule-form [role=alert]') &&
		document.activeElement.textContent.includes('Could not reach the server')`)
	tb.waitFor("the error in view", `(() => {
		const box = document.activeElement.getBoundingClientRect();
		return box.top >= 0 && box.bottom <= window.innerHeight;
	})()`)
	n.start()
}
