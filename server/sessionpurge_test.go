package server

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/store"
)

// TestRetentionPurgesSessions: the retention pass deletes the sessions
// past their idle time or their absolute expiry that nobody presented
// again, by the server's clock, and keeps the live ones.
func TestRetentionPurgesSessions(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	stored := func(c *http.Cookie) bool {
		t.Helper()
		_, _, err := n.Store.GetSession(t.Context(), hashSecret(c.Value))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	prune := func() {
		t.Helper()
		if err := n.Server.metrics.Prune(t.Context(), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	use := func(c *http.Cookie) {
		t.Helper()
		if status, data := n.as(t, withCookie(c, ""), http.MethodGet, "/api/v1/me", ""); status != http.StatusOK {
			t.Fatalf("GET /me with a live session: %d %s", status, data)
		}
	}

	expires := n.clock.Now().Add(defaultSessionMax)
	idle, _ := n.login(t, "admin", adminPassword)
	used, _ := n.login(t, "admin", adminPassword)
	n.clock.Advance(defaultSessionIdle - time.Minute)
	use(used)
	prune()
	if !stored(idle) || !stored(used) {
		t.Fatalf("sessions within their idle time: stored %v and %v, want both", stored(idle), stored(used))
	}

	n.clock.Advance(time.Minute)
	prune()
	if stored(idle) {
		t.Error("a session idle for its idle time is still stored")
	}
	if !stored(used) {
		t.Fatal("a session used within its idle time was deleted")
	}

	// Used all along, it ends at its absolute expiry all the same.
	for n.clock.Now().Add(time.Hour).Before(expires) {
		n.clock.Advance(time.Hour)
		use(used)
	}
	prune()
	if !stored(used) {
		t.Fatal("a session used before its absolute expiry was deleted")
	}
	n.clock.Advance(expires.Sub(n.clock.Now()))
	prune()
	if stored(used) {
		t.Error("a session past its absolute expiry is still stored")
	}
}
