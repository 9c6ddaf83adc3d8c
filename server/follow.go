package server

import (
	"context"

	"github.com/sluicehq/sluice/store"
)

// startFollowing keeps this replica in step with the others that share
// its PostgreSQL database, until Shutdown: their rule writes reach its
// engine, and the API tokens they create or revoke its token cache, as
// the database announces them (store.Store.Changes; after a reconnection
// everything is read again, since announcements are not kept). On SQLite
// there is one process, and nothing to follow.
func (s *Server) startFollowing() {
	ctx, cancel := context.WithCancel(context.Background())
	s.follow, s.followed = cancel, make(chan struct{})
	go func() {
		defer close(s.followed)
		s.rules.Follow(ctx, s.logger, func(what string) {
			if what != store.ChangedTokens && what != store.ChangedEverything {
				return
			}
			if err := s.auth.reloadTokens(ctx); err != nil && ctx.Err() == nil {
				s.logger.Error("auth: reading the tokens another replica wrote failed", "error", err)
			}
		})
	}()
}
