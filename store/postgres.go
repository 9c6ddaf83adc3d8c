package store

import (
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"

	"github.com/sluicehq/sluice/migrations"
)

// postgresConns is how many connections a Store keeps to PostgreSQL: it
// takes concurrent writers, so one pool serves reads and writes.
const postgresConns = 16

// IsPostgres reports whether db names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// openPostgres opens the PostgreSQL database at url with pgx.
func openPostgres(url string) (*backend, error) {
	sqlDB, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	sqlDB.SetMaxOpenConns(postgresConns)
	sqlDB.SetMaxIdleConns(postgresConns)
	dialector := postgres.New(postgres.Config{Conn: sqlDB})
	return &backend{
		sqlDB:         sqlDB,
		dialector:     dialector,
		migrations:    goose.DialectPostgres,
		migrationsFS:  migrations.Postgres,
		readDB:        sqlDB,
		readDialector: dialector,
		// A transaction id is assigned only where a write could be: a
		// hot standby or a read-only transaction refuses one.
		writeProbe: "SELECT txid_current()",
	}, nil
}
