package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
)

// Replicas of the server that share a PostgreSQL database learn of each
// other's writes through it: a write announces what it changed (Changed)
// in its transaction, PostgreSQL delivers the announcement when the
// transaction commits (NOTIFY), and every replica listening (Changes)
// reloads what it caches. NOTIFY keeps nothing for a listener that is
// away, so a listener that (re)connects is told to reload everything.
// SQLite has one process: there is nothing to tell.

// changesChannel is the PostgreSQL channel of the announcements.
const changesChannel = "sluice_changes"

// What a change announcement names.
const (
	// ChangedRules: a rule was written.
	ChangedRules = "rules"
	// ChangedTokens: an API token was created, replaced or revoked.
	ChangedTokens = "tokens"
	// ChangedEverything is what a listener is told when it (re)connects:
	// it may have missed any announcement.
	ChangedEverything = "*"
)

// listenRetry is how long a listener waits before reconnecting.
const listenRetry = time.Second

// announce tells the other replicas, once db's transaction commits, that
// what names changed. Nothing on SQLite.
func announce(db *gorm.DB, what string) error {
	if !onPostgres(db) {
		return nil
	}
	return db.Exec("SELECT pg_notify(?, ?)", changesChannel, what).Error
}

// Changed announces in t's transaction that what changed (ChangedRules,
// …), for the replicas sharing the database.
func (t *Tx) Changed(what string) error { return announce(t.db, what) }

// Changes calls handle with what changed (ChangedRules, ChangedTokens, or
// ChangedEverything after every connection, the first included) whenever
// a replica sharing the database announces a change, its own included,
// until ctx ends. It returns at once on SQLite, which no other process
// writes. Handle runs on Changes' goroutine, one call at a time.
func (s *Store) Changes(ctx context.Context, handle func(what string)) {
	if s.url == "" {
		return
	}
	for ctx.Err() == nil {
		err := s.listen(ctx, handle)
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("store: listening for other replicas' changes failed; reconnecting", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(listenRetry):
		}
	}
}

// listen holds one connection that listens for announcements, until it
// fails or ctx ends.
func (s *Store) listen(ctx context.Context, handle func(what string)) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		return err
	}
	handle(ChangedEverything)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		handle(n.Payload)
	}
}
