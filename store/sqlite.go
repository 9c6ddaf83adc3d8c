package store

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/pressly/goose/v3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"

	"github.com/sluicehq/sluice/migrations"
)

// sqliteParams are applied to every connection by the driver. busy_timeout
// comes first so that switching the journal to WAL waits for a lock held by
// another process instead of failing at once; _txlock=immediate takes the
// write lock at BEGIN, so a transaction never fails half-way on an upgrade.
const sqliteParams = "_busy_timeout=5000&_journal_mode=WAL&_foreign_keys=on&_synchronous=NORMAL&_txlock=immediate"

// sqliteDriver is the name the store opens SQLite databases by: the mattn
// driver (cgo) with the connection settings that the DSN cannot carry
// (sqlite_cgo.go), or, in a build without cgo, its stub, whose every open
// says that SQLite needs cgo (sqlite_nocgo.go).
const sqliteDriver = "sqlite3-sluice"

// readConns is how many connections serve the metric and catalogue reads
// beside the writer's one: in WAL mode a reader sees the last commit and
// waits for no writer, so a history asked during a flush of 10,000
// resources (half a second) is not held up behind it.
const readConns = 4

// backend is what one SQL dialect contributes to a Store: the connection
// pools, the GORM dialectors over them and the goose dialect for
// migrations.
type backend struct {
	sqlDB      *sql.DB
	dialector  gorm.Dialector
	migrations goose.Dialect
	// migrationsFS are the dialect's migrations (package migrations).
	migrationsFS fs.FS
	// readDB serves the reads that need no transaction; it is sqlDB when
	// the database cannot take a second connection.
	readDB        *sql.DB
	readDialector gorm.Dialector
	// writeProbe is a statement that fails, in a transaction, on a
	// database that cannot be written (Store.Ping).
	writeProbe string
	// file is the SQLite database's file, "" for another database; the
	// file it was when the store opened (identify) is what the store
	// writes to until it closes, whatever the path comes to name.
	file   string
	opened os.FileInfo
	// unlock releases the file's Exclusive lock; nil if none was taken.
	unlock func() error
}

// ErrFileGone is a write to, or a Ping of, a SQLite database whose file
// was removed or replaced while the store had it open: the writes would go
// to a file that no path names, and be lost when the store closes.
var ErrFileGone = errors.New("the database file was removed or replaced while the server runs; restart it on the file it should use")

// identify remembers which file the SQLite database is, once it exists.
func (b *backend) identify() error {
	if b.file == "" {
		return nil
	}
	info, err := os.Stat(b.file)
	if err != nil {
		return err
	}
	b.opened = info
	return nil
}

// fileGone is ErrFileGone, wrapped with the path, if the path no longer
// names the file the store opened.
func (b *backend) fileGone() error {
	if b.opened == nil {
		return nil
	}
	if info, err := os.Stat(b.file); err != nil || !os.SameFile(info, b.opened) {
		return fmt.Errorf("%s: %w", b.file, ErrFileGone)
	}
	return nil
}

// close closes the pools.
func (b *backend) close() error {
	err := b.sqlDB.Close()
	if b.readDB != b.sqlDB {
		err = errors.Join(b.readDB.Close(), err)
	}
	if b.unlock != nil {
		err = errors.Join(err, b.unlock())
	}
	return err
}

// openSQLite opens the SQLite database at db (a file path or a URI
// filename), creating the file if needed, with a single connection for
// writes: SQLite has one writer at a time, and one connection makes
// writers queue in Go instead of failing on SQLITE_BUSY. Reads get a pool
// of readConns query-only connections of their own, unless the database
// cannot be shared between connections (sharesFile).
func openSQLite(db string) (*backend, error) {
	sqlDB, err := sql.Open(sqliteDriver, sqliteDSN(db))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", db, err)
	}
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	sqlDB.SetConnMaxLifetime(0)
	sqlDB.SetConnMaxIdleTime(0)
	readDB := sqlDB
	if sharesFile(db) {
		// The read pool's connections open lazily, after the migrations.
		readDB, err = sql.Open(sqliteDriver, sqliteDSN(db)+"&_query_only=1")
		if err != nil {
			return nil, errors.Join(fmt.Errorf("open sqlite %s: %w", db, err), sqlDB.Close())
		}
		readDB.SetMaxOpenConns(readConns)
		readDB.SetMaxIdleConns(readConns)
		readDB.SetConnMaxLifetime(0)
		readDB.SetConnMaxIdleTime(0)
	}
	return &backend{
		sqlDB:         sqlDB,
		dialector:     sqlite.New(sqlite.Config{Conn: sqlDB}),
		migrations:    goose.DialectSQLite3,
		migrationsFS:  migrations.FS,
		readDB:        readDB,
		readDialector: sqlite.New(sqlite.Config{Conn: readDB}),
		// Setting the header's user_version, which Sluice does not use,
		// takes SQLite's write lock, which a read-only database refuses.
		writeProbe: "PRAGMA user_version = 0",
		file:       sqliteFile(db),
	}, nil
}

// sharesFile reports whether a second connection to db sees what the
// first writes: not for an in-memory database (each connection would have
// its own), nor for a URI that names a VFS or a locking mode, as
// unix-excl does, which may hold the file for one connection alone.
// sqliteFile is the path of db's file, "" if it has none of its own.
func sqliteFile(db string) string {
	if !sharesFile(db) {
		return ""
	}
	uri, ok := strings.CutPrefix(db, "file:")
	if !ok {
		return db
	}
	path, _, _ := strings.Cut(uri, "?")
	return path
}

func sharesFile(db string) bool {
	if db == ":memory:" || db == "" {
		return false
	}
	uri, ok := strings.CutPrefix(db, "file:")
	if !ok {
		return true
	}
	path, query, _ := strings.Cut(uri, "?")
	return path != ":memory:" && !strings.Contains(query, "mode=memory") &&
		!strings.Contains(query, "vfs=") && !strings.Contains(query, "locking")
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
