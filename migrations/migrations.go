package migrations

import (
	"embed"
	"io/fs"
)

// FS holds every migration of this directory, SQLite's, applied in version
// order by the store at start-up.
//
//go:embed *.sql
var FS embed.FS

//go:embed postgres/*.sql
var postgres embed.FS

// Postgres holds PostgreSQL's migrations: the same versions as FS, each
// the same schema change in PostgreSQL's SQL.
var Postgres = func() fs.FS {
	sub, err := fs.Sub(postgres, "postgres")
	if err != nil {
		panic(err)
	}
	return sub
}()
