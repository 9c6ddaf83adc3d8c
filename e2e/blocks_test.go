package e2e

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestBlocksByReason: blocks reported with the rules that made them show
// on the resource page as a chart stacked by reason, with a legend entry
// per reason and a table per rule, and on the overview under the
// resource's name.
func TestBlocksByReason(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	// The last finished minute and the current one, so that the overview's
	// last minute has them whenever it loads.
	now := time.Now().UTC().Truncate(time.Minute)
	var minutes []map[string]any
	for _, m := range []time.Time{now.Add(-time.Minute), now} {
		minutes = append(minutes, map[string]any{"resource": "orders", "time": m.Format(time.RFC3339), "pass": 20, "block": 7,
			"blockedBy": []map[string]any{
				{"reason": "flow", "rule": "orders-cap", "blocked": 5},
				{"reason": "hotspot", "rule": "per-user", "blocked": 2},
			}})
	}
	report := map[string]any{"instance": map[string]any{"id": "shop-1", "app": "shop"}, "minutes": minutes}
	if status, data := n.call(t, http.MethodPost, "/instances/report", report); status != http.StatusNoContent {
		t.Fatalf("report: %d %s", status, data)
	}

	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape("orders"), "orders")
	tb.waitFor("the blocks stacked by reason", `document.querySelector('#blocks-history-chart').dataset.reasons === 'flow,hotspot'`)
	tb.waitText("#blocks-history-chart", "Flow")
	tb.waitText("#blocks-history-chart", "Hotspot")
	tb.waitFor("two stacked series drawn", `document.querySelectorAll('#blocks-history-chart .u-legend .u-series').length === 3`)
	tb.waitText(`#blocks-by-rule tr[data-rule="orders-cap"]`, "10")
	tb.waitText(`#blocks-by-rule tr[data-rule="per-user"]`, "Hotspot")
	tb.checkAccessibility("the resource page with blocks by reason")

	tb.visit("/", "Overview")
	tb.waitText(`tr[data-resource="orders"] [data-role="blocked-by"]`, "flow rule orders-cap 5 · hotspot rule per-user 2")
}
