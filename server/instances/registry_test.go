package instances

import (
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/store"
)

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRegistryOutlivesARestart: what a registry recorded is listed by a
// new one on the same store, the last report as stored at most
// persistEvery before the last one made.
func TestRegistryOutlivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	st, err := store.Open(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c := &clock{now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	first := New(Options{Store: st, Now: c.Now})
	info := Info{ID: "a", App: "shop", Hostname: "h", PID: 3, Version: "1", RulesRevision: 7}
	key, err := first.Report(t.Context(), info)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		c.advance(time.Second)
		again, err := first.Report(t.Context(), info)
		if err != nil || again != key {
			t.Fatalf("report: key %d, %v; want %d", again, err, key)
		}
	}
	listed, err := first.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || !listed[0].LastSeen.Equal(c.Now()) || listed[0].Info != info || listed[0].State != StateLive {
		t.Fatalf("listed %+v, want a, live, last seen now", listed)
	}

	restarted := New(Options{Store: st, Now: c.Now})
	listed, err = restarted.List(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Info != info || c.Now().Sub(listed[0].LastSeen) > persistEvery {
		t.Fatalf("after a restart: %+v, want a, last seen within %v of now", listed, persistEvery)
	}
	if got, err := restarted.Key(t.Context(), "a"); err != nil || got != key {
		t.Errorf("key after a restart: %d, %v; want %d", got, err, key)
	}
	if _, err := restarted.Key(t.Context(), "b"); err == nil {
		t.Error("the key of an instance never seen: no error")
	}
}
