package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/server/rules"
)

// TestRuleLifecycle manages one rule through the console the way a person
// would: create it with the form (after a validation error shown next to
// the field), edit it, lose a race with a second tab and recover from the
// 412, read the history and roll back.
func TestRuleLifecycle(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	// Create, with a bad threshold first: the API's message sits next to
	// the field.
	tb.visit("/rules", "Rules")
	tb.click("#new-rule")
	tb.waitText("main h1", "New rule")
	tb.fill("#rule-name", "orders-qps")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-flow-threshold", "-5")
	tb.fill("#rule-reason", "launch")
	tb.click("#rule-save")
	tb.waitText("#rule-flow-threshold-error", "must be >= 0")
	tb.waitFor("the threshold marked invalid", `document.querySelector('#rule-flow-threshold').getAttribute('aria-invalid') === 'true'`)
	tb.screenshot("rule-form-error")
	tb.fill("#rule-flow-threshold", "100")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText(`tr[data-rule="orders-qps"]`, "100 per second")
	if r := n.rule(t, 1); r.Name != "orders-qps" || *r.Threshold != 100 || r.Version != 1 {
		t.Fatalf("created rule = %s v%d threshold %v, want orders-qps v1 threshold 100", r.Name, r.Version, *r.Threshold)
	}

	// Edit: throttle it, which shows the queueing field.
	tb.click(`tr[data-rule="orders-qps"] th a`)
	tb.waitText("main h1", "Edit orders-qps")
	tb.waitFor("the maximum wait hidden for reject", `document.querySelector('#rule-flow-maxQueueingTimeMs').closest('.field').hidden`)
	tb.fill("#rule-flow-controlBehavior", "throttling")
	tb.waitFor("the maximum wait shown for throttling", `!document.querySelector('#rule-flow-maxQueueingTimeMs').closest('.field').hidden`)
	tb.fill("#rule-flow-maxQueueingTimeMs", "250")
	tb.fill("#rule-flow-threshold", "150")
	tb.click("#rule-save")
	tb.waitText(`tr[data-rule="orders-qps"]`, "150 per second, spaced evenly (wait up to 250 ms)")

	// A second tab saves first; the first tab's save is refused (412),
	// explained, and recovered by loading the current version.
	tb.visit("/rules/1/edit", "Edit orders-qps")
	tb.waitFor("the form filled in", `document.querySelector('#rule-flow-threshold').value === '150'`)
	other := tb.another()
	other.do("open the rule in a second tab", chromedp.Navigate(n.url+"/#/rules/1/edit"))
	other.waitText("main h1", "Edit orders-qps")
	other.waitFor("the form filled in", `document.querySelector('#rule-flow-threshold').value === '150'`)
	other.fill("#rule-flow-threshold", "175")
	other.click("#rule-save")
	other.waitText("main h1", "Rules")

	tb.fill("#rule-flow-threshold", "200")
	tb.click("#rule-save")
	tb.waitText("#conflict", "Someone else changed this rule after you opened it")
	tb.waitText("#conflict", "admin made version 3")
	tb.screenshot("rule-conflict")
	tb.click("#conflict-reload")
	tb.waitText("#conflict", "Loaded version 3, the current one")
	tb.waitFor("the focus on what replaced the button", `document.activeElement?.id === 'conflict'`)
	tb.waitText("#unsaved-values", "threshold: yours 200, now 175")
	if got := tb.value("#rule-flow-threshold"); got != "175" {
		t.Fatalf("threshold after reloading = %q, want the other tab's 175", got)
	}
	tb.fill("#rule-flow-threshold", "200")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	if r := n.rule(t, 1); r.Version != 4 || *r.Threshold != 200 {
		t.Fatalf("rule after the recovered save = v%d threshold %v, want v4 threshold 200", r.Version, *r.Threshold)
	}

	// History: every version with what it changed; roll back to the first.
	tb.visit("/rules/1/history", "History of orders-qps")
	tb.waitFor("four versions", `document.querySelectorAll('#revisions > li').length === 4`)
	tb.waitText(`li[data-version="4"]`, "threshold175200")
	tb.waitText(`li[data-version="2"]`, "controlBehaviorrejectthrottling")
	tb.waitText(`li[data-version="1"]`, "launch")
	tb.screenshot("rule-history")
	tb.click(`button[data-rollback="1"]`)
	tb.waitText("dialog[open]", "Roll back to version 1?")
	tb.fill(`dialog[open] input[data-role="reason"]`, "the old limit was right")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitFor("the rollback as version 5", `document.querySelectorAll('#revisions > li').length === 5`)
	tb.waitText(`li[data-version="5"]`, "rollback")
	tb.waitText(`li[data-version="5"]`, "the old limit was right")
	tb.waitText(`li[data-version="5"]`, "threshold200100")
	r := n.rule(t, 1)
	if r.Version != 5 || *r.Threshold != 100 || *r.ControlBehavior != "reject" {
		t.Fatalf("rule after rollback = v%d threshold %v %s, want v5 threshold 100 reject", r.Version, *r.Threshold, *r.ControlBehavior)
	}

	// Delete, after a confirmation; the history stays readable.
	tb.visit("/rules", "Rules")
	tb.click(`button[aria-label="Delete orders-qps"]`)
	tb.waitText("dialog[open]", "Delete orders-qps?")
	// What it says is true: a deleted rule has no rollback (404).
	tb.waitText("dialog[open]", "A deleted rule cannot be restored")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("main tbody", "No rules yet")
	if status, body := n.call(t, http.MethodGet, "/rules/1", nil); status != http.StatusNotFound {
		t.Fatalf("GET the deleted rule = %d %s, want 404", status, body)
	}
	tb.visit("/rules/1/history", "History of orders-qps")
	tb.waitText("main", "The rule is deleted")
	tb.waitText(`li[data-version="6"]`, "delete")
	tb.waitFor("no rollback of a deleted rule", `document.querySelectorAll('button[data-rollback]').length === 0`)
	if status, body := n.call(t, http.MethodPost, "/rules/1/rollback?toVersion=5", nil); status != http.StatusNotFound {
		t.Fatalf("rollback of the deleted rule = %d %s, want 404, as the delete dialog says", status, body)
	}
}

// TestUntouchedSaveKeepsTheRule saves rules from the form without touching
// a field: what is sent is the rule as loaded, so nothing changes — not a
// resource, an origin or a value with spaces around it (the inputs show
// them trimmed), nor the milliseconds of expiresAt (the input has none).
func TestUntouchedSaveKeepsTheRule(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Millisecond).Add(678 * time.Millisecond)
	for _, body := range []map[string]any{
		{"name": "spaced-qps", "kind": "flow", "resource": " api:spaced ", "threshold": 10, "expiresAt": expires.Format(time.RFC3339Nano)},
		{"name": "spaced-callers", "kind": "authority", "resource": "GET:/api/orders", "strategy": "allow", "origins": []string{" checkout ", "billing"}},
		{"name": "spaced-values", "kind": "hotspot", "resource": "GET:/api/orders", "paramKey": "user", "threshold": 5, "specificItems": map[string]float64{" vip ": 50}},
	} {
		if status, data := n.call(t, http.MethodPost, "/rules", body); status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", body["name"], status, data)
		}
	}
	before := []rules.APIRule{n.rule(t, 1), n.rule(t, 2), n.rule(t, 3)}
	tb := newTab(t, n.url)
	tb.login()
	for _, r := range before {
		tb.visit(fmt.Sprintf("/rules/%d/edit", r.ID), "Edit "+r.Name)
		tb.waitFor("the form filled in", `document.querySelector('main .muted')?.textContent.startsWith('Version')`)
		tb.click("#rule-save")
		tb.waitText("main h1", "Rules")
		after := n.rule(t, r.ID)
		if after.Resource != r.Resource {
			t.Errorf("%s: resource %q after an untouched save, want %q", r.Name, after.Resource, r.Resource)
		}
		if (after.ExpiresAt == nil) != (r.ExpiresAt == nil) || after.ExpiresAt != nil && !after.ExpiresAt.Equal(*r.ExpiresAt) {
			t.Errorf("%s: expiresAt %v after an untouched save, want %v", r.Name, after.ExpiresAt, r.ExpiresAt)
		}
		if r.Origins != nil && !slices.Equal(*after.Origins, *r.Origins) {
			t.Errorf("%s: origins %q after an untouched save, want %q", r.Name, *after.Origins, *r.Origins)
		}
		if r.SpecificItems != nil && !maps.Equal(*after.SpecificItems, *r.SpecificItems) {
			t.Errorf("%s: specificItems %v after an untouched save, want %v", r.Name, *after.SpecificItems, *r.SpecificItems)
		}
	}
	if want := expires; before[0].ExpiresAt == nil || !before[0].ExpiresAt.Equal(want) {
		t.Fatalf("the server stored expiresAt %v, want %v: the test needs its milliseconds", before[0].ExpiresAt, want)
	}
}

// TestNumberFieldsTakeDecimalsOnly types numbers the way JavaScript reads
// them but JSON does not (0x10, 0b101, Infinity): each is a field error
// and nothing is sent, where they were sent as 16 and 5.
func TestNumberFieldsTakeDecimalsOnly(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-name", "orders-qps")
	tb.fill("#rule-resource", "GET:/api/orders")
	for _, typed := range []string{"0x10", "0b101", "Infinity", "1_000"} {
		tb.fill("#rule-flow-threshold", typed)
		tb.click("#rule-save")
		tb.waitText("#rule-flow-threshold-error", "Not a number: write it in decimal")
		tb.waitFor("the focus on the threshold", `document.activeElement?.id === 'rule-flow-threshold'`)
	}

	const items = "#rule-hotspot-specificItems"
	tb.fill("#rule-kind", "hotspot")
	tb.fill("#rule-hotspot-paramKey", "user")
	tb.fill("#rule-hotspot-threshold", "1e1")
	tb.click(items + "-add")
	tb.fill(items+` li[data-row="0"] input[data-col="value"]`, "vip")
	tb.fill(items+` li[data-row="0"] input[data-col="threshold"]`, "0b101")
	tb.click("#rule-save")
	tb.waitText(items+` li[data-row="0"] .field-error`, "in decimal")
	if status, body := n.call(t, http.MethodGet, "/rules", nil); status != http.StatusOK || !strings.Contains(string(body), `"total":0`) {
		t.Fatalf("rules after the refused saves = %d %s, want none", status, body)
	}

	tb.fill(items+` li[data-row="0"] input[data-col="threshold"]`, "2.5")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	if r := n.rule(t, 1); *r.Threshold != 10 || (*r.SpecificItems)["vip"] != 2.5 {
		t.Fatalf("saved threshold %v, specificItems %v; want 10 and vip 2.5", *r.Threshold, *r.SpecificItems)
	}
}

// TestSaveRuleDeletedMeanwhile saves a rule that someone else deleted
// after the form was opened: the form says so, instead of the API's bare
// 404, and creates it again with the form's values when asked.
func TestSaveRuleDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 10}`)
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/rules/1/edit", "Edit orders-qps")
	tb.waitFor("the form filled in", `document.querySelector('#rule-flow-threshold').value === '10'`)
	if status, body := n.call(t, http.MethodDelete, "/rules/1", nil); status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", status, body)
	}

	tb.fill("#rule-flow-threshold", "20")
	tb.click("#rule-save")
	tb.waitText("#conflict", "Someone else deleted this rule after you opened it")
	tb.waitText("#conflict", "(delete)")
	tb.waitFor("the focus on Create it again", `document.activeElement?.id === 'conflict-recreate'`)
	tb.waitFor("Back to the rules offered", `document.querySelector('#conflict-list')?.getAttribute('href') === '#/rules'`)
	tb.click("#conflict-recreate")
	tb.waitText("main h1", "Rules")
	tb.waitText(`tr[data-rule="orders-qps"]`, "20 per second")
	if r := n.rule(t, 2); r.Name != "orders-qps" || *r.Threshold != 20 || r.Version != 1 {
		t.Fatalf("rule 2 = %s v%d threshold %v, want orders-qps v1 with the form's threshold 20", r.Name, r.Version, *r.Threshold)
	}
}

// TestUnsavedChangesPrompt leaves a rule form with changes not saved: the
// console asks first, whether by its Cancel, by its menu, or by the
// browser unloading the page; an untouched form is left at once.
func TestUnsavedChangesPrompt(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 10}`)
	tb := newTab(t, n.url)
	tb.login()

	// Untouched: no question.
	tb.visit("/rules/1/edit", "Edit orders-qps")
	tb.waitFor("the form filled in", `document.querySelector('#rule-flow-threshold').value === '10'`)
	tb.visit("/rules", "Rules")
	tb.waitFor("no dialog", `!document.querySelector('dialog')`)

	tb.visit("/rules/1/edit", "Edit orders-qps")
	tb.waitFor("the form filled in", `document.querySelector('#rule-flow-threshold').value === '10'`)
	tb.fill("#rule-flow-threshold", "20")
	unloadAsks := `(() => {
		const e = new Event('beforeunload', {cancelable: true});
		window.dispatchEvent(e);
		return e.defaultPrevented;
	})()`
	tb.waitFor("the browser asked before unloading", unloadAsks)

	// Cancel, then stay: the form and its address stay as they were.
	tb.click(`#rule-form .actions a[href="#/rules"]`)
	tb.waitText("dialog[open]", "Leave without saving?")
	tb.click(`dialog[open] button[data-action="cancel"]`)
	tb.waitFor("the dialog gone", `!document.querySelector('dialog')`)
	tb.waitText("main h1", "Edit orders-qps")
	if got := tb.value("#rule-flow-threshold"); got != "20" {
		t.Fatalf("after staying the threshold reads %q, want the unsaved 20", got)
	}
	tb.waitFor("the address of the form", `location.hash === '#/rules/1/edit'`)

	// The menu, then leave: nothing saved.
	tb.click(`#nav a[href="#/rules"]`)
	tb.waitText("dialog[open]", "Leave without saving?")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("main h1", "Rules")
	if r := n.rule(t, 1); *r.Threshold != 10 || r.Version != 1 {
		t.Fatalf("rule after leaving = v%d threshold %v, want v1 threshold 10", r.Version, *r.Threshold)
	}
	tb.waitFor("the page unloads freely again", `!`+unloadAsks)
}
