package servertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgtest"
)

// TestDBEnv names the environment variable that chooses the database the
// servers of a test binary run on: "sqlite" (or unset), a file in the
// test's temporary directory; "postgres", a database of a throwaway
// PostgreSQL server that Main starts (make test runs the server's tests
// once more so).
const TestDBEnv = "SLUICE_TEST_DB"

// postgres is the PostgreSQL server of a test binary run with TestDBEnv
// "postgres", and the database given to each DBPath.
var postgres struct {
	server *pgtest.Server
	mu     sync.Mutex
	dbs    map[string]string
}

// replicaPostgres is, on a SQLite run, the PostgreSQL server that
// PostgresDatabase starts on first use for the tests that need one
// database shared by several servers, as replicas share one: one server
// per test binary instead of one initdb per test.
var replicaPostgres struct {
	once   sync.Once
	server *pgtest.Server
	err    error
}

// Main runs a package's tests, on a throwaway PostgreSQL server when
// TestDBEnv says "postgres", or else on SQLite files that start as copies
// of one migrated once; call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }
func Main(m *testing.M) int {
	switch db := os.Getenv(TestDBEnv); db {
	case "", "sqlite":
		stop, err := startSQLiteTemplate()
		if err != nil {
			fmt.Fprintln(os.Stderr, "servertest:", err)
			return 1
		}
		code := m.Run()
		if err := errors.Join(stop(), replicaPostgres.server.Stop()); err != nil {
			fmt.Fprintln(os.Stderr, "servertest:", err)
			code = 1
		}
		return code
	case "postgres":
	default:
		fmt.Fprintf(os.Stderr, "servertest: %s=%q: want sqlite or postgres\n", TestDBEnv, db)
		return 2
	}
	server, err := pgtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", err)
		return 1
	}
	postgres.server, postgres.dbs = server, map[string]string{}
	if err := server.UseTemplate(migrate); err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", errors.Join(err, server.Stop()))
		return 1
	}
	code := m.Run()
	if err := server.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", err)
		code = 1
	}
	return code
}

// database is what store.Open opens for the database path: path itself,
// a copy of the migrated template if it is new (Main), or on PostgreSQL
// the database made for it, the same one each time a test starts a server
// on path again.
func database(t testing.TB, path string) string {
	if postgres.server == nil {
		if err := fromSQLiteTemplate(path); err != nil {
			t.Fatalf("servertest: %v", err)
		}
		return path
	}
	postgres.mu.Lock()
	defer postgres.mu.Unlock()
	url, ok := postgres.dbs[path]
	if !ok {
		url = postgres.server.NewDatabase(t)
		postgres.dbs[path] = url
	}
	return url
}

// OnPostgres reports whether the servers of this test binary run on
// PostgreSQL (Main, TestDBEnv).
func OnPostgres() bool { return postgres.server != nil }

// RefuseDatabase makes the database of the server started on path, on
// PostgreSQL, unreachable until t ends (pgtest.Server.Refuse).
func RefuseDatabase(t testing.TB, path string) {
	t.Helper()
	postgres.server.Refuse(t, database(t, path))
}

// OpenStore opens a store for a test of a domain package, without a
// server: the SQLite file at path, or, on PostgreSQL (Main, TestDBEnv), the
// database made for path. It is closed when t ends.
func OpenStore(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), database(t, path), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("servertest: store.Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// migrate applies the migrations to the database at url: each test's
// database starts as a copy of one migrated once (pgtest.UseTemplate).
func migrate(url string) error {
	st, err := store.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return st.Close()
}

// SharedDatabase is a database for servers that share it, as replicas
// do, to give each of them with DBPath: on PostgreSQL (Main, TestDBEnv) a
// path standing for a new database of the binary's server; on SQLite the
// URL of a new database on a PostgreSQL server started for the binary on
// first use (SQLite replicas would each be a server of their own). The
// database is dropped when t ends.
func SharedDatabase(t testing.TB) string {
	t.Helper()
	if OnPostgres() {
		return filepath.Join(t.TempDir(), "shared.db") // the same path, the same database
	}
	if sqliteTemplate.dir == "" {
		t.Fatal("servertest: SharedDatabase needs the package's TestMain to run servertest.Main")
	}
	replicaPostgres.once.Do(func() {
		replicaPostgres.server, replicaPostgres.err = pgtest.Start()
		if replicaPostgres.err == nil {
			replicaPostgres.err = replicaPostgres.server.UseTemplate(migrate)
		}
	})
	if replicaPostgres.err != nil {
		t.Fatalf("servertest: %v", replicaPostgres.err)
	}
	return replicaPostgres.server.NewDatabase(t)
}
