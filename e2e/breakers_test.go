package e2e

import (
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// closeAfterRetry calls resource until its open breaker lets a probe
// through, and completes the probe: the breaker goes half-open and closed
// in the same millisecond.
func closeAfterRetry(t *testing.T, eng *engine.Engine, resource string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for ; ; <-tick.C {
		if e, blk := eng.Entry(resource); blk == nil {
			e.Exit()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the breaker of %s let no probe through in %v", resource, waitTimeout)
		}
	}
}

// TestBreakerTimeline makes a breaker open, then close through half-open
// within one millisecond: the resource page's timeline lists the three
// transitions newest first, those of the same instant in the order they
// happened, and still does after a reload, from the server's store.
func TestBreakerTimeline(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "e2e:breaker"
	n.createRule(t, `{"name": "flaky", "kind": "circuitBreaker", "resource": "e2e:breaker",
		"strategy": "errorCount", "threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 500}`)
	if e, blk := n.engine.Entry(resource); blk == nil {
		e.Exit(engine.WithError(errors.New("failed")))
	}
	closeAfterRetry(t, n.engine, resource)

	want := []string{"closed", "halfOpen", "open"}
	order := `[...document.querySelectorAll('#breaker-timeline li[data-state]')].map((li) => li.dataset.state)`
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	for range 2 {
		tb.waitFor("three transitions", order+`.length === 3`)
		if got, err := eval[[]string](tb, order); err != nil || !slices.Equal(got, want) {
			t.Fatalf("timeline %v (%v), want %v", got, err, want)
		}
		tb.waitText("#breaker-timeline li:first-child", "half-open → closed")
		tb.waitText(`tr[data-rule="flaky"]`, "Error count")
		tb.do("reload", chromedp.Reload())
		tb.waitText("main h1", resource)
	}
}

// TestFormWords: the resource page names kinds as the rules page does, and
// an error of the API reads in the form's words, with the API's name.
func TestFormWords(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "pay-errors", "kind": "circuitBreaker", "resource": "pay",
		"strategy": "errorRatio", "threshold": 0.5, "retryTimeoutMs": 5000}`)
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/pay", "pay")
	tb.waitText(`tr[data-rule="pay-errors"]:has(input[type=checkbox])`, "Circuit breaker")

	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-name", "orders-warm")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-flow-threshold", "100")
	tb.fill("#rule-flow-tokenCalculateStrategy", "warmUp")
	tb.click("#rule-save")
	tb.waitText("#rule-form", "is required with Warm up (warmUp)")
}

// TestFlappingBreakerCollapsed makes a breaker open and close three times:
// the resource page lists the newest five of its nine changes, the charts
// stay near the top, and "Show all" lists the nine.
func TestFlappingBreakerCollapsed(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "e2e:flapping"
	n.createRule(t, `{"name": "flappy", "kind": "circuitBreaker", "resource": "e2e:flapping",
		"strategy": "errorCount", "threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 200}`)
	for range 3 {
		if e, blk := n.engine.Entry(resource); blk == nil {
			e.Exit(engine.WithError(errors.New("failed")))
		}
		closeAfterRetry(t, n.engine, resource)
	}

	items := `document.querySelectorAll('#breaker-timeline li[data-state]').length`
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	tb.waitText("#breaker-timeline-more", "Show all 9 changes")
	tb.waitFor("the newest five listed", items+` === 5`)
	tb.waitText("#breaker-timeline li:first-child", "half-open → closed")
	tb.click("#breaker-timeline-more")
	tb.waitFor("all nine listed", items+` === 9 && document.querySelector('#breaker-timeline-more').getAttribute('aria-expanded') === 'true'`)
	tb.click("#breaker-timeline-more")
	tb.waitFor("five again", items+` === 5`)
}

// TestOpenBreakerClock opens a breaker that waits a minute before its
// probe: the resource page says how long it has been open and when the
// next probe comes, counting as the seconds pass.
func TestOpenBreakerClock(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "e2e:open"
	n.createRule(t, `{"name": "stuck", "kind": "circuitBreaker", "resource": "e2e:open",
		"strategy": "errorCount", "threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 60000}`)
	if e, blk := n.engine.Entry(resource); blk == nil {
		e.Exit(engine.WithError(errors.New("failed")))
	}
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	clock := `(document.querySelector('tr[data-rule="stuck"] .breaker-clock')?.textContent ?? '')`
	tb.waitFor("the open breaker's clock", `/^open for \d+ s, next probe in \d+ s$/.test(`+clock+`)`)
	first, err := eval[string](tb, clock)
	if err != nil {
		t.Fatal(err)
	}
	tb.waitFor("the clock counting", clock+` !== `+js(first)+` && /^open for \d+ s, next probe in \d+ s$/.test(`+clock+`)`)
}

// TestBreakerMarks makes a breaker open, then close through half-open:
// the resource page's live and history charts each mark the three changes
// as lines across the plot, in the scheme's colours (the closed mark's
// pixels are sampled on the canvas), with a key under each chart.
func TestBreakerMarks(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "e2e:marks"
	n.createRule(t, `{"name": "flaky", "kind": "circuitBreaker", "resource": "e2e:marks",
		"strategy": "errorCount", "threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 500}`)
	if e, blk := n.engine.Entry(resource); blk == nil {
		e.Exit(engine.WithError(errors.New("failed")))
	}
	closeAfterRetry(t, n.engine, resource)

	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	for _, chart := range []string{"#live-chart", "#history-chart"} {
		tb.waitFor(chart+" marking the three changes", `document.querySelector('`+chart+`')?.dataset.marks === '3'`)
		tb.waitFor(chart+"'s key shown", `!document.querySelector('`+chart+` .chart-marks').hidden`)
		tb.waitText(chart+" .chart-marks", "circuit breaker opened, half-open, closed")
		tb.waitFor(chart+"'s closed mark drawn in its colour", `(() => {
			const canvas = document.querySelector('`+chart+` canvas');
			const hex = getComputedStyle(document.documentElement).getPropertyValue('--chart-breaker-closed').trim();
			const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
			const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
			let found = 0;
			for (let i = 0; i < data.length; i += 4) {
				if (data[i] === r && data[i + 1] === g && data[i + 2] === b) {
					found += 1;
				}
			}
			return found >= 40;
		})()`)
	}
	tb.checkAccessibility("the charts' breaker marks")
}

// TestBreakerMarksOverTheHistorysRange stores a breaker's opening of three
// days ago: the resource page's 7-day history marks it, as the server
// keeps it for as long as the metrics, while the live chart, whose marks
// are the last 24 hours' changes, does not.
func TestBreakerMarksOverTheHistorysRange(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "e2e:old-marks"
	n.createRule(t, `{"name": "flaky-before", "kind": "circuitBreaker", "resource": "e2e:old-marks",
		"strategy": "errorCount", "threshold": 5, "minRequestAmount": 5, "retryTimeoutMs": 500}`)
	if e, blk := n.engine.Entry(resource); blk == nil {
		e.Exit()
	}
	threeDaysAgo := time.Now().Add(-72 * time.Hour).UnixMilli()
	if err := n.store.AddBreakerTransitions(t.Context(), []store.BreakerTransition{
		{AtMs: threeDaysAgo, Rule: "flaky-before", Resource: resource, From: "closed", To: "open"},
	}); err != nil {
		t.Fatal(err)
	}

	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource)+"?range=7d", resource)
	tb.waitFor("the 7-day history marking the opening of three days ago", `document.querySelector('#history-chart')?.dataset.marks === '1'`)
	tb.waitText("#history-chart .chart-marks", "circuit breaker opened")
	tb.waitFor("the live chart marking none", `document.querySelector('#live-chart')?.dataset.marks === '0'`)
}
