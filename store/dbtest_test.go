package store

import (
	"fmt"
	"os"
	"testing"

	"github.com/sluicehq/sluice/store/pgtest"
)

// testPostgres is the PostgreSQL server the tests open their stores on
// when $SLUICE_TEST_DB is "postgres" (make test runs the package so once
// more); nil: SQLite files.
var testPostgres *pgtest.Server

func TestMain(m *testing.M) {
	switch db := os.Getenv("SLUICE_TEST_DB"); db {
	case "", "sqlite":
	case "postgres":
		var err error
		if testPostgres, err = pgtest.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "store tests:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "store tests: SLUICE_TEST_DB=%q: want sqlite or postgres\n", db)
		os.Exit(2)
	}
	code := m.Run()
	if err := testPostgres.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "store tests:", err)
		code = 1
	}
	os.Exit(code)
}
