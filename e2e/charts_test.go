package e2e

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// drive sends calls to resource through the engine every tick until the
// test ends, so that the live stream has something to show.
func drive(t *testing.T, eng *engine.Engine, resource string, perTick int) {
	t.Helper()
	driveRt(t, eng, resource, perTick, 12)
}

// driveRt drives as drive does, each call taking rtMs milliseconds.
func driveRt(t *testing.T, eng *engine.Engine, resource string, perTick int, rtMs int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for range perTick {
					if e, blk := eng.Entry(resource); blk == nil {
						e.Exit(engine.WithRtMs(rtMs))
					}
				}
			}
		}
	}()
}

// TestLiveChartAndBreaker opens a resource with traffic: its live chart
// receives points from the metric stream, and a circuit breaker that opens
// shows its state and the transition in the timeline.
func TestLiveChartAndBreaker(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "e2e:live"
	for _, rule := range []string{
		`{"name": "live-qps", "kind": "flow", "resource": "e2e:live", "threshold": 40}`,
		`{"name": "live-breaker", "kind": "circuitBreaker", "resource": "e2e:live", "strategy": "errorCount", "threshold": 3, "minRequestAmount": 1, "retryTimeoutMs": 600000}`,
	} {
		if status, body := n.call(t, http.MethodPost, "/rules", rule); status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
	}
	drive(t, n.engine, resource, 2)

	tb := newTab(t, n.url)
	tb.login()
	tb.waitText(`tr[data-resource="e2e:live"]`, "e2e:live")
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	tb.waitFor("live points", `Number(document.querySelector('#live-chart')?.dataset.points ?? 0) >= 3`)
	tb.waitText(`#breaker-timeline`, "live-breaker is closed")

	failUntilOpen(t, n.engine, resource)
	tb.waitText(`#breaker-timeline li[data-state="open"]`, "closed → open")
	tb.waitText(`tr[data-rule="live-breaker"]`, "open")
	tb.waitText("main", "Rules")

	// The quick switch disables a rule once confirmed.
	tb.click(`input[data-rule="live-qps"]`)
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#toast", "live-qps is now disabled")
	if r := n.rule(t, 1); r.Enabled {
		t.Errorf("live-qps is still enabled after the switch")
	}
}

// failUntilOpen sends failing calls to resource until one of its circuit
// breakers opens.
func failUntilOpen(t *testing.T, eng *engine.Engine, resource string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		for _, b := range eng.Breakers() {
			if b.Resource == resource && b.State == engine.BreakerOpen {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no breaker of %s opened in %v", resource, waitTimeout)
		}
		if e, blk := eng.Entry(resource); blk == nil {
			e.Exit(engine.WithError(errors.New("failed")))
		}
	}
}

// TestHistoryChart opens a resource whose minutes were stored before the
// server started: the history chart draws them at a step that fits the
// range.
func TestHistoryChart(t *testing.T) {
	t.Parallel()
	const resource = "e2e:seeded"
	n := startNode(t, nodeConfig{seed: func(t *testing.T, st *store.Store) {
		seedHistory(t, st, resource, 24*time.Hour)
	}})
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource)+"?range=24h", resource)
	tb.waitText("#history-note", "steps of 1 min")
	tb.waitFor("the stored minutes on the chart", `Number(document.querySelector('#history-chart')?.dataset.traffic ?? 0) >= 1400`)

	tb.click(`#history-range label[for$="-7d"]`)
	tb.waitText("#history-note", "steps of 5 min")
	tb.click(`#history-range label[for$="-30d"]`)
	tb.waitText("#history-note", "steps of 5 min")
	tb.waitFor("24 h of stored minutes in 5-minute steps", `Number(document.querySelector('#history-chart')?.dataset.traffic ?? 0) >= 288`)
}

// seedHistory stores a minute row for every minute of the span before now,
// as the flusher would have: a daily swing with faster ripples, blocked
// calls above a cap, a few errors.
func seedHistory(t *testing.T, st *store.Store, resource string, span time.Duration) {
	t.Helper()
	end := time.Now().Truncate(time.Minute)
	var rows []store.MinuteDelta
	for at := end.Add(-span); at.Before(end); at = at.Add(time.Minute) {
		day := float64(at.Unix()%86400) / 86400
		offered := 3000 + 1800*math.Sin(2*math.Pi*day) + 600*math.Sin(2*math.Pi*day*19)
		pass := int64(min(offered, 4200))
		block := int64(offered) - pass
		rows = append(rows, store.MinuteDelta{
			Resource: resource, StartMs: at.UnixMilli(),
			Counts: engine.Counts{
				Calls:   engine.Calls{Pass: pass, Block: block, Complete: pass, Error: pass / 150},
				RtSumMs: pass * int64(25+15*math.Sin(2*math.Pi*day*7)), MinRtMs: 3, MaxRtMs: 240, MaxConcurrency: 12,
			},
		})
	}
	if err := st.AddMetrics(context.Background(), rows); err != nil {
		t.Fatalf("seed the history: %v", err)
	}
}

// TestHistoryCustomRangeInURL shows a custom range of a resource's
// history, then reloads the page: the range is in the URL, so the same
// range is shown again.
func TestHistoryCustomRangeInURL(t *testing.T) {
	t.Parallel()
	const resource = "e2e:seeded"
	n := startNode(t, nodeConfig{seed: func(t *testing.T, st *store.Store) {
		seedHistory(t, st, resource, 24*time.Hour)
	}})
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	tb.waitText("#history-note", "steps of")

	to := time.Now().Add(-time.Hour).Truncate(time.Minute)
	from := to.Add(-2 * time.Hour)
	const layout = "2006-01-02T15:04"
	tb.click(`#history-range label[for$="-custom"]`)
	tb.fill("#history-from", from.Format(layout))
	tb.fill("#history-to", to.Format(layout))
	tb.click(`#history-custom button[type=submit]`)
	tb.waitText("#history-note", "120 steps of 1 min")
	tb.waitFor("the range in the URL", `location.hash.includes('range=custom') && location.hash.includes('from=') && location.hash.includes('to=')`)

	tb.do("reload the page", chromedp.Reload())
	tb.waitText("main h1", resource)
	tb.waitFor("Custom chosen", `document.querySelector('#history-range input[value="custom"]')?.checked`)
	tb.waitText("#history-note", "120 steps of 1 min")
	if got := tb.value("#history-from"); got != from.Format(layout) {
		t.Fatalf("from after the reload = %q, want %q", got, from.Format(layout))
	}
	if got := tb.value("#history-to"); got != to.Format(layout) {
		t.Fatalf("to after the reload = %q, want %q", got, to.Format(layout))
	}
}
