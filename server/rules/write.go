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

// Actor is who writes, and why; both are kept in the rule's history.
type Actor struct {
	// Name is the user or token that writes.
	Name string
	// Reason is why, as the writer gave it; may be empty.
	Reason string
	// Apps is the writer's per-app scope (docs/api.md, "Per-app scopes"): when
	// not empty, the writer may write only the rules whose app it lists,
	// and an apply plans and prunes only among them.
	Apps []string
}

// mayWrite reports whether the actor's scope holds the rules of app. A
// rule without app reaches every engine, so it is outside every scope.
func (who Actor) mayWrite(app string) bool {
	return len(who.Apps) == 0 || slices.Contains(who.Apps, app)
}

// refuse is the ForbiddenError of a write of a rule of app, at field, by
// who, or nil if who's scope holds it; what names the rule as outOfScope's
// does.
func (who Actor) refuse(field, what, app string) error {
	if who.mayWrite(app) {
		return nil
	}
	return forbidden(who.outOfScope(field, what, app))
}

// forbidden is the ForbiddenError of fields, or nil if there are none.
func forbidden(fields ...engine.FieldError) error {
	if len(fields) == 0 {
		return nil
	}
	return &ForbiddenError{Message: fields[0].Message + "; nothing was written", Fields: fields}
}

// outOfScope is the ForbiddenError of a write of a rule of app, at field,
// by who; what names the rule ("rule 7", "rule \"orders-qps\"").
func (who Actor) outOfScope(field, what, app string) engine.FieldError {
	msg := fmt.Sprintf("%s is of app %q, which is not one of yours (%s)", what, app, strings.Join(who.Apps, ", "))
	if app == "" {
		msg = fmt.Sprintf("%s names no app, and your writes are held to your apps (%s)", what, strings.Join(who.Apps, ", "))
	}
	return engine.FieldError{Field: field, Message: msg}
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
	if err := who.refuse("app", "the rule", r.App); err != nil {
		return Rule{}, err
	}
	err := s.write(ctx, false, func(tx *Tx) error {
		content, err := tx.saveRule(&r, store.ActionCreate, who)
		if err != nil {
			return err
		}
		tx.from(r.Name, requestPath{})
		return tx.announce(EventRuleCreated, &r, content, who)
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
		if err := who.refuse("app", fmt.Sprintf("rule %d", id), current.App); err != nil {
			return err
		}
		if r, err = edit(current); err != nil {
			return err
		}
		if err := who.refuse("app", "the rule as written", r.App); err != nil {
			return err
		}
		if same, err := sameContent(&current, &r); err != nil || same {
			r = current
			return err
		}
		tx.from(r.Name, requestPath{})
		content, err := tx.saveRule(&r, store.ActionUpdate, who)
		if err != nil {
			return err
		}
		return tx.announce(EventRuleUpdated, &r, content, who)
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
		if err := who.refuse("app", fmt.Sprintf("rule %d", id), r.App); err != nil {
			return err
		}
		content, err := tx.saveRule(&r, store.ActionDelete, who)
		if err != nil {
			return err
		}
		return tx.announce(EventRuleDeleted, &r, content, who)
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
		row, err := rev.Row()
		if err != nil {
			return nil, 0, err
		}
		r, err := fromStore(row)
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
		if err := who.refuse("app", fmt.Sprintf("rule %d", id), current.App); err != nil {
			return err
		}
		rev, err := tx.GetRevision(id, to)
		if err != nil {
			return fmt.Errorf("rule %d has no version %d: %w", id, to, err)
		}
		row, err := rev.Row()
		if err != nil {
			return err
		}
		old, err := fromStore(row)
		if err != nil {
			return err
		}
		if err := who.refuse("app", fmt.Sprintf("version %d of rule %d", to, id), old.App); err != nil {
			return err
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
		content, err := tx.saveRule(&r, store.ActionRollback, who)
		if err != nil {
			return err
		}
		return tx.announce(EventRuleRolledBack, &r, content, who)
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
			if _, err := tx.saveRule(&want[i], store.ActionCreate, who); err != nil {
				return err
			}
			created++
		}
		return nil
	})
	return created, err
}

// saveRule writes r by action (store.ActionCreate, …) as one store write of
// its row and the revision that records it, a create naming r first if it
// has none, and returns r's content as its event shows it.
func (tx *Tx) saveRule(r *Rule, action string, who Actor) (Content, error) {
	st, err := r.Stored()
	if err != nil {
		return Content{}, err
	}
	if action == store.ActionCreate && r.Name == "" {
		name, err := uniqueName(r.Kind, st.Subject, func(name string) (bool, error) {
			_, err := tx.RuleByName(name)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return Content{}, err
		}
		r.Name = name
	}
	row, content := formsOf(r, st)
	w := store.RuleWrite{Rule: row, Action: action, Actor: who.Name, Reason: who.Reason}
	err = tx.WriteRule(&w)
	if errors.Is(err, store.ErrConflict) {
		err = fmt.Errorf("a rule named %q exists already: %w", r.Name, err)
	}
	if err != nil {
		return Content{}, err
	}
	r.ID, r.Version, r.CreatedAt, r.UpdatedAt = w.Rule.ID, w.Rule.Version, w.Rule.CreatedAt, w.Rule.UpdatedAt
	var written *Rule // nil: deleted
	if action != store.ActionDelete {
		written = new(*r)
	}
	tx.changed[r.ID] = written
	return content, nil
}

// createRules creates named rules, as saveRule does each, in batches: an
// apply of 100,000 rules is two hundred statements, not two hundred
// thousand.
func createRules(tx *Tx, rules []*Rule, who Actor) error {
	if len(rules) == 0 {
		return nil
	}
	ws := make([]store.RuleWrite, len(rules))
	for i, r := range rules {
		row, err := toStore(r)
		if err != nil {
			return err
		}
		ws[i] = store.RuleWrite{Rule: row, Action: store.ActionCreate, Actor: who.Name, Reason: who.Reason}
	}
	if err := tx.CreateRules(ws); err != nil {
		return err
	}
	for i, r := range rules {
		row := ws[i].Rule
		r.ID, r.Version, r.CreatedAt, r.UpdatedAt = row.ID, row.Version, row.CreatedAt, row.UpdatedAt
		tx.saved(r)
	}
	return nil
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

// Tx is a rule write in progress: the store transaction, the rules as
// of the last commit, and what the write changes.
type Tx struct {
	*store.Tx
	stored      map[int64]Rule
	storedNames map[string]int64
	changed     map[int64]*Rule // nil: deleted
	// written names where the request has each rule it writes, by name,
	// so that the engine's verdict on the whole set names the request's
	// fields.
	written map[string]requestPath
}

// requestPath is where a request has a rule: its fields' prefix
// ("rules[3].") and, in a request of many rules, the rule's name for
// messages.
type requestPath struct {
	prefix, label string
}

// from records that the request has rule name at path.
func (tx *Tx) from(name string, path requestPath) { tx.written[name] = path }

// named returns the rule called name as of the last commit.
func (tx *Tx) named(name string) (Rule, bool) {
	id, ok := tx.storedNames[name]
	return tx.stored[id], ok
}

// saved records that r was written as it is now.
func (tx *Tx) saved(r *Rule) { tx.changed[r.ID] = new(*r) }

// errDryRun rolls back a write that was only rehearsed.
var errDryRun = errors.New("dry run")

// write runs fn in a transaction. If fn fails, or the rules it leaves are
// not rules the engine accepts, nothing is written. With dryRun the
// transaction is always rolled back and the engine left alone; if fn
// changes no rule, the rules' revision stays as it is. Its errors are the
// domain's (domainError).
func (s *Service) write(ctx context.Context, dryRun bool, fn func(tx *Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tx *Tx
	var touched engine.ResourceRules
	err := s.store.InTx(ctx, func(stx *store.Tx) error {
		if err := s.catchUp(stx); err != nil {
			return err
		}
		tx = &Tx{Tx: stx, stored: s.rules, storedNames: s.named, changed: map[int64]*Rule{}, written: map[string]requestPath{}}
		if err := fn(tx); err != nil {
			return err
		}
		var err error
		if touched, err = s.check(tx); err != nil {
			return err
		}
		if dryRun {
			return errDryRun
		}
		if len(tx.changed) == 0 {
			return nil // nothing written: the revision stays
		}
		return stx.Changed(store.ChangedRules)
	})
	if dryRun && errors.Is(err, errDryRun) {
		return nil
	}
	if err != nil {
		return domainError(err)
	}
	if len(tx.changed) == 0 {
		return nil
	}
	if s.store.Replicated() {
		// Another replica may write as soon as the commit ends this
		// one's turn: what is held, and its revision, must come from one
		// read.
		return s.resyncLocked(ctx)
	}
	s.record(tx.changed)
	s.changed(ctx)
	// Validated in the transaction against the rules the engine holds, which
	// only s loads, under mu: loading them cannot fail.
	return s.engine.LoadResourceRules(touched)
}
