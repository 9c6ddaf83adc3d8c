package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/engine"
)

// holdInFlight enters resource n times without exiting until the test
// ends: calls in flight for the in-flight chart.
func holdInFlight(t *testing.T, eng *engine.Engine, resource string, n int) {
	t.Helper()
	for range n {
		e, blk := eng.Entry(resource)
		if blk != nil {
			t.Fatalf("entry of %s blocked: %v", resource, blk)
		}
		t.Cleanup(func() { e.Exit() })
	}
}

// waitTrafficFor polls until resource has had traffic on eng for at least
// d: the server's backlog then holds that much.
func waitTrafficFor(t *testing.T, eng *engine.Engine, resource string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d + waitTimeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for ; ; <-tick.C {
		if r := eng.Lookup(resource); r != nil && time.Since(time.UnixMilli(r.FirstSeenMs())) >= d {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s had no traffic for %v", resource, d)
		}
	}
}

// waitSoon polls the page until expr is true, for at most within: what a
// first paint must show cannot wait for the stream to fill it second by
// second.
func (tb *tab) waitSoon(what, expr string, within time.Duration) {
	tb.t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for ; ; <-tick.C {
		if ok, err := eval[bool](tb, "Boolean("+expr+")"); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: %s not within %v (%s)", tb.name, what, within, expr)
		}
	}
}

// TestLiveBacklog opens the console on a resource that had traffic before
// the tab: its live chart, its in-flight chart and its overview sparkline
// are full from the first paint and after a reload, because the stream
// opens with the server's last five minutes; a server stopped and started
// again leaves a gap in the chart, not a straight line.
func TestLiveBacklog(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "e2e:backlog"
	const before = 6 * time.Second
	// Two points at most come from the stream itself in the time a first
	// paint is given: the rest must be the backlog.
	const firstPaint = 2 * time.Second
	drive(t, n.engine, resource, 2)
	holdInFlight(t, n.engine, resource, 3)
	waitTrafficFor(t, n.engine, resource, before)

	points := func(sel string, atLeast int) string {
		return fmt.Sprintf(`Number(document.querySelector(%s)?.dataset.points ?? 0) >= %d`, js(sel), atLeast)
	}
	tb := newTab(t, n.url)
	tb.login()
	tb.waitSoon("a full sparkline", points(`tr[data-resource="e2e:backlog"] .spark`, 5), firstPaint+waitTimeout/3)
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	tb.waitSoon("a full live chart", points("#live-chart", 5), firstPaint)
	tb.waitSoon("a full in-flight chart", points("#inflight-chart", 5), firstPaint)
	tb.waitText("#inflight-chart", "In flight")

	tb.do("reload", chromedp.Reload())
	tb.waitText("main h1", resource)
	tb.waitSoon("a full live chart after a reload", points("#live-chart", 8), firstPaint)
	tb.waitSoon("a full in-flight chart after a reload", points("#inflight-chart", 8), firstPaint)
	// A second a loaded machine's sampler missed is a gap too (the chart
	// says so): the outage below must add one to those.
	gapsBefore, err := eval[float64](tb, `Number(document.querySelector('#live-chart').dataset.gaps ?? 0)`)
	if err != nil {
		t.Fatal(err)
	}

	// Down for a few seconds, then back: the seconds without figures are
	// a gap in the chart.
	n.stop()
	stoppedMs := time.Now().UnixMilli()
	tb.waitFor("the banner", bannerShown)
	tb.waitFor("four seconds down", fmt.Sprintf(`Date.now() >= %d`, stoppedMs+4000))
	n.start()
	drive(t, n.engine, resource, 2)
	tb.waitFor("the banner gone", `document.querySelector('#connection-banner').hidden`)
	tb.waitFor("a gap drawn where the server was down", fmt.Sprintf(`Number(document.querySelector('#live-chart').dataset.gaps) > %v`, gapsBefore))
	if status, _ := n.call(t, http.MethodGet, "/health", nil); status != http.StatusOK {
		t.Fatalf("health after the restart: %d", status)
	}
}
