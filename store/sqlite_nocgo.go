//go:build !cgo

package store

import (
	"database/sql"

	"github.com/mattn/go-sqlite3"
)

// A build without cgo (the static CLI that CI pipelines run `sluice rules`
// with) has no SQLite: the driver's stub answers every open with its own
// error, which names cgo, so that `sluice serve` on a SQLite file says why
// it cannot start instead of naming an unknown driver.
func init() {
	sql.Register(sqliteDriver, &sqlite3.SQLiteDriver{})
}
