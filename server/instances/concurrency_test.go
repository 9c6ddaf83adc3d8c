package instances

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
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
	conn := holdWriter(t, path)
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

// TestAKnownInstanceIsWrittenBehind: a known instance's report whose
// record is due (its last seen time stored persistEvery ago, or its fields
// changed) is answered while the database's writer is held by another
// connection, and the record, with the last report's fields, is stored
// once the writer is free; List shows the report meanwhile.
func TestAKnownInstanceIsWrittenBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	st, err := store.Open(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &clock{now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	r := New(Options{Store: st, Now: c.Now})
	key, err := r.Report(t.Context(), Info{ID: "a", App: "shop", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	conn := holdWriter(t, path)
	c.advance(persistEvery)
	latest := Info{ID: "a", App: "shop", Version: "2"}
	for _, info := range []Info{{ID: "a", App: "shop", Version: "1"}, latest} {
		answered := make(chan error, 1)
		go func() {
			got, err := r.Report(t.Context(), info)
			if err == nil && got != key {
				err = fmt.Errorf("key %d, want %d", got, key)
			}
			answered <- err
		}()
		// SQLite's busy_timeout holds the write for 5 s: the answer must
		// come well before.
		select {
		case err := <-answered:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a known instance's report waited for its record's write")
		}
	}
	listed, err := r.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Info != latest || !listed[0].LastSeen.Equal(c.Now()) {
		t.Fatalf("listed %+v while the write waits, want the last report", listed)
	}
	if _, err := conn.ExecContext(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	r.Wait()
	stored, err := st.InstanceByUID(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Version != latest.Version || stored.LastSeenMs != c.Now().UnixMilli() || stored.ID != key {
		t.Fatalf("stored %+v, want version %s, last seen now, key %d", stored, latest.Version, key)
	}
}

// TestAFailedWriteBehindIsLoggedAndTriedAgain: a known instance's record
// that cannot be written behind its report (the store refuses) leaves the
// report answered, is logged, and is written by the next report once the
// store takes it.
func TestAFailedWriteBehindIsLoggedAndTriedAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	st, err := store.Open(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logged syncBuffer
	c := &clock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	r := New(Options{Store: st, Now: c.Now, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if _, err := r.Report(t.Context(), Info{ID: "a", App: "shop", Version: "1"}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `CREATE TRIGGER refuse BEFORE UPDATE ON instances BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Report(t.Context(), Info{ID: "a", App: "shop", Version: "2"}); err != nil {
		t.Fatalf("a known instance's report failed with its record's write: %v", err)
	}
	r.Wait()
	if !strings.Contains(logged.String(), "was not written") || !strings.Contains(logged.String(), "instance=a") {
		t.Fatalf("the failed write was not logged: %q", logged.String())
	}
	if _, err := db.ExecContext(t.Context(), `DROP TRIGGER refuse`); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Second)
	if _, err := r.Report(t.Context(), Info{ID: "a", App: "shop", Version: "2"}); err != nil {
		t.Fatal(err)
	}
	r.Wait()
	stored, err := st.InstanceByUID(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Version != "2" || stored.LastSeenMs != c.Now().UnixMilli() {
		t.Fatalf("stored %+v, want version 2 last seen now", stored)
	}
}

// syncBuffer is a bytes.Buffer a logger may write from another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// holdWriter takes the write lock of the SQLite database at path on a
// connection of its own, as another process would hold it, and returns
// that connection, closed when the test ends.
func holdWriter(t *testing.T, path string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return conn
}
