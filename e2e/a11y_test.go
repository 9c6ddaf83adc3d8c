package e2e

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/store"
)

// axeSource is axe-core, vendored from the npm registry with its licence
// and version in testdata/axe-core.
//
//go:embed testdata/axe-core/axe.min.js
var axeSource string

// axeViolation is one rule that axe found broken, with where.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAccessibility runs axe-core on the page as it stands and fails the
// test on every serious or critical violation.
func (tb *tab) checkAccessibility(what string) {
	tb.t.Helper()
	if ok, err := eval[bool](tb, "typeof window.axe === 'object'"); err != nil || !ok {
		if _, err := eval[bool](tb, axeSource+"\n;true"); err != nil {
			tb.t.Fatalf("%s: inject axe-core: %v", tb.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	report, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then((r) => {
		const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
		return JSON.stringify(bad.map((v) => ({
			id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.map((n) => n.target.join(' ') + ' — ' + (n.failureSummary ?? '').replaceAll('\n', ' ')),
		})));
	})`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%s: run axe on %s: %v", tb.name, what, err)
	}
	var violations []axeViolation
	if err := json.Unmarshal([]byte(report), &violations); err != nil {
		tb.t.Fatal(err)
	}
	for _, v := range violations {
		tb.t.Errorf("%s: %s: %s (%s): %s", what, v.ID, v.Help, v.Impact, strings.Join(v.Nodes, "; "))
	}
}

// TestAccessibility runs axe-core on every page of the console, in the
// light and in the dark colour scheme, with data on them (the demo's), and
// on the confirmation dialog: no serious or critical violation.
func TestAccessibility(t *testing.T) {
	t.Parallel()
	const orders = "demo:GET /orders"
	n := startNode(t, nodeConfig{demo: true, seed: func(t *testing.T, st *store.Store) {
		seedHistory(t, st, orders, 2*time.Hour)
	}})
	// Disabled: the endpoint is never posted to.
	if status, data := n.call(t, "POST", "/webhooks", `{"url":"https://203.0.113.10/hook","events":["*"],"enabled":false}`); status != 201 {
		t.Fatalf("create a webhook: %d %s", status, data)
	}
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			tb := newTab(t, n.url)
			tb.colorScheme(scheme)
			tb.do("open the login page", chromedp.Navigate(n.url+"/#/login"), chromedp.WaitVisible(chromedp.CSS("#login-username")))
			tb.checkAccessibility("login")
			tb.login()
			tb.waitText(`tr[data-resource="demo:GET /orders"]`, "demo")
			tb.checkAccessibility("overview")

			pages := []struct{ route, heading, ready string }{
				{"/rules", "Rules", `document.querySelector('tr[data-rule="demo-orders-qps"]')`},
				{"/rules/new", "New rule", `document.querySelector('#rule-name')`},
				{"/rules/new?kind=hotspot", "New rule", `!document.querySelector('fieldset[data-kind="hotspot"]').hidden && (document.querySelector('#rule-hotspot-specificItems li') ?? document.querySelector('#rule-hotspot-specificItems-add').click())`},
				{"/rules/new?kind=authority", "New rule", `!document.querySelector('fieldset[data-kind="authority"]').hidden && document.querySelector('#rule-authority-origins li')`},
				{"/rules/1/edit", "Edit demo-orders-qps", `document.querySelector('#rule-name').value`},
				{"/rules/1/history", "History of demo-orders-qps", `document.querySelector('li[data-version="1"]')`},
				{"/resources/" + url.PathEscape(orders), orders, `Number(document.querySelector('#history-chart')?.dataset.traffic ?? 0) > 0`},
				{"/apply", "Apply a rule file", `document.querySelector('#apply-text')`},
				{"/instances", "Instances", `document.querySelector('#instances tr:not(.loading)')`},
				{"/tokens", "API tokens", `document.querySelector('tr[data-token]')`},
				{"/users", "Users", `document.querySelector('main tbody tr:not(.state-row)')`},
				{"/webhooks", "Webhooks", `document.querySelector('tr[data-webhook]')`},
				{"/account", "Your account", `document.querySelector('#password-form')`},
			}
			for _, p := range pages {
				tb.visit(p.route, p.heading)
				tb.waitFor(p.route+" drawn", p.ready)
				tb.checkAccessibility(fmt.Sprintf("%s (%s)", p.route, scheme))
			}

			tb.visit("/rules", "Rules")
			tb.click(`button[aria-label="Delete demo-orders-qps"]`)
			tb.waitText("dialog[open]", "Delete demo-orders-qps?")
			tb.checkAccessibility("the confirmation dialog (" + scheme + ")")
			tb.click(`dialog[open] button[data-action="cancel"]`)
		})
	}
}
