package pgtest_test

import (
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/store/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) {
	var err error
	if pg, err = pgtest.Start(); err != nil {
		println("pgtest:", err.Error())
		os.Exit(1)
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		println("pgtest:", err.Error())
		code = 1
	}
	os.Exit(code)
}

// TestDatabasesAreApart: each test's database is its own, and real.
func TestDatabasesAreApart(t *testing.T) {
	var dbs [2]*sql.DB
	for i := range dbs {
		db, err := sql.Open("pgx", pg.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	if _, err := dbs[0].Exec(`CREATE TABLE rules (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].Exec(`INSERT INTO rules (name) VALUES ('a'), ('b')`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := dbs[0].QueryRow(`SELECT count(*) FROM rules`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows = %d, %v; want 2", n, err)
	}
	if _, err := dbs[1].Exec(`SELECT 1 FROM rules`); err == nil {
		t.Fatal("the second database sees the first one's table")
	}
}

// TestTemplateCopies: each database after UseTemplate holds what the
// template was given, its own copy of it; each is gone soon after its test
// ends.
func TestTemplateCopies(t *testing.T) {
	pg := pgtest.StartForTest(t)
	err := pg.UseTemplate(func(url string) error {
		db, err := sql.Open("pgx", url)
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.Exec(`CREATE TABLE rules (name text PRIMARY KEY); INSERT INTO rules VALUES ('from the template')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 4 { // more than the copies made ahead
		t.Run("copy", func(t *testing.T) {
			url := pg.NewDatabase(t)
			db, err := sql.Open("pgx", url)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`INSERT INTO rules VALUES ($1)`, url); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM rules`).Scan(&n); err != nil || n != 2 {
				t.Fatalf("database %d: rows = %d, %v; want the template's and its own", i, n, err)
			}
			names = append(names, url[strings.LastIndexByte(url, '/')+1:strings.IndexByte(url, '?')])
		})
	}
	admin, err := sql.Open("pgx", pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var left int
		if err := admin.QueryRow(`SELECT count(*) FROM pg_database WHERE datname = ANY($1)`, names).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the databases %v remain 30 s after their tests ended", left, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
