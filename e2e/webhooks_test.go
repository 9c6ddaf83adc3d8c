package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/server/servertest"
)

// TestWebhooksPage registers an endpoint from the console (a bad URL and
// an unknown event type named under their fields first), sends it a test event that a receiver on
// loopback gets, lists the delivery, and resumes the endpoint once a
// failed delivery has paused it.
func TestWebhooksPage(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	var got atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		if s := status.Load(); s != 0 {
			w.WriteHeader(int(s))
		}
	}))
	defer recv.Close()
	n := startNode(t, nodeConfig{webhooks: true})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/webhooks", "Webhooks")
	tb.waitText("main table tbody", "No webhooks yet")
	tb.fill("#webhook-url", "ftp://hooks.example.com/")
	tb.click("#webhook-create")
	tb.waitText("#webhook-url-error", "http or https")

	tb.fill("#webhook-url", recv.URL)
	tb.fill("#webhook-events", "test, rule.created")
	tb.click("#webhook-create")
	tb.waitText("#webhook-events-error", `"test" is not an event type`)
	tb.fill("#webhook-events", "rule.created, breaker.opened")
	tb.fill("#webhook-block-rate-minutes", "61")
	tb.click("#webhook-create")
	tb.waitText("#webhook-block-rate-minutes-error", "from 1 to 60")
	tb.fill("#webhook-block-rate-minutes", "5")
	tb.click("#webhook-create")
	tb.waitText("#webhook-secret-box", "shown only this once")
	tb.waitText("#webhook-secret", "whsec_")
	tb.waitText(`tr[data-webhook="1"]`, "active")

	// newest answers the state of the newest delivery, and the endpoint's.
	newest := func() (delivery, endpoint string) {
		_, data := n.call(t, http.MethodGet, "/webhooks/1/deliveries", nil)
		var list struct {
			Items []struct {
				State string `json:"state"`
			} `json:"items"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		_, data = n.call(t, http.MethodGet, "/webhooks/1", nil)
		var w struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 0 {
			return "", w.State
		}
		return list.Items[0].State, w.State
	}
	tb.click(`tr[data-webhook="1"] button[aria-label^="Send test"]`)
	// The list is reloaded, then the deliveries shown: the rows are new.
	tb.waitFor("the deliveries after the test event", `!!document.querySelector('#webhook-deliveries tbody tr')`)
	servertest.WaitUntil(t, "the test event delivered", waitTimeout, func() bool { d, _ := newest(); return d == "delivered" })
	tb.click(`tr[data-webhook="1"] button[aria-label^="Deliveries"]`)
	tb.waitText("#webhook-deliveries tbody", "delivered")

	status.Store(http.StatusServiceUnavailable)
	tb.click(`tr[data-webhook="1"] button[aria-label^="Send test"]`)
	servertest.WaitUntil(t, "the endpoint paused", waitTimeout, func() bool { _, e := newest(); return e == "paused" })
	tb.visit("/rules", "Rules")
	tb.visit("/webhooks", "Webhooks")
	tb.waitText(`tr[data-webhook="1"]`, "paused")
	tb.waitText(`tr[data-webhook="1"]`, "HTTP 503")
	status.Store(0)
	tb.click(`tr[data-webhook="1"] button[aria-label^="Resume"]`)
	tb.waitText(`tr[data-webhook="1"]`, "active")
	servertest.WaitUntil(t, "the kept delivery delivered", waitTimeout, func() bool { d, _ := newest(); return d == "delivered" })
	if got.Load() != 3 {
		t.Fatalf("the receiver got %d requests, want 3 (a test, its failed successor and its retry after resume)", got.Load())
	}
}
