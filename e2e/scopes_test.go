package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/server"
)

// TestScopedConsole sets scopes from the tokens and users pages and reads
// them back in their lists, shows the API's refusals of a scoped admin and
// of a bad app's name next to the apps field (naming the app), clears a
// user's scope, and logs in as the scoped editor: its rule form offers
// only its apps and creates a rule in one of them, and a rule of another
// app opens read-only.
func TestScopedConsole(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/tokens", "API tokens")
	tb.fill("#token-name", "ci-admin")
	tb.fill("#token-role", "admin")
	tb.fill("#token-apps", "checkout")
	tb.click("#token-create")
	tb.waitText("#token-apps-error", "an admin cannot be scoped")
	tb.fill("#token-role", "editor")
	tb.fill("#token-apps", "checkout Bad!")
	tb.click("#token-create")
	tb.waitText("#token-apps-error", "Bad!: must match")
	tb.fill("#token-name", "ci-checkout")
	tb.fill("#token-apps", "checkout, payments")
	tb.click("#token-create")
	tb.waitText("#token-secret-box", "Token ci-checkout created")
	tb.waitText(`tr[data-token="ci-checkout"] td:nth-of-type(2)`, "checkout, payments")
	tb.fill("#token-name", "ci-all")
	tb.click("#token-create")
	tb.waitText("#token-secret-box", "Token ci-all created")
	tb.waitText(`tr[data-token="ci-all"] td:nth-of-type(2)`, "all")

	tb.visit("/users", "Users")
	tb.fill("#user-username", "carol")
	tb.fill("#user-new-apps", "checkout")
	tb.fill("#user-password", "carol-password-1")
	tb.click("#user-form button[type=submit]")
	tb.waitFor("carol's apps listed", `document.querySelector('tr[data-user="carol"] input[type=text]')?.value === 'checkout'`)
	tb.fill(`tr[data-user="carol"] input[type=text]`, "checkout payments")
	tb.click(`tr[data-user="carol"] td:nth-of-type(2) button`)
	tb.waitFor("carol's new apps listed", `document.querySelector('tr[data-user="carol"] input[type=text]')?.value === 'checkout, payments'`)
	if got := userApps(t, n, "carol"); !slices.Equal(got, []string{"checkout", "payments"}) {
		t.Fatalf("carol's apps = %v, want [checkout payments]", got)
	}

	// An empty apps field on an edit clears the scope.
	tb.fill("#user-username", "dave")
	tb.fill("#user-new-apps", "orders")
	tb.fill("#user-password", "dave-password-1")
	tb.click("#user-form button[type=submit]")
	tb.waitFor("dave's apps listed", `document.querySelector('tr[data-user="dave"] input[type=text]')?.value === 'orders'`)
	tb.fill(`tr[data-user="dave"] input[type=text]`, "")
	tb.click(`tr[data-user="dave"] td:nth-of-type(2) button`)
	tb.waitText("#toast", "dave: apps set to all")
	if got := userApps(t, n, "dave"); got != nil {
		t.Fatalf("dave's apps = %v after clearing, want none", got)
	}

	carol := newTab(t, n.url)
	carol.loginAs("carol", "carol-password-1")
	carol.visit("/rules/new", "New rule")
	options, err := eval[[]string](carol, `[...document.querySelectorAll('select#rule-app option')].map((o) => o.value)`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(options, []string{"checkout", "payments"}) {
		t.Fatalf("the app select offers %v, want exactly [checkout payments]", options)
	}
	carol.fill("#rule-name", "payments-qps")
	carol.fill("#rule-resource", "POST:/api/pay")
	carol.fill("#rule-app", "payments")
	carol.fill("#rule-flow-threshold", "10")
	carol.click("#rule-save")
	carol.waitText("main h1", "Rules")
	carol.waitText(`tr[data-rule="payments-qps"]`, "10 per second")
	if r := n.rule(t, 1); r.Name != "payments-qps" || r.App != "payments" {
		t.Fatalf("created rule = %s app %q, want payments-qps app payments", r.Name, r.App)
	}

	// A rule of another app reads, but its form says it cannot be saved.
	n.createRule(t, `{"kind": "flow", "name": "orders-qps", "resource": "GET:/api/orders", "app": "orders", "threshold": 5}`)
	carol.visit("/rules/2/edit", "Edit orders-qps")
	carol.waitText("#rule-form .alert.error", "of app orders, outside your apps (checkout, payments)")
	carol.waitFor("the save button disabled", `document.querySelector('#rule-save').disabled`)
}

// userApps answers the scope GET /users shows for username.
func userApps(t *testing.T, n *node, username string) []string {
	t.Helper()
	status, data := n.call(t, http.MethodGet, "/users?pageSize=500", nil)
	if status != http.StatusOK {
		t.Fatalf("list users: %d %s", status, data)
	}
	var page struct {
		Items []server.User `json:"items"`
	}
	if err := json.Unmarshal(data, &page); err != nil {
		t.Fatal(err)
	}
	for _, u := range page.Items {
		if u.Username == username {
			return u.Apps
		}
	}
	t.Fatalf("no user %s", username)
	return nil
}
