package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/pressly/goose/v3"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// slowQueryThreshold is how long a statement may run before GORM logs it as
// slow.
const slowQueryThreshold = 200 * time.Millisecond

// Store is Sluice's persistence. It is safe for concurrent use.
type Store struct {
	db *gorm.DB
	// read is the read pool's: what needs no transaction and should not
	// wait for a write reads through it (see readConns).
	read   *gorm.DB
	b      *backend
	logger *slog.Logger
	// url is the PostgreSQL database's, for the listener of Changes; ""
	// on SQLite.
	url string
	// reports is the AddInstanceMinutes calls waiting for their group
	// commit (groupQueue).
	reports groupQueue[*reportWrite]
	// instances is the PutInstance calls waiting for theirs.
	instances groupQueue[*Instance]
}

// Option changes how Open builds a Store.
type Option func(*options)

type options struct {
	now       func() time.Time
	exclusive bool
}

// Exclusive has Open refuse, with ErrInUse, a SQLite database file that
// a Store opened with Exclusive holds, in this process or another: two
// servers on one file would each answer with rules that the other's
// engine never loads. Opens without it (sluice admin reset-password) are
// not refused. On PostgreSQL, which replicas share by design, it does
// nothing.
func Exclusive() Option {
	return func(o *options) { o.exclusive = true }
}

// ErrInUse is Open refusing, for Exclusive, a database another Store holds.
var ErrInUse = errors.New("another sluice server has this database open")

// WithNowFunc sets the clock GORM reads for created and updated times; the
// store converts whatever it returns to UTC, to the microsecond. Optional. Default: time.Now.
func WithNowFunc(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// Open opens (creating if needed) the SQLite database at path, a file path
// or a URI filename ("file:/var/lib/sluice.db?vfs=unix-excl"), and applies
// every pending migration before it returns. Opening the same file again,
// as on a restart, applies nothing new. It refuses a database that it
// cannot write, or whose schema is newer than the migrations built into
// this binary, rather than serve it and fail later. The caller closes the
// Store.
func Open(ctx context.Context, path string, logger *slog.Logger, opts ...Option) (*Store, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if logger == nil {
		logger = slog.Default()
	}

	open, url := openSQLite, ""
	if IsPostgres(path) {
		open, url = openPostgres, path
	}
	var unlock func() error
	if file := sqliteFile(path); o.exclusive && url == "" && file != "" {
		var err error
		if unlock, err = lockFile(file); err != nil {
			return nil, err
		}
	}
	b, err := open(path)
	if err != nil {
		if unlock != nil {
			err = errors.Join(err, unlock())
		}
		return nil, err
	}
	b.unlock = unlock
	// The URL of a PostgreSQL database may carry a password: errors and
	// logs name the database by its location only.
	path = redacted(path)
	config := func() *gorm.Config {
		return &gorm.Config{
			TranslateError: true,
			// Microseconds: PostgreSQL keeps no finer, and a time read
			// back must equal the one written, on either database.
			NowFunc: func() time.Time { return o.now().UTC().Truncate(time.Microsecond) },
			Logger:  gormLogger(logger),
		}
	}
	db, err := gorm.Open(b.dialector, config())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open database %s: %w", path, err), b.close())
	}
	read, err := gorm.Open(b.readDialector, config())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open database %s: %w", path, err), b.close())
	}
	s := &Store{db: db, read: read, b: b, logger: logger, url: url}
	if err := s.Ping(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("the database %s cannot be written: %w", path, err), b.close())
	}
	if err := s.migrate(ctx, b, path); err != nil {
		return nil, errors.Join(err, b.close())
	}
	if err := b.identify(); err != nil {
		return nil, errors.Join(fmt.Errorf("open database %s: %w", path, err), b.close())
	}
	refuseWritesToAGoneFile(db, b)
	return s, nil
}

// refuseWritesToAGoneFile fails every statement that writes through db
// (creates, updates, deletes, Exec) once b's file is gone (ErrFileGone),
// rather than acknowledging writes that a restart would lose.
func refuseWritesToAGoneFile(db *gorm.DB, b *backend) {
	if b.file == "" {
		return
	}
	check := func(tx *gorm.DB) {
		if err := b.fileGone(); err != nil {
			_ = tx.AddError(err)
		}
	}
	cb := db.Callback()
	_ = cb.Create().Before("gorm:create").Register("sluice:file_gone", check)
	_ = cb.Update().Before("gorm:update").Register("sluice:file_gone", check)
	_ = cb.Delete().Before("gorm:delete").Register("sluice:file_gone", check)
	_ = cb.Raw().Before("gorm:raw").Register("sluice:file_gone", check)
}

// migrate applies the embedded migrations that the database has not seen,
// unless it has seen one this binary does not have: the newer binary that
// wrote it may have changed the schema in ways this one cannot read, and
// goose alone would apply nothing and report no error.
func (s *Store) migrate(ctx context.Context, b *backend, path string) error {
	provider, err := goose.NewProvider(b.migrations, b.sqlDB, b.migrationsFS,
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("prepare migrations: %w", err)
	}
	dbVersion, binaryVersion, err := provider.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("read the schema version of %s: %w", path, err)
	}
	if dbVersion > binaryVersion {
		return fmt.Errorf("the database schema of %s is at version %d, newer than this binary's %d: run a newer sluice",
			path, dbVersion, binaryVersion)
	}
	if dbVersion >= usersVersion && dbVersion < usernamesFoldVersion {
		if err := checkUsernameClashes(ctx, b.sqlDB); err != nil {
			return fmt.Errorf("cannot migrate %s: %w", path, err)
		}
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	for _, r := range results {
		s.logger.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// Ping checks that the database answers and takes a write: in a
// transaction, which takes SQLite's write lock (the connections begin
// IMMEDIATE), it sets the header's user_version, which Sluice does not use,
// and rolls back, so nothing reaches the disk. Taking the lock alone is not
// enough: SQLite grants it on a database opened read-only. Ping fails on a
// database opened read-only (by its file's or directory's permissions, a
// read-only mount, mode=ro or _query_only), on a closed store, and when
// another process holds the write lock past the busy timeout, and with
// ErrFileGone once a SQLite database's file is removed or replaced, and
// once the process may no longer write to the file (fileWritable: made
// immutable, say), which the connection that opened it for writing
// before does not notice until a checkpoint; a full disk only shows on a
// write that commits.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.b.fileGone(); err != nil {
		return err
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.b.writeProbe)
	if err = errors.Join(err, tx.Rollback()); err != nil {
		return err
	}
	return s.b.fileWritable()
}

// redacted is db with the password of a URL replaced by "xxxxx".
func redacted(db string) string {
	u, err := url.Parse(db)
	if err != nil || u.User == nil || !IsPostgres(db) {
		return db
	}
	return u.Redacted()
}

// Close closes the database. The Store must not be used afterwards.
func (s *Store) Close() error {
	return s.b.close()
}

// gormLogger sends failed and slow statements to logger, without their
// parameters, which may carry secrets. A duplicate key is no failure of
// the database's: it is a caller's conflict (ErrConflict, a 409), as a
// missing row is a 404.
func gormLogger(l *slog.Logger) logger.Interface {
	return quietConflicts{logger.NewSlogLogger(l, logger.Config{
		SlowThreshold:             slowQueryThreshold,
		IgnoreRecordNotFoundError: true,
		ParameterizedQueries:      true,
		LogLevel:                  logger.Warn,
	})}
}

// quietConflicts is a GORM logger that logs a statement refused for a
// duplicate key as it would a statement that succeeded: only if slow.
type quietConflicts struct{ logger.Interface }

func (q quietConflicts) LogMode(level logger.LogLevel) logger.Interface {
	return quietConflicts{q.Interface.LogMode(level)}
}

func (q quietConflicts) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		err = nil
	}
	q.Interface.Trace(ctx, begin, fc, err)
}

// ParamsFilter is the wrapped logger's, which leaves the parameters out
// of what it logs: GORM asks the logger it holds, this one.
func (q quietConflicts) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := q.Interface.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, params
}
