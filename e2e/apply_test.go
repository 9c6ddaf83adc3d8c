package e2e

import (
	"net/http"
	"strings"
	"testing"
)

const ruleFile = `rules:
  - name: orders-qps
    kind: flow
    resource: GET:/api/orders
    threshold: 100
  - name: pay-errors
    kind: circuitBreaker
    resource: POST:/api/pay
    strategy: errorRatio
    threshold: 0.5
    retryTimeoutMs: 5000
`

// TestApplyRuleFile pastes a YAML rule file, previews the plan with a dry
// run (nothing written), applies it, then previews it again (nothing left
// to change) and loads the export back into the editor.
func TestApplyRuleFile(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/apply", "Apply a rule file")
	tb.waitFor("Apply disabled before a preview", `document.querySelector('#apply-apply').disabled`)
	tb.fill("#apply-text", ruleFile)
	tb.click("#apply-dry-run")
	tb.waitText("#plan-headline", "Dry run: applying would change 2 rules")
	tb.waitText("#plan-created", "pay-errors")
	tb.waitText("#plan-updated", "threshold50100")
	tb.screenshot("apply-plan")
	if status, _ := n.call(t, http.MethodGet, "/rules/2", nil); status != http.StatusNotFound {
		t.Fatalf("after the dry run, GET /rules/2 = %d, want 404: a dry run writes nothing", status)
	}

	tb.click("#apply-apply")
	tb.waitText("dialog[open]", "As previewed: 1 created, 1 updated.")
	tb.fill(`dialog[open] input[data-role="reason"]`, "from the e2e test")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#plan-headline", "Applied: 2 rules changed")
	if got := n.revisions(t, 2)[0].Reason; got != "from the e2e test" {
		t.Errorf("pay-errors' newest revision has the reason %q, want the one given in the dialog", got)
	}
	if r := n.rule(t, 1); *r.Threshold != 100 {
		t.Errorf("orders-qps threshold = %v after apply, want 100", *r.Threshold)
	}
	if r := n.rule(t, 2); r.Name != "pay-errors" || r.Kind != "circuitBreaker" {
		t.Errorf("rule 2 = %s (%s), want pay-errors (circuitBreaker)", r.Name, r.Kind)
	}

	tb.click("#apply-dry-run")
	tb.waitText("#plan-headline", "the server already matches the file")

	tb.click("#export-edit")
	// The export writes what differs from the defaults, kind first (the
	// file has name first): probeNum (1) was not in the file, and is not
	// in the export.
	tb.waitFor("the export in the editor", `document.querySelector('#apply-text').value.includes('- kind: circuitBreaker')`)
	if got := tb.value("#apply-text"); !strings.Contains(got, "- kind: circuitBreaker\n    name: pay-errors") || strings.Contains(got, "probeNum") {
		t.Errorf("exported YAML lacks the breaker, or writes its defaults:\n%s", got)
	}

	// A bad file: the API's errors, each naming its rule and field.
	tb.fill("#apply-text", "rules:\n  - name: bad\n    kind: flow\n    resource: x\n    threshold: -1\n")
	tb.click("#apply-dry-run")
	tb.waitText("main [role=alert]", "rules[0].threshold")
}

// TestViewerPreviewsOnly previews a rule file as a viewer, which the API
// allows (a dry run writes nothing), and is never offered to apply it.
func TestViewerPreviewsOnly(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	if status, body := n.call(t, http.MethodPost, "/users", `{"username": "victor", "role": "viewer", "password": "viewer-password"}`); status != http.StatusCreated {
		t.Fatalf("create the viewer: %d %s", status, body)
	}
	tb := newTab(t, n.url)
	tb.loginAs("victor", "viewer-password")
	tb.visit("/apply", "Apply a rule file")
	tb.waitText("main .alert.warn", "can preview a rule file and export rules, but not apply them")
	tb.fill("#apply-text", ruleFile)
	tb.click("#apply-dry-run")
	tb.waitText("#plan-headline", "Dry run: applying would change 2 rules")
	tb.waitFor("Apply still disabled", `document.querySelector('#apply-apply').disabled`)
	if status, body := n.call(t, http.MethodGet, "/rules", nil); status != http.StatusOK || !strings.Contains(string(body), `"total":0`) {
		t.Fatalf("rules after a viewer's preview = %d %s, want none", status, body)
	}
}

// TestApplyOnlyWhatWasPreviewed changes the file after its preview in a
// way the page hears nothing of (a script setting the text): Apply asks
// for a new preview instead of applying a plan nobody saw.
func TestApplyOnlyWhatWasPreviewed(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/apply", "Apply a rule file")
	tb.fill("#apply-text", ruleFile)
	tb.click("#apply-dry-run")
	tb.waitText("#plan-headline", "Dry run: applying would change 2 rules")

	changed := strings.Replace(ruleFile, "threshold: 100", "threshold: 1", 1)
	if _, err := eval[bool](tb, "(document.querySelector('#apply-text').value = "+js(changed)+", true)"); err != nil {
		t.Fatal(err)
	}
	tb.click("#apply-apply")
	tb.waitText("main [role=alert]", "preview it again, then apply")
	tb.waitFor("Apply disabled", `document.querySelector('#apply-apply').disabled && !document.querySelector('dialog')`)
	if status, body := n.call(t, http.MethodGet, "/rules", nil); status != http.StatusOK || !strings.Contains(string(body), `"total":0`) {
		t.Fatalf("rules after Apply of an unpreviewed file = %d %s, want none", status, body)
	}

	tb.click("#apply-dry-run")
	tb.waitText("#plan-headline", "Dry run: applying would change 2 rules")
	tb.click("#apply-apply")
	tb.click(`dialog[open] button[data-action="confirm"]`)
	tb.waitText("#plan-headline", "Applied: 2 rules changed")
	if r := n.rule(t, 1); *r.Threshold != 1 {
		t.Fatalf("orders-qps threshold = %v, want the previewed 1", *r.Threshold)
	}
}
