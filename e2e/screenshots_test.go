package e2e

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/store"
)

// TestEveryPage visits every page of the console on a server running the
// demo: each must render without a script error. With -update-screenshots
// it also writes the pictures in docs/screenshots that the README shows.
func TestEveryPage(t *testing.T) {
	t.Parallel()
	const orders, payments = "demo:GET /orders", "demo:POST /payments"
	n := startNode(t, nodeConfig{demo: true, seed: func(t *testing.T, st *store.Store) {
		seedHistory(t, st, orders, 24*time.Hour)
		seedHistory(t, st, payments, 24*time.Hour)
	}})
	tb := newTab(t, n.url)
	tb.login()
	tb.waitFor("the demo banner", `!document.querySelector('#demo-banner').hidden`)
	tb.waitText(`tr[data-resource="demo:GET /orders"]`, "demo")
	if *updateScreenshots {
		// Let the sparklines and the live chart gather a few seconds.
		tb.waitFor("some seconds of live points", `Number(document.querySelector('tr[data-resource="demo:GET /orders"] .spark')?.dataset.points ?? 0) >= 12`)
	}
	tb.screenshot("overview")

	// The payments breaker opens on failures, as in the demo's bad spells.
	failUntilOpen(t, n.engine, payments)
	tb.visit("/resources/"+url.PathEscape(payments)+"?range=24h", payments)
	tb.waitText("#breaker-timeline", "closed → open")
	tb.waitFor("the stored history", `Number(document.querySelector('#history-chart')?.dataset.traffic ?? 0) > 0`)
	tb.waitFor("live points", `Number(document.querySelector('#live-chart')?.dataset.points ?? 0) > 0`)
	tb.screenshot("resource")

	tb.visit("/rules", "Rules")
	tb.waitText(`tr[data-rule="demo-orders-qps"]`, "demo")
	tb.screenshot("rules")

	tb.visit("/rules/new?kind=circuitBreaker&resource="+url.QueryEscape(payments), "New rule")
	tb.waitFor("the breaker's fields only", `!document.querySelector('fieldset[data-kind="circuitBreaker"]').hidden && document.querySelector('fieldset[data-kind="flow"]').hidden`)
	tb.fill("#rule-cb-strategy", "slowRequestRatio")
	tb.waitFor("the slow-call field", `!document.querySelector('#rule-cb-maxAllowedRtMs').closest('.field').hidden`)
	tb.fill("#rule-cb-threshold", "0.4")
	tb.fill("#rule-cb-maxAllowedRtMs", "300")
	tb.screenshot("rule-form-breaker")
	tb.click("#rule-save")
	tb.waitText("#rule-cb-retryTimeoutMs-error", "is required")
	tb.fill("#rule-cb-retryTimeoutMs", "10000")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText(`tr[data-rule="circuitbreaker-demo-post-payments"]`, "slow (> 300 ms) ratio > 0.4")

	tb.visit("/rules/1/history", "History of demo-orders-qps")
	tb.waitText(`li[data-version="1"]`, "seeded by sluice --demo")

	tb.visit("/apply", "Apply a rule file")
	tb.click("#export-edit")
	tb.waitFor("the export in the editor", `document.querySelector('#apply-text').value.includes('demo-orders-qps')`)
	tb.click("#apply-dry-run")
	tb.waitText("#plan-headline", "the server already matches the file")

	tb.visit("/tokens", "API tokens")
	tb.fill("#token-name", "ci-deploy")
	tb.click("#token-create")
	tb.waitText("#token-secret-box", "shown only this once")
	tb.waitText("#token-secret", "slc_")
	tb.waitText(`tr[data-token="ci-deploy"]`, "editor")
	tb.screenshot("tokens")

	tb.visit("/users", "Users")
	tb.fill("#user-username", "alice")
	tb.fill("#user-password", "short")
	tb.click("#user-form button[type=submit]")
	tb.waitText("#user-password-error", "must be 10 to 72 bytes long")
	tb.fill("#user-password", "correct horse battery")
	tb.click("#user-form button[type=submit]")
	tb.waitText(`tr[data-user="alice"]`, "alice")
	tb.screenshot("users")

	tb.visit("/account", "Your account")
	tb.waitText("main", "Logged in as admin")

	// The same console on a phone.
	tb.do("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	tb.visit("/", "Overview")
	tb.fill("#overview-search", "demo")
	tb.waitFor("only the demo's resources", `document.querySelectorAll('tbody tr[data-resource]').length === 5`)
	if *updateScreenshots {
		// A sparkline is drawn once in sight: the page is scrolled through,
		// as a person would, for the whole page's picture.
		ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(async () => {
			for (const el of document.querySelectorAll('.spark')) {
				el.scrollIntoView();
				await new Promise((resolve) => setTimeout(resolve, 200));
			}
			scrollTo(0, 0);
			return true;
		})()`, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		tb.waitFor("every sparkline drawn", `[...document.querySelectorAll('.spark')].every((el) => el.querySelector('canvas'))`)
	}
	tb.screenshot("overview-phone")
}
