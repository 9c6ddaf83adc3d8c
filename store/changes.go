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

// rulesCheckEvery is how often Changes tells of rules without an
// announcement, for the reader to compare their revision: a safety net
// for an announcement lost in transit, which keeps a write within a second
// of every replica whatever happens to the listening connection.
const rulesCheckEvery = time.Second

// Replicated reports whether other processes may write the database
// (PostgreSQL): what a Store's reader caches may then change under it.
func (s *Store) Replicated() bool { return s.url != "" }

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

// Changes calls handle with what changed whenever a replica sharing the
// database announces a change, its own included: ChangedRules,
// ChangedTokens, or ChangedEverything after every connection of its
// listener, the first included. It also tells of ChangedRules every
// rulesCheckEvery, announced or not, so that a reader that compares the
// rules' revision never misses a write for long. It runs until ctx ends,
// and returns at once on SQLite, which no other process writes. Handle
// runs on Changes' goroutine, one call at a time.
func (s *Store) Changes(ctx context.Context, handle func(what string)) {
	if s.url == "" {
		return
	}
	announced := make(chan string, 64)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		for ctx.Err() == nil {
			err := s.listen(ctx, announced)
			if ctx.Err() != nil {
				return
			}
			s.logger.Warn("store: listening for other replicas' changes failed; reconnecting", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(listenRetry):
			}
		}
	}()
	tick := time.NewTicker(rulesCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			<-listening
			return
		case what := <-announced:
			handle(what)
		case <-tick.C:
			handle(ChangedRules)
		}
	}
}

// listen holds one connection that listens for announcements and passes
// them on, until it fails or ctx ends.
func (s *Store) listen(ctx context.Context, announced chan<- string) error {
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
	what := ChangedEverything
	for {
		select {
		case announced <- what:
		case <-ctx.Done():
			return ctx.Err()
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		what = n.Payload
	}
}
