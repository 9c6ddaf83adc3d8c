package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// overviewOrder is the overview's resources, top to bottom.
const overviewOrder = `[...document.querySelectorAll('.overview-table tbody tr[data-resource]')].map((tr) => tr.dataset.resource)`

// TestOverviewRanksAndHidesOwnRoutes opens the overview on resources that
// block, pass and idle: the blocking one ranks first on the last minute,
// ties keep their order by name across refreshes, Sluice's own API routes
// are hidden until asked for, and on a phone every figure is in sight.
func TestOverviewRanksAndHidesOwnRoutes(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	for _, rule := range []string{
		`{"kind": "flow", "resource": "e2e:blocked", "threshold": 0}`,
		`{"kind": "flow", "resource": "e2e:idle-c", "threshold": 100}`,
		`{"kind": "flow", "resource": "e2e:idle-a", "threshold": 100}`,
		`{"kind": "flow", "resource": "e2e:idle-b", "threshold": 100}`,
	} {
		if status, body := n.call(t, http.MethodPost, "/rules", rule); status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
	}
	drive(t, n.engine, "e2e:blocked", 1)
	drive(t, n.engine, "e2e:passed", 1)
	want := []string{"e2e:blocked", "e2e:passed", "e2e:idle-a", "e2e:idle-b", "e2e:idle-c"}

	tb := newTab(t, n.url)
	tb.login()
	tb.waitFor("the ranked order", fmt.Sprintf(`JSON.stringify(%s) === %s`, overviewOrder, js(`["`+strings.Join(want, `","`)+`"]`)))
	if got := tb.text("main tbody"); strings.Contains(got, "GET /api/v1/") {
		t.Errorf("Sluice's own API routes show by default")
	}
	tb.waitText("main p[role=status]", "of Sluice's own API routes are hidden")

	// Refresh the list a few times: the order holds.
	for i := range 3 {
		if _, err := eval[bool](tb, `(document.querySelectorAll('.overview-table tbody tr').forEach((tr) => { tr.dataset.old = '1'; }),
			document.querySelector('#overview-sort').dispatchEvent(new Event('change')), true)`); err != nil {
			t.Fatal(err)
		}
		tb.waitFor("a refreshed list", `!document.querySelector('.overview-table tbody tr[data-old]')`)
		if got, err := eval[[]string](tb, overviewOrder); err != nil || !slices.Equal(got, want) {
			t.Fatalf("refresh %d: order %v (%v), want %v", i+1, got, err, want)
		}
	}

	// Asked for, the own routes come, marked as Sluice's.
	tb.click("#overview-own")
	tb.waitText(`tr[data-resource="GET /api/v1/resources"]`, "Sluice API")
	tb.waitFor("own=1 in the address", `location.hash.includes('own=1')`)

	// A phone: no figure cut off or out of the screen.
	tb.do("a phone's screen", chromedp.EmulateViewport(390, 844))
	tb.waitFor("every figure in sight", `(() => {
		const cells = [...document.querySelectorAll('.overview-table tbody td, .overview-table tbody th')];
		return cells.length > 0 && document.documentElement.scrollWidth <= innerWidth && cells.every((el) => {
			const box = el.getBoundingClientRect();
			return el.scrollWidth <= el.clientWidth + 1 && box.left >= 0 && box.right <= innerWidth + 1;
		});
	})()`)
	tb.checkAccessibility("the overview on a phone")
}
