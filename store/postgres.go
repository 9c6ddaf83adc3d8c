package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
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

// parallelWorkersParam is the server setting that bounds a query's
// parallel workers.
const parallelWorkersParam = "max_parallel_workers_per_gather"

// openPostgres opens the PostgreSQL database at url with pgx. Its
// sessions run without parallel workers unless url sets
// max_parallel_workers_per_gather: Sluice's reads are short (a ranking
// reads some 40,000 index entries), and starting workers cost the 24-hour
// ranking on the 10 M-row seed four times its time on 2 cores
// (docs/performance.md). The setting is made by a SET once a session
// starts rather than among the startup parameters, which a connection
// pooler such as PgBouncer refuses unless told to ignore them.
func openPostgres(url string) (*backend, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	var opts []stdlib.OptionOpenDB
	if _, set := cfg.RuntimeParams[parallelWorkersParam]; !set {
		opts = append(opts, stdlib.OptionAfterConnect(func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, "SET "+parallelWorkersParam+" = 0")
			return err
		}))
	}
	sqlDB := stdlib.OpenDB(*cfg, opts...)
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
