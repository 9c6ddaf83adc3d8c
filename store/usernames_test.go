package store

import (
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/sluicehq/sluice/migrations"
)

// TestUsernamesAreCaseInsensitive: a username is one whatever its case,
// found by any and taken by any.
func TestUsernamesAreCaseInsensitive(t *testing.T) {
	s, _ := openTestStore(t)
	ed := User{Username: "ed", Role: "viewer", PasswordHash: "x"}
	if err := s.CreateUser(t.Context(), &ed); err != nil {
		t.Fatal(err)
	}

	if err := s.CreateUser(t.Context(), &User{Username: "ED", Role: "admin", PasswordHash: "y"}); !errors.Is(err, ErrConflict) {
		t.Errorf("CreateUser(ED) beside ed: %v, want ErrConflict", err)
	}
	for _, name := range []string{"ed", "Ed", "ED"} {
		if u, err := s.UserByName(t.Context(), name); err != nil || u.ID != ed.ID {
			t.Errorf("UserByName(%s) = %+v, %v; want ed", name, u, err)
		}
	}
}

// TestUsernameClashRefusesMigration: a database whose usernames differ
// only in case is not migrated: Open fails naming every clash and leaves
// the schema as it was, and opens once the clashes are gone.
func TestUsernameClashRefusesMigration(t *testing.T) {
	dsn, db := databaseAtVersion(t, usernamesFoldVersion-1)
	for _, name := range []string{"ed", "alice", "ED", "Bo", "bo", "eD"} {
		if _, err := db.ExecContext(t.Context(), `INSERT INTO users (username, role, password_hash, created_at, updated_at)
			VALUES ('`+name+`', 'viewer', 'x', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`); err != nil {
			t.Fatal(err)
		}
	}

	s, err := Open(t.Context(), dsn, discard)

	if err == nil {
		_ = s.Close()
		t.Fatal("Open with usernames that differ only in case succeeded, want it refused")
	}
	if want := `"Bo", "bo"; "ED", "eD", "ed"`; !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v\nwant the clashes named: %s", err, want)
	}
	if strings.Contains(err.Error(), "alice") {
		t.Errorf("Open: %v\nnames alice, who clashes with no one", err)
	}
	var version int64
	if err := db.QueryRowContext(t.Context(), `SELECT MAX(version_id) FROM goose_db_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != usernamesFoldVersion-1 {
		t.Errorf("schema version after the refusal = %d, want %d", version, usernamesFoldVersion-1)
	}

	if _, err := db.ExecContext(t.Context(), `DELETE FROM users WHERE username IN ('ED', 'eD', 'Bo')`); err != nil {
		t.Fatal(err)
	}
	s, err = Open(t.Context(), dsn, discard)
	if err != nil {
		t.Fatalf("Open once the clashes are gone: %v", err)
	}
	defer s.Close()
	if u, err := s.UserByName(t.Context(), "BO"); err != nil || u.Username != "bo" {
		t.Errorf("UserByName(BO) = %+v, %v; want bo", u, err)
	}
}

// databaseAtVersion is a database, SQLite's or PostgreSQL's as the tests
// run, migrated up to version, and a connection to it.
func databaseAtVersion(t *testing.T, version int64) (string, *sql.DB) {
	t.Helper()
	var fsys fs.FS = migrations.FS
	dsn, driver, dialect := filepath.Join(t.TempDir(), "old.db"), "sqlite3", goose.DialectSQLite3
	if testPostgres != nil {
		dsn, driver, dialect, fsys = testPostgres.NewDatabase(t), "pgx", goose.DialectPostgres, migrations.Postgres
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	provider, err := goose.NewProvider(dialect, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(t.Context(), version); err != nil {
		t.Fatal(err)
	}
	return dsn, db
}
