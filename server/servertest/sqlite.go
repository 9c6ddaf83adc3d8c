package servertest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/store"
)

// sqliteTemplate is a SQLite file with the migrations applied, made once
// per test binary run by Main and copied to each new database path: a copy
// takes milliseconds where the migrations take a few hundred under the
// race detector, and most tests start a server on a new file.
var sqliteTemplate struct {
	dir  string // Main's temporary directory; empty without Main
	once sync.Once
	path string // the template, once made; empty if making it failed
	err  error
}

// startSQLiteTemplate gives the template a directory, removed by the
// function returned. The template itself is made on first use, so that a
// package whose tests start no server pays nothing.
func startSQLiteTemplate() (stop func() error, err error) {
	dir, err := os.MkdirTemp("", "servertest-sqlite-")
	if err != nil {
		return nil, err
	}
	sqliteTemplate.dir = dir
	return func() error { return os.RemoveAll(dir) }, nil
}

// fromSQLiteTemplate copies the template to path when path names a file
// that does not exist yet, so that store.Open finds its migrations
// applied. Anything else (a database already there, a URI or a PostgreSQL
// URL, no template) is left to store.Open as it is.
func fromSQLiteTemplate(path string) error {
	if sqliteTemplate.dir == "" || store.IsPostgres(path) || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	sqliteTemplate.once.Do(func() {
		p := filepath.Join(sqliteTemplate.dir, "template.db")
		st, err := store.Open(context.Background(), p, slog.New(slog.DiscardHandler))
		if err == nil {
			// Closing the last connection checkpoints the WAL into the
			// file, so the file alone is the whole database.
			err = st.Close()
		}
		sqliteTemplate.path, sqliteTemplate.err = p, err
	})
	if sqliteTemplate.err != nil {
		return sqliteTemplate.err
	}
	return copyFile(sqliteTemplate.path, path)
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		return errors.Join(err, dst.Close(), os.Remove(to))
	}
	return dst.Close()
}
