package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// itemInput is the selector of one input of a row of an items editor:
// editor is its id, row counts from 0, col is value, threshold or name.
func itemInput(editor string, row int, col string) string {
	return fmt.Sprintf(`#%s li[data-row="%d"] input[data-col="%s"]`, editor, row, col)
}

// TestHotspotAndAuthorityForms creates a hotspot rule with two thresholds
// per value and an authority rule with two origins through the forms, after
// the API refused a bad threshold and a bad origin, each shown at its row,
// and checks what the API stored.
func TestHotspotAndAuthorityForms(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-kind", "hotspot")
	tb.waitFor("the hotspot fields shown", `!document.querySelector('fieldset[data-kind="hotspot"]').hidden && document.querySelector('fieldset[data-kind="flow"]').hidden`)
	tb.fill("#rule-name", "orders-per-user")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-hotspot-paramKey", "header:X-User")
	tb.fill("#rule-hotspot-threshold", "10")
	const items = "rule-hotspot-specificItems"
	tb.click("#" + items + "-add")
	tb.click("#" + items + "-add")
	tb.fill(itemInput(items, 0, "value"), "vip")
	tb.fill(itemInput(items, 0, "threshold"), "100")
	tb.fill(itemInput(items, 1, "value"), "bot")
	tb.fill(itemInput(items, 1, "threshold"), "-1")
	tb.click("#rule-save")
	tb.waitText("#"+items+` li[data-row="1"] .field-error`, `"bot"`)
	tb.waitText("#"+items+` li[data-row="1"] .field-error`, "must be >= 0")
	tb.waitFor("the bad row marked invalid", fmt.Sprintf(`document.querySelector(%s).getAttribute('aria-invalid') === 'true'`, js(itemInput(items, 1, "threshold"))))
	tb.waitFor("the good row not marked", fmt.Sprintf(`!document.querySelector(%s).hasAttribute('aria-invalid')`, js(itemInput(items, 0, "threshold"))))
	tb.checkAccessibility("the hotspot form with an error at a row")

	// A value twice is caught before anything is sent.
	tb.fill(itemInput(items, 1, "value"), "vip")
	tb.fill(itemInput(items, 1, "threshold"), "5")
	tb.click("#rule-save")
	tb.waitText("#"+items+` li[data-row="1"] .field-error`, "listed twice")
	if status, body := n.call(t, http.MethodGet, "/rules", nil); status != http.StatusOK || !strings.Contains(string(body), `"total":0`) {
		t.Fatalf("rules after the refused saves = %d %s, want none", status, body)
	}
	tb.fill(itemInput(items, 1, "value"), "bot")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText(`tr[data-rule="orders-per-user"]`, "per value of header:X-User: 10 per second")
	hot := n.rule(t, 1)
	if hot.Kind != "hotspot" || *hot.ParamKey != "header:X-User" || *hot.Threshold != 10 {
		t.Fatalf("hotspot rule = %s %v %v, want hotspot header:X-User 10", hot.Kind, hot.ParamKey, hot.Threshold)
	}
	if got, want := *hot.SpecificItems, map[string]float64{"vip": 100, "bot": 5}; !maps.Equal(got, want) {
		t.Fatalf("specificItems = %v, want %v", got, want)
	}

	// Editing shows the stored rows, and removing one removes it.
	tb.click(`tr[data-rule="orders-per-user"] th a`)
	tb.waitText("main h1", "Edit orders-per-user")
	tb.waitFor("two rows filled in", fmt.Sprintf(`document.querySelectorAll('#%s li').length === 2`, items))
	tb.click(fmt.Sprintf(`#%s li[data-row="0"] button`, items))
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	if got := *n.rule(t, 1).SpecificItems; len(got) != 1 {
		t.Fatalf("specificItems after removing a row = %v, want one entry", got)
	}

	// Authority: two origins, the second refused by the API first.
	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-kind", "authority")
	tb.fill("#rule-name", "orders-callers")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-authority-strategy", "allow")
	const origins = "rule-authority-origins"
	tb.fill(itemInput(origins, 0, "name"), "checkout")
	tb.click("#" + origins + "-add")
	tb.fill(itemInput(origins, 1, "name"), strings.Repeat("x", 257))
	tb.click("#rule-save")
	tb.waitText("#"+origins+` li[data-row="1"] .field-error`, "must be 1-256 characters")
	tb.waitFor("the first origin not marked", fmt.Sprintf(`!document.querySelector(%s).hasAttribute('aria-invalid')`, js(itemInput(origins, 0, "name"))))
	tb.fill(itemInput(origins, 1, "name"), "billing")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText(`tr[data-rule="orders-callers"]`, "who may call: only checkout, billing")
	auth := n.rule(t, 2)
	if auth.Kind != "authority" || *auth.Strategy != "allow" || !slices.Equal(*auth.Origins, []string{"checkout", "billing"}) {
		t.Fatalf("authority rule = %s %v %v, want authority allow [checkout billing]", auth.Kind, auth.Strategy, auth.Origins)
	}
}

// TestRuleExpiry shows when rules expire: "expires in" for one that will,
// Expired for one that has; and sets and clears expiresAt in the form.
func TestRuleExpiry(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	now := time.Now()
	for _, r := range []struct {
		name string
		at   time.Time
	}{{"past-incident", now.Add(-time.Hour)}, {"tonight-only", now.Add(3*time.Hour + 20*time.Minute + 30*time.Second)}} {
		body := map[string]any{"name": r.name, "kind": "flow", "resource": "GET:/api/orders", "threshold": 5, "expiresAt": r.at.UTC().Format(time.RFC3339)}
		if status, data := n.call(t, http.MethodPost, "/rules", body); status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", r.name, status, data)
		}
	}
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/rules", "Rules")
	tb.waitText(`tr[data-rule="past-incident"] [data-expiry="expired"]`, "Expired")
	tb.waitText(`tr[data-rule="tonight-only"] [data-expiry="pending"]`, "expires in 3 h 20 min")
	tb.screenshot("rules-expiry")

	// The form shows the time and how far it is; Clear removes it.
	tb.visit("/rules/2/edit", "Edit tonight-only")
	tb.waitFor("the expiry filled in", `document.querySelector('#rule-expiresAt').value !== ''`)
	tb.waitText("#rule-expiresAt-in", "Expires in 3 h 20 min")
	tb.waitText("main .muted", "expires in 3 h 20 min")
	tb.click("#rule-expiresAt-clear")
	tb.waitText("#rule-expiresAt-in", "Never expires")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	if r := n.rule(t, 2); r.ExpiresAt != nil || r.Version != 2 {
		t.Fatalf("rule after clearing = v%d expiresAt %v, want v2 without", r.Version, r.ExpiresAt)
	}

	// Set again, in the browser's zone (the tests' own).
	at := now.Add(2 * time.Hour).Truncate(time.Second)
	tb.visit("/rules/2/edit", "Edit tonight-only")
	tb.waitFor("the form filled in", `document.querySelector('#rule-flow-threshold').value === '5'`)
	tb.do("type the expiry", chromedp.WaitVisible(chromedp.CSS("#rule-expiresAt")))
	tb.fill("#rule-expiresAt", at.Format("2006-01-02T15:04:05"))
	tb.waitText("#rule-expiresAt-in", "Expires in 1 h ")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	if r := n.rule(t, 2); r.ExpiresAt == nil || !r.ExpiresAt.Equal(at) {
		t.Fatalf("expiresAt = %v, want %v", r.ExpiresAt, at)
	}
}

// TestHottestValues shows, on the resource page, the values a hotspot rule
// passed and blocked most over the last minute, from the check API's
// traffic. A server without the hot values endpoint skips it.
func TestHottestValues(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "GET:/api/orders"
	rule := map[string]any{"name": "orders-per-user", "kind": "hotspot", "resource": resource, "paramKey": "user", "threshold": 1, "statIntervalMs": 60000}
	if status, data := n.call(t, http.MethodPost, "/rules", rule); status != http.StatusCreated {
		t.Fatalf("create the hotspot rule: %d %s", status, data)
	}
	for _, user := range []string{"42", "42", "42", "42", "7"} {
		check := map[string]any{"resource": resource, "params": map[string]string{"user": user}}
		if status, data := n.call(t, http.MethodPost, "/check", check); status != http.StatusOK {
			t.Fatalf("check as user %s: %d %s", user, status, data)
		}
	}
	path := "/resources/" + url.PathEscape(resource) + "/hot-values"
	if status, _ := n.call(t, http.MethodGet, path, nil); status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		t.Skipf("GET %s answers %d: this server has no hot values", path, status)
	}

	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	panel := `#hot-values [data-rule="orders-per-user"]`
	tb.waitText(panel, "orders-per-user: per value of user")
	tb.waitFor("42 the most blocked", fmt.Sprintf(`document.querySelectorAll(%s)[1]?.querySelector('tbody tr')?.dataset.value === '42'`, js(panel+" table")))
	tb.waitText(panel+` tr[data-value="42"]`, "3")
	tb.waitText(panel, "7")
	tb.checkAccessibility("the resource page with its hottest values")
}

// TestRuleApp scopes a rule to an app through the form, after the API
// refused a bad app name at the field, and finds the app's badge in the
// list. A server whose field table has no app skips it.
func TestRuleApp(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	status, data := n.call(t, http.MethodGet, "/rules/fields", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /rules/fields: %d %s", status, data)
	}
	var fields struct {
		Envelope []struct{ Name string } `json:"envelope"`
	}
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	hasApp := false
	for _, f := range fields.Envelope {
		hasApp = hasApp || f.Name == "app"
	}
	if !hasApp {
		t.Skip("this server's rules have no app")
	}

	if status, data := n.call(t, http.MethodPost, "/rules", map[string]any{"name": "everywhere", "kind": "flow", "resource": "GET:/api/orders", "threshold": 5}); status != http.StatusCreated {
		t.Fatalf("create a rule of no app: %d %s", status, data)
	}

	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-name", "shop-orders")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-flow-threshold", "50")
	tb.fill("#rule-app", "Shop!")
	tb.click("#rule-save")
	tb.waitFor("the app marked invalid", `document.querySelector('#rule-app').getAttribute('aria-invalid') === 'true'`)
	tb.waitText("#rule-app-error", "must match")
	tb.fill("#rule-app", "shop")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText(`tr[data-rule="shop-orders"] [data-app="shop"]`, "app: shop")
	status, data = n.call(t, http.MethodGet, "/rules/2", nil)
	var stored struct {
		App string `json:"app"`
	}
	if err := json.Unmarshal(data, &stored); status != http.StatusOK || err != nil || stored.App != "shop" {
		t.Fatalf("GET /rules/2 = %d %s, want the app shop", status, data)
	}

	// The list filters by app.
	tb.waitFor("both rules listed", `document.querySelectorAll('tr[data-rule]').length === 2`)
	tb.fill("#filter-app", "shop")
	tb.waitFor("only the app's rule listed", `document.querySelectorAll('tr[data-rule]').length === 1 && document.querySelector('tr[data-rule="shop-orders"]')`)
}

// TestSystemRuleForm creates a system rule through the form: it has no
// resource, so the form leaves the resource out.
func TestSystemRuleForm(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-kind", "system")
	tb.waitFor("the system fields shown, the resource hidden",
		`!document.querySelector('fieldset[data-kind="system"]').hidden && document.querySelector('#rule-resource').closest('[hidden]') !== null`)
	tb.fill("#rule-system-metricType", "cpuUsage")
	tb.fill("#rule-system-triggerCount", "0.8")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	sys := n.rule(t, 1)
	if sys.Kind != "system" || sys.Resource != "" || sys.MetricType == nil || *sys.MetricType != "cpuUsage" || *sys.TriggerCount != 0.8 {
		t.Fatalf("system rule = %+v, want cpuUsage 0.8 on no resource", sys)
	}
	if n.engine.SystemRules()[0].Name != sys.Name {
		t.Fatalf("the server's engine runs %+v, want %s", n.engine.SystemRules(), sys.Name)
	}
}

// TestHalfTypedExpiry types a date without its time as the expiry of a
// token and of a rule: the browser holds such a date as no value at all,
// which must be a field error, not "never expires".
func TestHalfTypedExpiry(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	for _, c := range []struct {
		route, heading, input, submit string
		fill                          map[string]string
		list, name                    string
	}{
		{route: "/tokens", heading: "API tokens", input: "#token-expires", submit: "#token-create",
			fill: map[string]string{"#token-name": "ci-deploy"}, list: "/tokens", name: "ci-deploy"},
		{route: "/rules/new", heading: "New rule", input: "#rule-expiresAt", submit: "#rule-save",
			fill: map[string]string{"#rule-name": "orders-qps", "#rule-resource": "GET:/api/orders", "#rule-flow-threshold": "10"}, list: "/rules", name: "orders-qps"},
	} {
		tb.visit(c.route, c.heading)
		for sel, value := range c.fill {
			tb.fill(sel, value)
		}
		tb.do("type a date without its time", chromedp.SendKeys(chromedp.CSS(c.input), "12252030"))
		tb.waitFor("the date held as incomplete", fmt.Sprintf(`document.querySelector(%s).validity.badInput`, js(c.input)))
		tb.click(c.submit)
		tb.waitText(c.input+"-error", "Not a complete date and time")
		tb.waitFor("the expiry marked invalid", fmt.Sprintf(`document.querySelector(%s).getAttribute('aria-invalid') === 'true'`, js(c.input)))
		if status, body := n.call(t, http.MethodGet, c.list, nil); status != http.StatusOK || strings.Contains(string(body), c.name) {
			t.Fatalf("GET %s after saving a half-typed expiry = %d %s, want no %s: it must not be created", c.list, status, body, c.name)
		}
	}
}

// TestSystemRuleInTheList lists a system rule, which has no resource: it
// has a summary, no link to a resource, and its delete dialog names what
// it guards; and a flow rule's summary says whose calls it limits.
func TestSystemRuleInTheList(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	for _, body := range []string{
		`{"name": "cpu-guard", "kind": "system", "metricType": "cpuUsage", "triggerCount": 0.8, "strategy": "bbr"}`,
		`{"name": "checkout-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 10, "limitApp": "checkout"}`,
	} {
		if status, data := n.call(t, http.MethodPost, "/rules", body); status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", body, status, data)
		}
	}
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/rules", "Rules")
	tb.waitText(`tr[data-rule="cpu-guard"]`, "past a CPU usage of 0.8, each engine blocks the inbound calls beyond what it completes at best")
	tb.waitText(`tr[data-rule="cpu-guard"]`, "every inbound call")
	tb.waitFor("no link to a resource", `!document.querySelector('tr[data-rule="cpu-guard"] a[href^="#/resources/"]')`)
	tb.waitText(`tr[data-rule="checkout-qps"]`, "10 per second, for the calls of checkout only")

	tb.click(`button[aria-label="Delete cpu-guard"]`)
	tb.waitText("dialog[open]", "The rule stops applying to every inbound call of each engine at once.")
	if got := tb.text("dialog[open]"); strings.Contains(got, "undefined") {
		t.Fatalf("the delete dialog reads %q", got)
	}
	tb.click(`dialog[open] button[data-action="cancel"]`)
	tb.waitFor("the dialog gone", `!document.querySelector('dialog')`)
}

// TestOriginsErrorKeepsFocus saves an authority rule without origins: the
// API's error is about the whole list, shown under it, and the focus goes
// into the list, where it was lost (the list itself cannot take it).
func TestOriginsErrorKeepsFocus(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/rules/new", "New rule")
	tb.fill("#rule-kind", "authority")
	tb.fill("#rule-name", "orders-callers")
	tb.fill("#rule-resource", "GET:/api/orders")
	tb.fill("#rule-authority-strategy", "allow")
	tb.click("#rule-save")
	tb.waitFor("the error under the origins", `!document.querySelector('#rule-authority-origins-error').hidden`)
	tb.waitFor("the focus in the origins", `document.querySelector('#rule-authority-origins').contains(document.activeElement) && document.activeElement.tagName !== 'FIELDSET'`)
}
