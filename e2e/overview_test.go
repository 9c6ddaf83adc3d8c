package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/engine"
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

// TestOverviewTriage opens the overview on a resource that blocks every one
// of its few calls, one that blocks a tenth of many more (more blocks in
// all) and one whose breaker is open: a line of totals comes first, the
// order is stated and its column marked, the resource blocking 100% ranks
// above the one blocking 10%, and the open breaker says for how long and
// when it probes next.
func TestOverviewTriage(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"kind": "flow", "resource": "e2e:all-blocked", "threshold": 0}`)
	n.createRule(t, `{"kind": "flow", "resource": "e2e:tenth-blocked", "threshold": 180}`)
	n.createRule(t, `{"name": "flaky", "kind": "circuitBreaker", "resource": "e2e:broken",
		"strategy": "errorCount", "threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 600000}`)
	// A few calls a second, all blocked, for as long as the test runs:
	// the overview's last minute is sampled once a second, and a loaded
	// machine's sampler can miss one.
	ctx, stop := context.WithCancel(context.Background())
	blocking := make(chan error, 1)
	t.Cleanup(func() {
		stop()
		if err := <-blocking; err != nil {
			t.Error(err)
		}
	})
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, blk := n.engine.Entry("e2e:all-blocked"); blk == nil {
				blocking <- errors.New("e2e:all-blocked passed a call")
				return
			}
			select {
			case <-ctx.Done():
				blocking <- nil
				return
			case <-tick.C:
			}
		}
	}()
	drive(t, n.engine, "e2e:tenth-blocked", 4) // 200 calls/s over a threshold of 180
	if e, blk := n.engine.Entry("e2e:broken"); blk == nil {
		e.Exit(engine.WithError(errors.New("failed")))
	}

	tb := newTab(t, n.url)
	tb.login()
	tb.waitText("#overview-summary", "calls/s")
	tb.waitText("#overview-summary", "1 breaker open")
	tb.waitText("#overview-summary", "no instances")
	tb.waitText("#overview-order", "Ranked by blocked share over the last minute, highest first; ties by blocked/s")
	tb.waitText(`thead th[aria-sort="descending"]`, "Blocked share")
	row := func(name string) string { return fmt.Sprintf(`tr[data-resource=%s]`, js(name)) }
	tb.waitText(row("e2e:all-blocked")+` td[data-label="Blocked share"]`, "100%")
	tb.waitFor("e2e:tenth-blocked blocking some", fmt.Sprintf(`/^(\d|1\d)(\.\d)?%%$/.test(document.querySelector(%s)?.textContent ?? '')`,
		js(row("e2e:tenth-blocked")+` td[data-label="Blocked share"]`)))
	// Refresh the list: the order, which the column shows, holds.
	for range 2 {
		if _, err := eval[bool](tb, `(document.querySelectorAll('.overview-table tbody tr').forEach((tr) => { tr.dataset.old = '1'; }),
			document.querySelector('#overview-sort').dispatchEvent(new Event('change')), true)`); err != nil {
			t.Fatal(err)
		}
		tb.waitFor("a refreshed list", `!document.querySelector('.overview-table tbody tr[data-old]')`)
		order, err := eval[[]string](tb, overviewOrder)
		if err != nil {
			t.Fatal(err)
		}
		all, tenth := slices.Index(order, "e2e:all-blocked"), slices.Index(order, "e2e:tenth-blocked")
		if all < 0 || tenth < 0 || all > tenth {
			t.Fatalf("order %v: the resource blocking 100%% is below the one blocking 10%%", order)
		}
	}
	tb.waitText(row("e2e:broken"), "breaker open")
	tb.waitFor("the open breaker's clock", fmt.Sprintf(`/open for \d+ s, next probe in (9|10) min/.test(document.querySelector(%s)?.textContent ?? '')`, js(row("e2e:broken"))))
}

// TestOwnRoutesToggleOnAPhone: on a phone's screen the overview's "own API
// routes" checkbox keeps its size, beside its label at the left, as every
// checkbox does, rather than stretched across the screen with its label
// pushed to the right edge.
func TestOwnRoutesToggleOnAPhone(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()
	tb.do("a phone's screen", chromedp.EmulateViewport(390, 844))
	tb.waitFor("the checkbox beside its label, at the left", `(() => {
		const box = document.querySelector('#overview-own').getBoundingClientRect();
		const label = document.querySelector('label[for="overview-own"]').getBoundingClientRect();
		const search = document.querySelector('#overview-search').getBoundingClientRect();
		return box.width > 0 && box.width <= 32 && Math.abs(box.left - search.left) <= 6
			&& label.left >= box.right && label.left - box.right <= 16
			&& label.top < box.bottom && label.bottom > box.top && label.right <= innerWidth;
	})()`)
}
