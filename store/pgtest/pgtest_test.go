package pgtest_test

import (
	"database/sql"
	"os"
	"testing"

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
