package rules

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// watch is the rule set's revision, as the instances that poll the
// snapshot see it, and the channel its waiters wait on: closed at the next
// committed write, so that any number of waiters wake at once and none
// polls.
type watch struct {
	mu sync.Mutex
	// revision is the store's RulesRevision as of the last commit, once
	// loaded.
	revision int64
	loaded   bool
	next     chan struct{} // closed at the next change; nil while no one waits
}

// Snapshot is the rule set an engine of an app must run, as of Revision.
type Snapshot struct {
	// Revision grows with every rule write, whichever rule it changes.
	Revision int64
	// Rules are the enabled, unexpired rules, by ID.
	Rules []Rule
}

// Watch returns the rule set's revision and a channel that is closed at
// the next write committed after it.
func (s *Service) Watch(ctx context.Context) (int64, <-chan struct{}, error) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if s.watch.next == nil {
		s.watch.next = make(chan struct{})
	}
	rev, err := s.revisionLocked(ctx)
	return rev, s.watch.next, err
}

// Snapshot returns the rules an engine of app must run and their
// revision, read together: no write comes between. A rule that expires
// later is in it with its expiresAt, which the engine that loads it
// honours. Filtering by app is inSnapshot's.
func (s *Service) Snapshot(ctx context.Context, app string) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watch.mu.Lock()
	rev, err := s.revisionLocked(ctx)
	s.watch.mu.Unlock()
	if err != nil {
		return Snapshot{}, domainError(err)
	}
	nowMs := s.engine.Clock().NowMs()
	snap := Snapshot{Revision: rev, Rules: []Rule{}}
	for _, id := range slices.Sorted(maps.Keys(s.rules)) {
		if r := s.rules[id]; r.RunsAt(app, nowMs) {
			snap.Rules = append(snap.Rules, r)
		}
	}
	return snap, nil
}

// revisionLocked returns the revision, read from the store the first time.
// The caller holds watch.mu.
func (s *Service) revisionLocked(ctx context.Context) (int64, error) {
	if !s.watch.loaded {
		rev, err := s.store.RulesRevision(ctx)
		if err != nil {
			return 0, err
		}
		s.watch.revision, s.watch.loaded = rev, true
	}
	return s.watch.revision, nil
}

// changed is called by every write once it is committed, under mu, on a
// database no other process writes: it reads the new revision and wakes
// the waiters. If the store cannot say, the next Watch reads it again.
func (s *Service) changed(ctx context.Context) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	rev, err := s.store.RulesRevision(context.WithoutCancel(ctx))
	s.watch.revision, s.watch.loaded = rev, err == nil
	s.wakeLocked()
}

// revisionIs gives the snapshot revision rev, which the rules held are at
// least as recent as, and wakes the waiters.
func (s *Service) revisionIs(rev int64) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	s.watch.revision, s.watch.loaded = rev, true
	s.wakeLocked()
}

// wakeLocked wakes the snapshot's waiters. The caller holds watch.mu.
func (s *Service) wakeLocked() {
	if s.watch.next != nil {
		close(s.watch.next)
		s.watch.next = nil
	}
}
