package instances

import (
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/store"
)

// TestReportsDoNotWaitForAWrite: a report that writes nothing is answered
// while another instance's record waits for the database's writer (held
// by another connection, as another process would hold it), since the
// registry writes without its lock.
func TestReportsDoNotWaitForAWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	st, err := store.Open(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(Options{Store: st})
	if _, err := r.Report(t.Context(), Info{ID: "a", App: "shop"}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := r.Report(t.Context(), Info{ID: "b", App: "shop"})
		wrote <- err
	}()
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(time.Millisecond) {
		r.mu.Lock()
		writing := r.writing["b"]
		r.mu.Unlock()
		if writing == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b's write never started")
		}
	}
	answered := make(chan error, 1)
	go func() {
		_, err := r.Report(t.Context(), Info{ID: "a", App: "shop"})
		answered <- err
	}()
	// SQLite's busy_timeout holds b's write for 5 s: a's answer must come
	// well before.
	select {
	case err := <-answered:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(2 * time.Second):
		t.Error("a report that writes nothing waited for another instance's write")
		defer func() { <-answered }()
	}
	if _, err := conn.ExecContext(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("b: %v", err)
	}
}

// TestConcurrentNewIDsKeepTheCap: new ids reporting at once, their writes
// under way side by side, are admitted up to MaxInstances and no more.
func TestConcurrentNewIDsKeepTheCap(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(Options{Store: st, MaxInstances: 5})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for i := range 50 {
		wg.Go(func() {
			_, err := r.Report(t.Context(), Info{ID: fmt.Sprintf("i-%d", i), App: "shop"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case errors.Is(err, ErrTooManyInstances):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if admitted != 5 || refused != 45 {
		t.Errorf("%d admitted and %d refused, want 5 and 45", admitted, refused)
	}
}
