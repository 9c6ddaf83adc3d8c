package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

// TestAWebhookEventSurvivesAKill runs sluice as a real process: a rule
// written while the receiver answers 503 is in the outbox, not delivered,
// when the process is killed (SIGKILL); the next process on the same
// database delivers it, once, under the same webhook-id.
func TestAWebhookEventSurvivesAKill(t *testing.T) {
	var up atomic.Bool
	var mu sync.Mutex
	var attempts, delivered []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("webhook-id")
		if !up.Load() {
			attempts = append(attempts, id)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		delivered = append(delivered, id)
	}))
	defer recv.Close()
	seen := func() ([]string, []string) {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), attempts...), append([]string(nil), delivered...)
	}

	db := filepath.Join(t.TempDir(), "sluice.db")
	args := []string{"--addr", "127.0.0.1:0", "--db", db, "--bootstrap-token", quotaTestToken, "--webhook-allow-private"}
	p := startProcess(t, args...)
	status, hook := p.do(t, http.MethodPost, "/api/v1/webhooks", fmt.Sprintf(`{"url":%q,"events":["rule.created"]}`, recv.URL))
	if status != http.StatusCreated {
		t.Fatalf("create the webhook: %d %v", status, hook)
	}
	if status, out := p.do(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"orders","threshold":5}`); status != http.StatusCreated {
		t.Fatalf("create the rule: %d %v", status, out)
	}
	// Killed once the failed attempt is in the outbox, pending: a kill
	// between an attempt and its record would leave the delivery claimed,
	// and the next process would wait out the claim's lease (50 s) first,
	// as it still may if the kill lands in a retry.
	deliveries := fmt.Sprintf("/api/v1/webhooks/%v/deliveries", hook["id"])
	servertest.WaitUntil(t, "a failed attempt recorded", 20*time.Second, func() bool {
		status, out := p.do(t, http.MethodGet, deliveries, "")
		items, _ := out["items"].([]any)
		if status != http.StatusOK || len(items) != 1 {
			return false
		}
		d, _ := items[0].(map[string]any)
		return d["state"] == "pending" && d["attempts"] != float64(0)
	})
	p.end(t, syscall.SIGKILL)
	up.Store(true)

	p = startProcess(t, args...)
	servertest.WaitUntil(t, "the event delivered by the next process", 90*time.Second, func() bool {
		_, ok := seen()
		return len(ok) > 0
	})
	p.end(t, syscall.SIGTERM)
	failed, ok := seen()
	if len(ok) != 1 || ok[0] != failed[0] {
		t.Fatalf("delivered %v after attempts %v: want the event once, under its id", ok, failed)
	}
}
