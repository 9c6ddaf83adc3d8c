package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// Service is the only writer of rules, and the only loader of the
// engine's rules: the rules without an app (a rule with one reaches only
// that app's instances, through the snapshot). Every write runs in one
// store transaction that ends by checking, with the engine's own
// validation, the rules it leaves on the resources it touches, against the
// rules the engine holds for every other resource, and the same for the
// engine of every app that has rules of its own there; after the commit
// the engine gets those resources' rules, each resource switching at once.
// Writes are serialised, so the engine always holds the rules of the last
// commit: the database and the engine never disagree. On PostgreSQL so are
// the writes of every replica (store.Store.InTx), and each first reads
// again, in its transaction, the rules another replica wrote since they
// were last read (catchUp): what it checks is what it commits.
//
// It keeps every stored rule in memory, as of the last commit, indexed by
// name and by resource, so a write costs what the rules of the resources it
// touches cost, however many rules are stored.
type Service struct {
	store  *store.Store
	engine *engine.Engine
	mu     sync.Mutex
	// Guarded by mu: every stored rule, and the rules' IDs by name and by
	// resource (ascending).
	rules      map[int64]Rule
	named      map[string]int64
	onResource map[string][]int64
	watch      watch // the snapshot's revision and its waiters (watch.go)
	// synced is the store's revision read before the rules were last read
	// whole (reload): what is held is at least that recent. Guarded by mu.
	synced int64
}

// New returns the rule service of st and eng; Load fills it.
func New(st *store.Store, eng *engine.Engine) *Service {
	return &Service{store: st, engine: eng}
}

// Load reads every rule and loads the enabled ones into the engine, in
// place of any it held; it runs at start-up, before the listener opens.
func (s *Service) Load(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rev, err := s.store.RulesRevision(ctx)
	if err != nil {
		return err
	}
	rows, err := s.store.AllRules(ctx)
	if err != nil {
		return err
	}
	return s.reload(rev, rows)
}

// reload holds rows, every stored rule as read at revision rev or later,
// in place of the rules held, gives the snapshot that revision, waking its
// waiters, and loads the enabled rules into the engine. The caller holds
// mu.
func (s *Service) reload(rev int64, rows []store.Rule) error {
	if err := s.hold(rows); err != nil {
		return err
	}
	s.synced = rev
	err := loadEvery(s.engine, enabledRules(s.rules))
	s.revisionIs(rev)
	return err
}

// hold puts rows, every stored rule, in place of the rules held. The
// caller holds mu.
func (s *Service) hold(rows []store.Rule) error {
	stored := make(map[int64]*Rule, len(rows))
	for _, row := range rows {
		r, err := fromStore(row)
		if err != nil {
			return err
		}
		stored[r.ID] = &r
	}
	s.rules = make(map[int64]Rule, len(rows))
	s.named = make(map[string]int64, len(rows))
	s.onResource = map[string][]int64{}
	s.record(stored)
	return nil
}

// Follow keeps the rules in step with the other replicas that share the
// database (PostgreSQL), until ctx ends: whenever one announces a rule
// write, when the listener (re)connects and may have missed some, and
// every second besides, the store's revision is compared with the one the
// rules were last read at, and if it moved they are read again and the
// engine loaded with them. Every announcement goes to also
// (store.Store.Changes), on the same goroutine. On SQLite it returns at
// once.
func (s *Service) Follow(ctx context.Context, logger *slog.Logger, also func(what string)) {
	s.store.Changes(ctx, func(what string) {
		if what == store.ChangedRules || what == store.ChangedEverything {
			if err := s.resync(ctx); err != nil && ctx.Err() == nil {
				logger.Error("rules: reading the rules another replica wrote failed", "error", err)
			}
		}
		also(what)
	})
}

// resync is resyncLocked under mu.
func (s *Service) resync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resyncLocked(ctx)
}

// resyncLocked reads every rule again, as Load does, if the store's
// revision moved since the last such read, loads them into the engine and
// gives the snapshot that revision, waking its waiters. The revision is
// read first, so what is held is never older than the revision it is
// given: a write that lands in between moves the revision again, and the
// next resync reads it. The caller holds mu.
func (s *Service) resyncLocked(ctx context.Context) error {
	rev, err := s.store.RulesRevision(ctx)
	if err != nil {
		return err
	}
	if rev == s.synced {
		return nil
	}
	rows, err := s.store.AllRules(ctx)
	if err != nil {
		return err
	}
	return s.reload(rev, rows)
}

// catchUp is resyncLocked read in stx, the transaction of a write, on a
// database that other replicas write (PostgreSQL): stx has the rule write
// lock, so no other replica writes until it ends, and the write is checked
// against the rules the database holds, not those this replica had heard
// of, up to a second behind. Were it checked against those, two replicas
// could each commit a rule that the other's makes invalid (a second
// concurrency hotspot rule on a resource), and no engine would load the
// set. On SQLite every write is s's own, and what s holds is the database's.
// The caller holds mu.
func (s *Service) catchUp(stx *store.Tx) error {
	if !s.store.Replicated() {
		return nil
	}
	rev, err := stx.RulesRevision()
	if err != nil || rev == s.synced {
		return err
	}
	rows, err := stx.AllRules()
	if err != nil {
		return err
	}
	if err := s.reload(rev, rows); err != nil {
		return fmt.Errorf("the stored rules are not a set this server's engine loads: %w", err)
	}
	return nil
}

// record updates the stored rules and their indexes with changed, which
// has been written. Each resource's IDs are sorted once, so a write of
// many rules on one resource costs what they cost, not their square.
func (s *Service) record(changed map[int64]*Rule) {
	touched := map[string]bool{}
	for id := range changed {
		if old, ok := s.rules[id]; ok {
			delete(s.rules, id)
			delete(s.named, old.Name)
			touched[old.Resource] = true
		}
	}
	for resource := range touched {
		s.onResource[resource] = slices.DeleteFunc(s.onResource[resource], func(id int64) bool {
			_, ok := changed[id]
			return ok
		})
	}
	for id, r := range changed {
		if r != nil {
			s.rules[id] = *r
			s.named[r.Name] = id
			if r.Kind != engine.KindSystem {
				s.onResource[r.Resource] = append(s.onResource[r.Resource], id)
				touched[r.Resource] = true
			}
		}
	}
	for resource := range touched {
		if ids := s.onResource[resource]; len(ids) == 0 {
			delete(s.onResource, resource)
		} else {
			slices.Sort(ids)
		}
	}
}

// enabledRules returns the engine rules of the enabled rules that the
// server's own engine runs (those without an app), by ID; its Resources
// are left empty.
func enabledRules(rules map[int64]Rule) engine.ResourceRules {
	var set engine.ResourceRules
	for _, id := range slices.Sorted(maps.Keys(rules)) {
		if r := rules[id]; r.RunsIn("") {
			r.Enforce(&set)
		}
	}
	return set
}

// loadEvery hands every kind of set to the engine, each as a full
// replacement.
func loadEvery(e *engine.Engine, set engine.ResourceRules) error {
	return errors.Join(e.LoadFlowRules(set.Flow), e.LoadCircuitBreakerRules(set.CircuitBreakers),
		e.LoadHotspotRules(set.Hotspot), e.LoadAuthorityRules(set.Authority), e.LoadAdaptiveConcurrencyRules(set.AdaptiveConcurrency),
		e.LoadSystemRules(set.System))
}

// NowMs is the engine's time, in Unix milliseconds, by which rules expire.
func (s *Service) NowMs() int64 { return s.engine.Clock().NowMs() }
