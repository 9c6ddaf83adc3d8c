package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/migrations"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var discard = slog.New(slog.DiscardHandler)

// openTestStore opens a Store on a fresh database, a file in t.TempDir or
// a database of the tests' PostgreSQL server (testPostgres), and closes it
// when the test ends; it returns what Open opened, to open it again.
func openTestStore(t *testing.T, opts ...Option) (*Store, string) {
	t.Helper()
	if testPostgres == nil {
		return openSQLiteTestStore(t, opts...)
	}
	url := testPostgres.NewDatabase(t)
	s, err := Open(t.Context(), url, discard, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, url
}

// openSQLiteTestStore is openTestStore on a SQLite file whatever
// $SLUICE_TEST_DB says, for what is SQLite's alone (files, URI filenames,
// its schema table).
func openSQLiteTestStore(t *testing.T, opts ...Option) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.db")
	s, err := Open(t.Context(), path, discard, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func sqlDB(t *testing.T, s *Store) *sql.DB {
	t.Helper()
	db, err := s.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// schema renders the database's schema in a stable order, one object per
// block: sqlite_master for SQLite, the catalogue's columns, indexes and
// triggers for PostgreSQL.
func schema(t *testing.T, s *Store) string {
	t.Helper()
	if onPostgres(s.db) {
		return postgresSchema(t, s)
	}
	rows, err := sqlDB(t, s).QueryContext(t.Context(),
		`SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, table string
		var text sql.NullString
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "-- %s %s on %s\n", typ, name, table)
		if text.Valid {
			fmt.Fprintf(&b, "%s;\n", text.String)
		} else {
			b.WriteString("-- (created by SQLite for a UNIQUE or PRIMARY KEY constraint)\n")
		}
		b.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// postgresSchema is schema for PostgreSQL: each table's columns, then
// every index and trigger, by name.
func postgresSchema(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []struct{ heading, query string }{
		{"columns", `SELECT table_name || '.' || column_name || ' ' || data_type ||
				CASE WHEN is_nullable = 'NO' THEN ' NOT NULL' ELSE '' END ||
				coalesce(' COLLATE ' || collation_name, '') || coalesce(' DEFAULT ' || column_default, '') ||
				CASE WHEN is_identity = 'YES' THEN ' IDENTITY' ELSE '' END
			FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`},
		{"indexes", `SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY tablename, indexname`},
		{"triggers", `SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY tgname`},
	} {
		fmt.Fprintf(&b, "-- %s\n", q.heading)
		rows, err := sqlDB(t, s).QueryContext(t.Context(), q.query)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			b.WriteString(line + "\n")
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestOpenMigratesToGoldenSchema(t *testing.T) {
	s, _ := openTestStore(t)
	got := schema(t, s)

	golden := filepath.Join("testdata", "schema.golden")
	if onPostgres(s.db) {
		golden = filepath.Join("testdata", "schema_postgres.golden")
	}
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./store -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("migrated schema differs from %s (run go test ./store -update if the change is intended)\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestOpenTwiceIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")

	first, err := Open(t.Context(), path, discard)
	if err != nil {
		t.Fatalf("first Open: %v", err)
	}
	schemaBefore := schema(t, first)
	if _, err := sqlDB(t, first).ExecContext(t.Context(),
		`INSERT INTO rules (name, kind, resource, spec, version, created_at, updated_at)
		 VALUES ('orders-qps', 'flow', 'orders', '{}', 1, '2026-01-01 00:00:00', '2026-01-01 00:00:00')`); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}

	second, err := Open(t.Context(), path, discard)
	if err != nil {
		t.Fatalf("second Open (restart): %v", err)
	}
	t.Cleanup(func() { _ = second.Close() })

	if got := schema(t, second); got != schemaBefore {
		t.Errorf("schema changed across a restart:\nbefore:\n%s\nafter:\n%s", schemaBefore, got)
	}
	var rules int
	if err := sqlDB(t, second).QueryRowContext(t.Context(), `SELECT count(*) FROM rules`).Scan(&rules); err != nil {
		t.Fatal(err)
	}
	if rules != 1 {
		t.Errorf("rules after restart = %d, want the 1 row written before it", rules)
	}
	var applied int
	if err := sqlDB(t, second).QueryRowContext(t.Context(),
		`SELECT count(*) FROM goose_db_version WHERE version_id = 1 AND is_applied`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != 1 {
		t.Errorf("migration 1 recorded %d times, want once", applied)
	}
}

func TestOpenSetsPragmas(t *testing.T) {
	s, _ := openSQLiteTestStore(t)
	tests := []struct {
		pragma string
		want   string
	}{
		{pragma: "journal_mode", want: "wal"},
		{pragma: "busy_timeout", want: "5000"},
		{pragma: "foreign_keys", want: "1"},
		{pragma: "synchronous", want: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.pragma, func(t *testing.T) {
			var got string
			if err := sqlDB(t, s).QueryRowContext(t.Context(), "PRAGMA "+tt.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
			}
		})
	}
	if got := sqlDB(t, s).Stats().MaxOpenConnections; got != 1 {
		t.Errorf("MaxOpenConnections = %d, want 1", got)
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd #1?name.db")
	s, err := Open(t.Context(), path, discard)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file not created at %q: %v", path, err)
	}
}

func TestNowFuncIsUTC(t *testing.T) {
	fixed := time.Date(2026, 3, 1, 12, 30, 0, 0, time.FixedZone("CET", 3600))
	s, _ := openTestStore(t, WithNowFunc(func() time.Time { return fixed }))

	got := s.db.NowFunc()
	if !got.Equal(fixed) || got.Location() != time.UTC {
		t.Errorf("NowFunc() = %v, want %v in UTC", got, fixed)
	}
}

func TestPing(t *testing.T) {
	s, _ := openTestStore(t)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping on an open store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Fatal("Ping on a closed store succeeded, want an error")
	}
}

func TestOpenFailsOnUnusablePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "sluice.db")
	s, err := Open(t.Context(), path, discard)
	if err == nil {
		_ = s.Close()
		t.Fatalf("Open(%s) succeeded, want an error", path)
	}
}

func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	s, _ := openTestStore(t)
	want := schema(t, s)
	provider, err := goose.NewProvider(s.b.migrations, sqlDB(t, s), s.b.migrationsFS,
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}

	if _, err := provider.DownTo(t.Context(), 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	tablesLeft := `SELECT count(*) FROM sqlite_master WHERE name IN ('rules', 'rule_revisions')`
	if onPostgres(s.db) {
		tablesLeft = `SELECT count(*) FROM information_schema.tables WHERE table_name IN ('rules', 'rule_revisions')`
	}
	var tables int
	if err := sqlDB(t, s).QueryRowContext(t.Context(), tablesLeft).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d of rules, rule_revisions left after migrating down, want none", tables)
	}

	if _, err := provider.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := schema(t, s); got != want {
		t.Errorf("schema after down and up differs:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// binaryVersion is the version of the newest migration built into the
// binary.
func binaryVersion(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	provider, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS,
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	sources := provider.ListSources()
	return sources[len(sources)-1].Version
}

// gooseVersions lists the versions goose_db_version records, in order.
func gooseVersions(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT version_id FROM goose_db_version ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return versions
}

func TestOpenRefusesANewerSchema(t *testing.T) {
	s, path := openTestStore(t)
	db := sqlDB(t, s)
	binary := binaryVersion(t, db)
	newer := binary + 4
	// What a newer binary leaves behind: its own migration recorded.
	if _, err := db.ExecContext(t.Context(),
		bind(s.db, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, true)`), newer); err != nil {
		t.Fatal(err)
	}
	want := gooseVersions(t, db)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	again, err := Open(t.Context(), path, discard)

	if err == nil {
		_ = again.Close()
		t.Fatalf("Open(%s) at schema version %d succeeded, want it refused", path, newer)
	}
	wantMsg := fmt.Sprintf("the database schema of %s is at version %d, newer than this binary's %d: run a newer sluice", path, newer, binary)
	if err.Error() != wantMsg {
		t.Errorf("Open error = %q, want %q", err, wantMsg)
	}
	driver := "sqlite3"
	if IsPostgres(path) {
		driver = "pgx"
	}
	raw, err := sql.Open(driver, path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if got := gooseVersions(t, raw); !slices.Equal(got, want) {
		t.Errorf("goose_db_version after the refused Open = %v, want it untouched: %v", got, want)
	}
}

func TestOpenRefusesADatabaseItCannotWrite(t *testing.T) {
	tests := []struct {
		name string
		// db turns the path of a migrated database into what Open is
		// given, after making it unwritable.
		// A read-only file or directory would not do: the tests may run
		// as root, whom permissions do not stop.
		db func(t *testing.T, path string) string
	}{
		{
			name: "URI with mode=ro",
			db:   func(t *testing.T, path string) string { return "file:" + path + "?mode=ro" },
		},
		{
			name: "URI with _query_only",
			db:   func(t *testing.T, path string) string { return "file:" + path + "?_query_only=1" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := openSQLiteTestStore(t)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db := tt.db(t, path)

			s, err := Open(t.Context(), db, discard)

			if err == nil {
				_ = s.Close()
				t.Fatalf("Open(%s) succeeded on a database it cannot write, want an error", db)
			}
			// SQLite's words for SQLITE_READONLY, wherever Open meets it.
			if !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "attempt to write a readonly database") {
				t.Errorf("Open(%s) error = %q, want it to name the database and say it is read-only", db, err)
			}
		})
	}
}

func TestOpenURIKeepsTheStoreSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	s, err := Open(t.Context(), "file:"+path+"?_busy_timeout=1&_foreign_keys=off&cache=private", discard)
	if err != nil {
		t.Fatalf("Open of a URI filename: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file not created at %q: %v", path, err)
	}
	for pragma, want := range map[string]string{"busy_timeout": "5000", "foreign_keys": "1", "journal_mode": "wal"} {
		var got string
		if err := sqlDB(t, s).QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %q, want the store's %q over the URI's", pragma, got, want)
		}
	}
}

// TestReadsDoNotWaitForTheWriter: while a write transaction is open, as a
// long flush holds one, the metric and catalogue reads answer at once from
// the last commit.
func TestReadsDoNotWaitForTheWriter(t *testing.T) {
	s, _ := openTestStore(t)
	addMetrics(t, s, MinuteDelta{Resource: "orders", StartMs: minute(0), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Block: 1}}})
	tx, err := sqlDB(t, s).BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(t.Context(), "UPDATE metric_minutes SET pass = 100"); err != nil {
		t.Fatal(err)
	}
	// The writer's one connection is taken until the rollback: a read
	// that waited for it would outlive this context.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	points, err := s.ResourceMetrics(ctx, "orders", minute(0), minute(1), MinuteMs)
	if err != nil || len(points) != 1 || points[0].Pass != 1 {
		t.Errorf("history = %+v (%v), want the committed pass of 1", points, err)
	}
	top, err := s.TopResources(ctx, minute(0), minute(1), TopByBlock, 10)
	if err != nil || len(top) != 1 || top[0].Pass != 1 {
		t.Errorf("top = %+v (%v), want the committed pass of 1", top, err)
	}
	if names, err := s.CatalogueNames(ctx, "", 0, 10); err != nil || len(names) != 1 {
		t.Errorf("catalogue = %v (%v), want orders", names, err)
	}
}

func TestSharesFile(t *testing.T) {
	tests := []struct {
		db   string
		want bool
	}{
		{"/var/lib/sluice.db", true},
		{"file:/var/lib/sluice.db?mode=rw", true},
		{":memory:", false},
		{"file::memory:", false},
		{"file:sluice?mode=memory&cache=shared", false},
		{"file:/var/lib/sluice.db?vfs=unix-excl", false},
		{"file:/var/lib/sluice.db?_locking_mode=EXCLUSIVE", false},
	}
	for _, tt := range tests {
		if got := sharesFile(tt.db); got != tt.want {
			t.Errorf("sharesFile(%q) = %v, want %v", tt.db, got, tt.want)
		}
	}
}

// TestConflictsAreNotLoggedAsErrors: a duplicate key is the caller's
// conflict (ErrConflict, a 409), not an error of the database's, so the
// store does not log it as one; a statement that fails otherwise is
// logged, without its parameters.
func TestConflictsAreNotLoggedAsErrors(t *testing.T) {
	var logs bytes.Buffer
	path := filepath.Join(t.TempDir(), "sluice.db")
	s, err := Open(t.Context(), path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	logs.Reset()
	for range 2 {
		err = s.CreateToken(t.Context(), &APIToken{Name: "twice", Role: "viewer", TokenHash: "h"})
	}
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("the second CreateToken: %v, want ErrConflict", err)
	}
	if logs.Len() != 0 {
		t.Errorf("a conflict was logged:\n%s", logs.String())
	}
	if err := s.db.Exec("SELECT * FROM no_such_table WHERE secret = ?", "the-secret-value").Error; err == nil {
		t.Fatal("a statement on no table succeeded")
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a failed statement was not logged as an error:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "the-secret-value") {
		t.Errorf("a failed statement was logged with its parameters:\n%s", logs.String())
	}
}

// TestAGoneFileRefusesWrites: a SQLite file removed (or replaced) under an
// open store fails Ping and every write with ErrFileGone, instead of
// acknowledging writes that no path names and a restart loses; reads
// still answer.
func TestAGoneFileRefusesWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone func(t *testing.T, path string)
	}{
		{"removed", func(t *testing.T, path string) {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		}},
		{"replaced", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, path := openSQLiteTestStore(t)
			if err := s.Ping(t.Context()); err != nil {
				t.Fatalf("Ping before: %v", err)
			}
			if err := s.CreateToken(t.Context(), &APIToken{Name: "before", Role: "viewer", TokenHash: "a"}); err != nil {
				t.Fatal(err)
			}
			tc.gone(t, path)
			if err := s.Ping(t.Context()); !errors.Is(err, ErrFileGone) {
				t.Errorf("Ping after: %v, want ErrFileGone", err)
			}
			if err := s.CreateToken(t.Context(), &APIToken{Name: "after", Role: "viewer", TokenHash: "b"}); !errors.Is(err, ErrFileGone) {
				t.Errorf("CreateToken after: %v, want ErrFileGone", err)
			}
			if err := s.DeleteToken(t.Context(), 1); !errors.Is(err, ErrFileGone) {
				t.Errorf("DeleteToken after: %v, want ErrFileGone", err)
			}
			minute := []MinuteDelta{{Resource: "r", StartMs: 60_000, Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}}}
			if err := s.AddMetrics(t.Context(), minute); !errors.Is(err, ErrFileGone) {
				t.Errorf("AddMetrics after: %v, want ErrFileGone", err)
			}
			if _, err := s.AddInstanceMinutes(t.Context(), 1, minute, 0); !errors.Is(err, ErrFileGone) {
				t.Errorf("AddInstanceMinutes after: %v, want ErrFileGone", err)
			}
			if _, err := s.AllTokens(t.Context()); err != nil {
				t.Errorf("AllTokens after: %v, want the tokens", err)
			}
		})
	}
}

// TestExclusiveRefusesASecondServer: a SQLite file that a Store opened
// with Exclusive holds cannot be opened with Exclusive again, in this
// process or another, until that Store closes; an open without it (the
// CLI's password reset) still can.
func TestExclusiveRefusesASecondServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	first, err := Open(t.Context(), path, discard, Exclusive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), path, discard, Exclusive()); !errors.Is(err, ErrInUse) {
		t.Fatalf("a second Exclusive open: %v, want ErrInUse", err)
	}
	plain, err := Open(t.Context(), path, discard)
	if err != nil {
		t.Fatalf("an open without Exclusive: %v", err)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(t.Context(), path, discard, Exclusive())
	if err != nil {
		t.Fatalf("an Exclusive open once the first closed: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}
