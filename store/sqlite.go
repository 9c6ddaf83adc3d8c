package store

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/mattn/go-sqlite3"
	"github.com/pressly/goose/v3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// sqliteParams are applied to every connection by the driver. busy_timeout
// comes first so that switching the journal to WAL waits for a lock held by
// another process instead of failing at once; _txlock=immediate takes the
// write lock at BEGIN, so a transaction never fails half-way on an upgrade.
const sqliteParams = "_busy_timeout=5000&_journal_mode=WAL&_foreign_keys=on&_synchronous=NORMAL&_txlock=immediate"

// mmapSizeBytes is how much of the database file each connection reads
// through a memory map (PRAGMA mmap_size) instead of a read(2) per page into
// SQLite's 2 MiB page cache: a ranking seeks a thousand places in the
// metric tables, and the system calls were a third of its time. The pages
// are the kernel's file cache, shared, not the process's own memory.
const mmapSizeBytes = 1 << 30

// sqliteDriver is the mattn driver (cgo) with the connection settings
// that the DSN cannot carry.
const sqliteDriver = "sqlite3-sluice"

func init() {
	sql.Register(sqliteDriver, &sqlite3.SQLiteDriver{
		ConnectHook: func(conn *sqlite3.SQLiteConn) error {
			_, err := conn.Exec(fmt.Sprintf("PRAGMA mmap_size = %d", mmapSizeBytes), nil)
			return err
		},
	})
}

// backend is what one SQL dialect contributes to a Store: the connection
// pool, the GORM dialector over it and the goose dialect for migrations.
type backend struct {
	sqlDB      *sql.DB
	dialector  gorm.Dialector
	migrations goose.Dialect
}

// openSQLite opens the SQLite database at db (a file path or a URI
// filename), creating the file if needed, with a single connection: SQLite
// has one writer at a time, and one connection makes writers queue in Go
// instead of failing on SQLITE_BUSY.
func openSQLite(db string) (*backend, error) {
	sqlDB, err := sql.Open(sqliteDriver, sqliteDSN(db))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", db, err)
	}
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	sqlDB.SetConnMaxLifetime(0)
	sqlDB.SetConnMaxIdleTime(0)
	return &backend{
		sqlDB:      sqlDB,
		dialector:  sqlite.New(sqlite.Config{Conn: sqlDB}),
		migrations: goose.DialectSQLite3,
	}, nil
}

// sqliteDSN turns a file path into a URI filename carrying sqliteParams;
// the path is escaped so that a '?' or '#' in it is not read as the start of
// the parameters. A db that is already a URI filename ("file:…", with
// SQLite's own parameters such as mode=ro or vfs) is kept as written, with
// sqliteParams put first: the driver and SQLite read the first of repeated
// keys, so the settings the store relies on cannot be overridden.
func sqliteDSN(db string) string {
	if uri, ok := strings.CutPrefix(db, "file:"); ok {
		path, query, _ := strings.Cut(uri, "?")
		dsn := "file:" + path + "?" + sqliteParams
		if query != "" {
			dsn += "&" + query
		}
		return dsn
	}
	return "file:" + (&url.URL{Path: db}).EscapedPath() + "?" + sqliteParams
}
