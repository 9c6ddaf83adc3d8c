package instances

import (
	"errors"
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

	first.Wait()
	restarted := New(Options{Store: st, Now: c.Now})
	listed, err = restarted.List(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Info != info || c.Now().Sub(listed[0].LastSeen) > persistEvery {
		t.Fatalf("after a restart: %+v, want a, last seen within %v of now", listed, persistEvery)
	}
}

// TestRegistryIsBounded: past MaxInstances instances not gone, a new id
// is refused and a known one still reports; once some are gone, and
// forgotten, a new id is taken. Instances that reported between two
// stored reports are forgotten too.
func TestRegistryIsBounded(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c := &clock{now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	r := New(Options{Store: st, Now: c.Now, MaxInstances: 2})
	for _, id := range []string{"a", "b"} {
		if _, err := r.Report(t.Context(), Info{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	c.advance(time.Second) // a's last report is not stored now
	if _, err := r.Report(t.Context(), Info{ID: "a"}); err != nil {
		t.Fatalf("a known id with the registry full: %v", err)
	}
	if _, err := r.Report(t.Context(), Info{ID: "c"}); !errors.Is(err, ErrTooManyInstances) {
		t.Fatalf("a third id with a limit of 2: %v, want ErrTooManyInstances", err)
	}
	c.advance(DefaultGoneAfter)
	if _, err := r.Report(t.Context(), Info{ID: "c"}); err != nil {
		t.Fatalf("a new id once the others are gone: %v", err)
	}
	if len(r.reported) != 1 {
		t.Fatalf("the registry holds %d instances, want c alone", len(r.reported))
	}
}

// TestReportingAcrossReplicas: an instance is reporting while it reported
// within StaleAfter, to this registry or to another on the same store (as
// stored, up to persistEvery late); an id never seen is not.
func TestReportingAcrossReplicas(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c := &clock{now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	here, other := New(Options{Store: st, Now: c.Now}), New(Options{Store: st, Now: c.Now})
	if _, err := here.Report(t.Context(), Info{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		after    time.Duration
		r        *Registry
		id       string
		want     bool
		describe string
	}{
		{0, here, "a", true, "here, just reported"},
		{0, other, "a", true, "on another replica"},
		{0, other, "b", false, "never seen"},
		{DefaultStaleAfter, here, "a", false, "here, stale"},
		{persistEvery, other, "a", false, "on another replica, stale even if stored late"},
	} {
		c.advance(tt.after)
		if got, err := tt.r.Reporting(t.Context(), tt.id); err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.describe, got, err, tt.want)
		}
	}
}
