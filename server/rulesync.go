package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// ruleSync is the only writer of rules. Every write runs in one store
// transaction that ends by checking, with the engine's own validation, the
// complete set of enabled rules it leaves; after the commit the engine gets
// that set. Writes are serialised, so the engine always holds the set of the
// last commit: the database and the engine never disagree.
//
// It keeps every stored rule in memory, as of the last commit, so a write
// learns the new set from what it changed instead of reading every rule back.
type ruleSync struct {
	store  *store.Store
	engine *engine.Engine
	mu     sync.Mutex
	rules  map[int64]rule // guarded by mu
}

// ruleTx is a rule write in progress: the store transaction, the rules as
// of the last commit, and what the write changes.
type ruleTx struct {
	*store.Tx
	stored  map[int64]rule
	changed map[int64]*rule // nil: deleted
}

// saved records that r was written as it is now.
func (tx *ruleTx) saved(r *rule) {
	copied := *r
	tx.changed[r.ID] = &copied
}

// deleted records that rule id was deleted.
func (tx *ruleTx) deleted(id int64) { tx.changed[id] = nil }

// errDryRun rolls back a write that was only rehearsed.
var errDryRun = errors.New("dry run")

// load reads every rule and loads the enabled ones into the engine; it runs
// at start-up, before the listener opens.
func (s *ruleSync) load(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.store.AllRules(ctx)
	if err != nil {
		return err
	}
	rules := make(map[int64]rule, len(rows))
	for _, row := range rows {
		r, err := ruleFromStore(row)
		if err != nil {
			return err
		}
		rules[r.ID] = r
	}
	if err := enabledRules(rules).load(s.engine); err != nil {
		return err
	}
	s.rules = rules
	return nil
}

// write runs fn in a transaction. If fn fails, or the rules it leaves are
// not a set the engine accepts, nothing is written. With dryRun the
// transaction is always rolled back and the engine left alone.
func (s *ruleSync) write(ctx context.Context, dryRun bool, fn func(tx *ruleTx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next map[int64]rule
	var set engineRules
	err := s.store.InTx(ctx, func(stx *store.Tx) error {
		tx := &ruleTx{Tx: stx, stored: s.rules, changed: map[int64]*rule{}}
		if err := fn(tx); err != nil {
			return err
		}
		next = maps.Clone(s.rules)
		for id, r := range tx.changed {
			if r == nil {
				delete(next, id)
			} else {
				next[id] = *r
			}
		}
		set = enabledRules(next)
		if err := set.validate(); err != nil {
			return fmt.Errorf("the rule set the write leaves is not valid: %w", err)
		}
		if dryRun {
			return errDryRun
		}
		return nil
	})
	if dryRun && errors.Is(err, errDryRun) {
		return nil
	}
	if err != nil {
		return err
	}
	// Validated above, so loading cannot fail on the rules themselves.
	if err := set.load(s.engine); err != nil {
		return err
	}
	s.rules = next
	return nil
}

// engineRules is what the engine enforces: the enabled rules of each kind.
type engineRules struct {
	flow     []engine.FlowRule
	breakers []engine.CircuitBreakerRule
}

// enabledRules returns the engine rules of the enabled rules, by ID.
func enabledRules(rules map[int64]rule) engineRules {
	var set engineRules
	for _, id := range slices.Sorted(maps.Keys(rules)) {
		r := rules[id]
		switch {
		case !r.Enabled:
		case r.Kind == kindFlow:
			set.flow = append(set.flow, r.engineFlow())
		case r.Kind == kindBreaker:
			set.breakers = append(set.breakers, r.engineBreaker())
		}
	}
	return set
}

func (set engineRules) validate() error {
	return errors.Join(engine.ValidateFlowRules(set.flow), engine.ValidateCircuitBreakerRules(set.breakers))
}

// load hands both kinds to the engine; each kind switches atomically.
func (set engineRules) load(e *engine.Engine) error {
	return errors.Join(e.LoadFlowRules(set.flow), e.LoadCircuitBreakerRules(set.breakers))
}

// revise records r, as it is after the write, as a revision.
func revise(tx *ruleTx, r *rule, action string, who actor) error {
	content, err := json.Marshal(r.api())
	if err != nil {
		return err
	}
	return tx.AddRevision(&store.RuleRevision{
		RuleID: r.ID, Version: r.Version, Action: action, Content: string(content),
		Actor: who.name, Reason: who.reason,
	})
}

// actor is who writes, and why.
type actor struct {
	name   string
	reason string
}
