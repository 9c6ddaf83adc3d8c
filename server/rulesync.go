package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// ruleSync is the only writer of rules. Every write runs in one store
// transaction that ends by checking, with the engine's own validation, the
// complete set of enabled rules it leaves; after the commit the engine gets
// that set. Writes are serialised, so the engine always holds the set of the
// last commit: the database and the engine never disagree.
type ruleSync struct {
	store  *store.Store
	engine *engine.Engine
	mu     sync.Mutex
}

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
	flow, err := enabledFlowRules(rows)
	if err != nil {
		return err
	}
	return s.engine.LoadFlowRules(flow)
}

// write runs fn in a transaction. If fn fails, or the rules it leaves are
// not a set the engine accepts, nothing is written. With dryRun the
// transaction is always rolled back and the engine left alone.
func (s *ruleSync) write(ctx context.Context, dryRun bool, fn func(tx *store.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var flow []engine.FlowRule
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		rows, err := tx.AllRules()
		if err != nil {
			return err
		}
		if flow, err = enabledFlowRules(rows); err != nil {
			return err
		}
		if err := engine.ValidateFlowRules(flow); err != nil {
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
	return s.engine.LoadFlowRules(flow)
}

func enabledFlowRules(rows []store.Rule) ([]engine.FlowRule, error) {
	var flow []engine.FlowRule
	for _, row := range rows {
		if !row.Enabled || row.Kind != kindFlow {
			continue
		}
		r, err := ruleFromStore(row)
		if err != nil {
			return nil, err
		}
		flow = append(flow, r.engineFlow())
	}
	return flow, nil
}

// revise records r, as it is after the write, as a revision.
func revise(tx *store.Tx, r *rule, action string, who actor) error {
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
