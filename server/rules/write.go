package rules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/store"
)

// Revision is one version of a rule as it was written.
type Revision struct {
	Version int64
	// Action is what made this version: store.ActionCreate, …
	Action string
	Rule   Rule
	Actor  string
	Reason string
	// CreatedAt is when it was written, in UTC.
	CreatedAt time.Time
}

// IfMatch says whether a write based on the versions a client names may
// change a rule now at version; nil allows any.
type IfMatch func(version int64) bool

// List returns one page of the rules filter selects, by id.
func (s *Service) List(ctx context.Context, filter store.RuleFilter, page store.Page) ([]Rule, int64, error) {
	rows, total, err := s.store.ListRules(ctx, filter, page)
	if err != nil {
		return nil, 0, domainError(err)
	}
	items := make([]Rule, 0, len(rows))
	for _, row := range rows {
		r, err := fromStore(row)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, r)
	}
	return items, total, nil
}

// Get returns rule id.
func (s *Service) Get(ctx context.Context, id int64) (Rule, error) {
	row, err := s.store.GetRule(ctx, id)
	if err != nil {
		return Rule{}, domainError(ruleMissing(id, err))
	}
	return fromStore(row)
}

// All returns every rule, by name.
func (s *Service) All(ctx context.Context) ([]Rule, error) {
	rows, err := s.store.AllRules(ctx)
	if err != nil {
		return nil, domainError(err)
	}
	all := make([]Rule, 0, len(rows))
	for _, row := range rows {
		r, err := fromStore(row)
		if err != nil {
			return nil, err
		}
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b Rule) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}

// Create stores r, a rule as wire.DecodeRule and wire.ValidateRule made
// it, and loads it into the engine.
func (s *Service) Create(ctx context.Context, r Rule, who Actor) (Rule, error) {
	if !who.mayWrite(r.App) {
		return Rule{}, forbidden(who.outOfScope("app", "the rule", r.App))
	}
	err := s.write(ctx, false, func(tx *Tx) error {
		if err := createRule(tx, &r, who); err != nil {
			return err
		}
		tx.from(r.Name, requestPath{})
		return tx.announce(EventRuleCreated, &r, who)
	})
	return r, err
}

// Edit makes a rule's next version from its current one, or answers why
// it cannot (a ValidationError, see InvalidRule).
type Edit func(current Rule) (Rule, error)

// Update writes what edit makes of rule id as its next version; a result
// that changes nothing (apply would call it unchanged) is not written, and
// the rule keeps its version.
func (s *Service) Update(ctx context.Context, id int64, match IfMatch, edit Edit, who Actor) (Rule, error) {
	var r Rule
	err := s.write(ctx, false, func(tx *Tx) error {
		current, err := currentRule(tx, id, match)
		if err != nil {
			return err
		}
		if !who.mayWrite(current.App) {
			return forbidden(who.outOfScope("app", fmt.Sprintf("rule %d", id), current.App))
		}
		if r, err = edit(current); err != nil {
			return err
		}
		if !who.mayWrite(r.App) {
			return forbidden(who.outOfScope("app", "the rule as written", r.App))
		}
		if same, err := sameContent(&current, &r); err != nil || same {
			r = current
			return err
		}
		tx.from(r.Name, requestPath{})
		if err := updateRule(tx, &r, store.ActionUpdate, who); err != nil {
			return err
		}
		return tx.announce(EventRuleUpdated, &r, who)
	})
	return r, err
}

// sameContent reports whether rule b holds what rule a does, its name
// included: writing one over the other would change nothing.
func sameContent(a, b *Rule) (bool, error) {
	if a.Name != b.Name {
		return false, nil
	}
	changes, err := contentChanges(ContentOf(a), ContentOf(b))
	return len(changes) == 0, err
}

// Delete removes rule id; its history stays readable.
func (s *Service) Delete(ctx context.Context, id int64, match IfMatch, who Actor) error {
	return s.write(ctx, false, func(tx *Tx) error {
		r, err := currentRule(tx, id, match)
		if err != nil {
			return err
		}
		if !who.mayWrite(r.App) {
			return forbidden(who.outOfScope("app", fmt.Sprintf("rule %d", id), r.App))
		}
		if err := deleteRule(tx, &r, who); err != nil {
			return err
		}
		return tx.announce(EventRuleDeleted, &r, who)
	})
}

// Revisions returns one page of rule id's history, newest first.
func (s *Service) Revisions(ctx context.Context, id int64, page store.Page) ([]Revision, int64, error) {
	revs, total, err := s.store.ListRevisions(ctx, id, page)
	if err != nil {
		return nil, 0, domainError(ruleMissing(id, err))
	}
	items := make([]Revision, 0, len(revs))
	for _, rev := range revs {
		r, err := fromRevision(rev)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, Revision{
			Version: rev.Version, Action: rev.Action, Rule: r, Actor: rev.Actor, Reason: rev.Reason,
			CreatedAt: rev.CreatedAt.UTC(),
		})
	}
	return items, total, nil
}

// Rollback restores the content of version to of rule id as its next
// version.
func (s *Service) Rollback(ctx context.Context, id, to int64, match IfMatch, who Actor) (Rule, error) {
	var r Rule
	err := s.write(ctx, false, func(tx *Tx) error {
		current, err := currentRule(tx, id, match)
		if err != nil {
			return err
		}
		if !who.mayWrite(current.App) {
			return forbidden(who.outOfScope("app", fmt.Sprintf("rule %d", id), current.App))
		}
		rev, err := tx.GetRevision(id, to)
		if err != nil {
			return fmt.Errorf("rule %d has no version %d: %w", id, to, err)
		}
		old, err := fromRevision(rev)
		if err != nil {
			return err
		}
		if !who.mayWrite(old.App) {
			return forbidden(who.outOfScope("app", fmt.Sprintf("version %d of rule %d", to, id), old.App))
		}
		r = current
		r.Name, r.App, r.Resource, r.Enabled, r.Mode, r.Description = old.Name, old.App, old.Resource, old.Enabled, old.Mode, old.Description
		r.Spec = old.Spec
		var errs []engine.FieldError
		wire.ValidateRule(&r, "", "", &errs)
		if len(errs) > 0 {
			return invalid(fmt.Sprintf("version %d is not a valid rule any more", to), errs...)
		}
		tx.from(r.Name, requestPath{})
		if err := updateRule(tx, &r, store.ActionRollback, who); err != nil {
			return err
		}
		return tx.announce(EventRuleRolledBack, &r, who)
	})
	return r, err
}

// Seed creates those of want whose names no rule has, and returns how
// many it created; a rule of the same name, changed or not, is left as it
// is.
func (s *Service) Seed(ctx context.Context, want []Rule, who Actor) (int, error) {
	created := 0
	err := s.write(ctx, false, func(tx *Tx) error {
		for i := range want {
			if _, taken := tx.named(want[i].Name); taken {
				continue
			}
			if err := createRule(tx, &want[i], who); err != nil {
				return err
			}
			created++
		}
		return nil
	})
	return created, err
}

// createRule stores r, naming it first if it has no name.
func createRule(tx *Tx, r *Rule, who Actor) error {
	if r.Name == "" {
		name, err := uniqueName(r.Kind, r.Subject(), func(name string) (bool, error) {
			_, err := tx.RuleByName(name)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return err
		}
		r.Name = name
	}
	row, err := toStore(r)
	if err != nil {
		return err
	}
	if err := tx.CreateRule(&row); err != nil {
		return nameTaken(r.Name, err)
	}
	r.ID, r.Version, r.CreatedAt, r.UpdatedAt = row.ID, row.Version, row.CreatedAt, row.UpdatedAt
	tx.saved(r)
	return revise(tx, r, store.ActionCreate, who)
}

// createRules creates named rules, as createRule does each, in batches:
// an apply of 100,000 rules is two hundred statements, not two hundred
// thousand.
func createRules(tx *Tx, rules []*Rule, who Actor) error {
	if len(rules) == 0 {
		return nil
	}
	rows := make([]store.Rule, len(rules))
	for i, r := range rules {
		row, err := toStore(r)
		if err != nil {
			return err
		}
		rows[i] = row
	}
	if err := tx.CreateRules(rows); err != nil {
		return err
	}
	revs := make([]store.RuleRevision, len(rules))
	for i, r := range rules {
		row := rows[i]
		r.ID, r.Version, r.CreatedAt, r.UpdatedAt = row.ID, row.Version, row.CreatedAt, row.UpdatedAt
		tx.saved(r)
		rev, err := revision(r, store.ActionCreate, who)
		if err != nil {
			return err
		}
		revs[i] = rev
	}
	return tx.AddRevisions(revs)
}

// currentRule reads rule id for a write based on the versions match
// allows.
func currentRule(tx *Tx, id int64, match IfMatch) (Rule, error) {
	row, err := tx.GetRule(id)
	if err != nil {
		return Rule{}, ruleMissing(id, err)
	}
	if match != nil && !match(row.Version) {
		return Rule{}, fmt.Errorf("rule %d is at version %d, not the one If-Match names: %w", id, row.Version, ErrStale)
	}
	return fromStore(row)
}

// updateRule writes r, read at r.Version, as the next version.
func updateRule(tx *Tx, r *Rule, action string, who Actor) error {
	row, err := toStore(r)
	if err != nil {
		return err
	}
	if err := tx.UpdateRule(&row); err != nil {
		return nameTaken(r.Name, err)
	}
	r.Version, r.UpdatedAt = row.Version, row.UpdatedAt
	tx.saved(r)
	return revise(tx, r, action, who)
}

// deleteRule removes r and records its last content as a delete revision.
func deleteRule(tx *Tx, r *Rule, who Actor) error {
	if err := tx.DeleteRule(r.ID, r.Version); err != nil {
		return err
	}
	tx.deleted(r.ID)
	r.Version++
	return revise(tx, r, store.ActionDelete, who)
}

// InvalidRule is the ValidationError of a rule whose fields errs names.
func InvalidRule(errs []engine.FieldError) error {
	return invalid("the rule is not valid; see details", errs...)
}

// ruleMissing words a store.ErrNotFound for rule id.
func ruleMissing(id int64, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no rule has id %d: %w", id, err)
	}
	return err
}

// nameTaken words a store.ErrConflict for a rule name.
func nameTaken(name string, err error) error {
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("a rule named %q exists already: %w", name, err)
	}
	return err
}
