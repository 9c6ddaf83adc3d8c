package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestInstancesPage creates an instance token on the tokens page, reports
// as an instance with it, and finds the instance on the Instances page
// (live, its version, how far behind the current rules revision) and in
// the resource page's instance filter, which narrows the history request
// to it.
func TestInstancesPage(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)
	tb.login()

	// The tokens page offers the instance role and says what it may do.
	tb.visit("/tokens", "API tokens")
	tb.fill("#token-name", "shop-fleet")
	tb.fill("#token-role", "instance")
	tb.waitText("#token-role-hint", "reads rules, posts reports, nothing else")
	tb.click("#token-create")
	tb.waitText("#token-secret-box", "Token shop-fleet created")
	token := tb.text("#token-secret")
	tb.waitText(`tr[data-token="shop-fleet"]`, "instance")

	// With no instance yet, the page says how to run one.
	tb.visit("/instances", "Instances")
	tb.waitText("#instances", "No instance has reported yet")
	tb.waitText("#instances", "go run ./cmd/sluice-example -server "+n.url)

	// Two rule changes move the revision past the one the instance reports.
	for _, name := range []string{"orders-a", "orders-b"} {
		body := map[string]any{"name": name, "kind": "flow", "resource": "GET:/api/orders", "threshold": 5}
		if status, data := n.call(t, http.MethodPost, "/rules", body); status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, status, data)
		}
	}
	minute := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	report := map[string]any{
		"instance": map[string]any{"id": "shop-1", "app": "shop", "hostname": "host-a", "pid": 42, "version": "1.2.3", "rulesRevision": 1},
		"minutes":  []map[string]any{{"resource": "GET:/api/orders", "time": minute.Format(time.RFC3339), "pass": 7}},
	}
	if status, data := n.callAs(t, token, http.MethodPost, "/instances/report", report); status != http.StatusNoContent {
		t.Fatalf("report with the instance token: %d %s", status, data)
	}
	row := `tr[data-instance="shop-1"]`
	tb.waitText(row, "live")
	tb.waitText(row, "1.2.3")
	tb.waitText(row, "shop")
	tb.waitText(row, "host-a, pid 42")
	tb.waitText(row, "behind")
	tb.waitText(row, "ago")
	tb.waitText("#instances-summary", "1 instance: 1 live")
	tb.checkAccessibility("the Instances page with an instance")

	// The filter by app asks the API for that app only.
	tb.fill("#instances-app", "shop")
	tb.waitFor("the app filter sent", `performance.getEntriesByType('resource').some((e) => e.name.includes('/api/v1/instances?app=shop'))`)
	tb.waitText(row, "live")

	// The resource page's history: all instances summed by default, one
	// instance when chosen, and the request says which.
	tb.visit("/resources/"+url.PathEscape("GET:/api/orders"), "GET:/api/orders")
	tb.waitFor("the history drawn", `document.querySelector('#history-chart').dataset.traffic === '1'`)
	tb.waitText("#history-instance", "all (summed)")
	tb.waitFor("the instance offered", `document.querySelector('#history-instance option[value="shop-1"]')`)
	tb.fill("#history-instance", "shop-1")
	tb.waitFor("the history of shop-1 drawn", `document.querySelector('#history-chart').dataset.instance === 'shop-1'`)
	tb.waitFor("the history asked for shop-1", `performance.getEntriesByType('resource').some((e) => e.name.includes('/metrics?') && e.name.includes('instance=shop-1'))`)
	tb.waitText("#history-note", "Instance shop-1 only")
	if got := tb.text("#history-chart"); got == "" {
		t.Fatal("no chart drawn for shop-1")
	}
	tb.waitFor("its minute in the chart", `document.querySelector('#history-chart').dataset.traffic === '1'`)
	// The panel of hottest values shows only where the server answers it
	// with hotspot rules; this resource has none.
	tb.waitFor("no hottest values panel", `document.querySelector('#hot-values').closest('section').hidden`)
}

// TestHottestValuesOfTheFleet: an instance reports the values its hotspot
// rule blocked; the resource page's panel sums them with the server's own,
// so a value blocked across the fleet shows with every block.
func TestHottestValuesOfTheFleet(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	const resource = "GET:/api/orders"
	n.createRule(t, `{"name": "orders-per-user", "kind": "hotspot", "resource": "GET:/api/orders", "paramKey": "user", "threshold": 1, "statIntervalMs": 60000}`)
	for _, user := range []string{"42", "42", "42"} {
		check := map[string]any{"resource": resource, "params": map[string]string{"user": user}}
		if status, data := n.call(t, http.MethodPost, "/check", check); status != http.StatusOK {
			t.Fatalf("check as user %s: %d %s", user, status, data)
		}
	}
	// The instance reports every half second, as a live one does: its
	// values count for 3 s after each report.
	report := map[string]any{
		"instance": map[string]any{"id": "shop-1", "app": "shop"},
		"hotValues": []map[string]any{{"resource": resource, "rule": "orders-per-user", "paramKey": "user",
			"byPass":  []map[string]any{{"value": "99", "pass": 1, "block": 5}},
			"byBlock": []map[string]any{{"value": "42", "pass": 1, "block": 10}, {"value": "99", "pass": 1, "block": 5}}}},
	}
	if status, data := n.call(t, http.MethodPost, "/instances/report", report); status != http.StatusNoContent {
		t.Fatalf("report: %d %s", status, data)
	}
	body, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		<-stopped
	})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				// Not through call, which may fail the test: a goroutine
				// cannot; a lost report shows as a missing sum.
				req, err := http.NewRequest(http.MethodPost, n.url+"/api/v1/instances/report", bytes.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+apiToken)
				req.Header.Set("Content-Type", "application/json")
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		}
	}()

	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource), resource)
	panel := `#hot-values [data-rule="orders-per-user"]`
	// 42: 2 blocks on the server (the first of its 3 calls passed), 10 on shop-1.
	tb.waitFor("42 the most blocked, summed", fmt.Sprintf(`(() => {
		const blocked = document.querySelectorAll(%s)[1];
		const top = blocked?.querySelector('tbody tr');
		return top?.dataset.value === '42' && top.querySelectorAll('td')[1]?.textContent === '12';
	})()`, js(panel+" table")))
	tb.waitFor("99 blocked 5 times on shop-1", fmt.Sprintf(`document.querySelector(%s)?.querySelectorAll('td')[1]?.textContent === '5'`, js(panel+` tr[data-value="99"]`)))
}
