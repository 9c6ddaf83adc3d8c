//go:build cgo

package store

import (
	"database/sql"
	"fmt"

	"github.com/mattn/go-sqlite3"
)

// mmapSizeBytes is how much of the database file each connection reads
// through a memory map (PRAGMA mmap_size) instead of a read(2) per page into
// SQLite's 2 MiB page cache: a ranking seeks a thousand places in the
// metric tables, and the system calls were a third of its time. The pages
// are the kernel's file cache, shared, not the process's own memory.
const mmapSizeBytes = 1 << 30

func init() {
	sql.Register(sqliteDriver, &sqlite3.SQLiteDriver{
		ConnectHook: func(conn *sqlite3.SQLiteConn) error {
			_, err := conn.Exec(fmt.Sprintf("PRAGMA mmap_size = %d", mmapSizeBytes), nil)
			return err
		},
	})
}
