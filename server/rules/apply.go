package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/impact"
	"github.com/sluicehq/sluice/store"
)

// MaxApplyRules bounds the rules of one apply or import.
const MaxApplyRules = 100_000

// PlanItem names a rule a plan touches.
type PlanItem struct {
	Name     string `json:"name" example:"orders-qps"`
	Kind     string `json:"kind" example:"flow"`
	Resource string `json:"resource" example:"GET:/api/orders"`
	// Impact is what a created or changed flow or hotspot rule would
	// have blocked over the last day and week, in a dry run's plan only
	// (docs/impact.md).
	Impact *impact.Estimate `json:"impact,omitempty"`
} //@name server.PlanItem

// FieldChange is one field an update changes, with its JSON values before
// and after (null when the field is absent on that side).
type FieldChange struct {
	Field string `json:"field" example:"threshold"`
	// From is the field's value before the update: any JSON value, null
	// when the rule did not have the field.
	From json.RawMessage `json:"from" extensions:"x-nullable"`
	// To is the field's value after the update: any JSON value, null when
	// the update removes the field.
	To json.RawMessage `json:"to" extensions:"x-nullable"`
} //@name server.FieldChange

// PlanUpdate is a rule an apply changes, field by field.
type PlanUpdate struct {
	PlanItem
	Changes []FieldChange `json:"changes"`
} //@name server.PlanUpdate

// ApplyPlan is what an apply does (dryRun false) or would do (dryRun true).
type ApplyPlan struct {
	DryRun  bool         `json:"dryRun"`
	Created []PlanItem   `json:"created"`
	Updated []PlanUpdate `json:"updated"`
	Deleted []PlanItem   `json:"deleted"`
	// Unchanged lists the rules of the body that are already as asked.
	Unchanged []PlanItem `json:"unchanged"`
	// Notes name what an import left out of the file and why (a field
	// the source limiter ignores too); absent when nothing was.
	Notes []PlanNote `json:"notes,omitempty"`
} //@name server.ApplyPlan

// PlanNote is a field of an imported file that the import left out, and
// why.
type PlanNote struct {
	Field   string `json:"field" example:"rules[0].maxQueueingTimeMs"`
	Message string `json:"message" example:"dropped: 1000 is not read with controlBehavior 0 (Reject), by sentinel-golang either"`
} //@name server.PlanNote

// DecodeFile decodes and validates the rules of a rule file (apply's body);
// every bad field is named rules[i].field, and its message names the rule.
func DecodeFile(items []json.RawMessage) ([]Rule, error) {
	named := map[string]int{}
	return decodeRuleList(items, "the rule file is not valid; nothing was applied; see details",
		func(i int, o *wire.Object, errs *[]engine.FieldError) (Rule, bool) {
			// Peeked, not read: wire.DecodeRule reads the name, and reports it
			// once if it is bad.
			if o.Label = o.PeekStr("name"); o.Label == "" {
				o.Label = fmt.Sprintf("#%d", i)
			}
			r := wire.DecodeRule(o, Rule{}, wire.ForApply)
			if first, dup := named[r.Name]; dup && r.Name != "" {
				*errs = append(*errs, engine.FieldError{Field: o.Path + "name", Message: fmt.Sprintf("rule %q: the name is used by rules[%d] too", r.Name, first)})
			}
			named[r.Name] = i
			return r, true
		})
}

// decodeRuleList decodes the rule objects of an apply or import body with
// decode, which reads one object (its o.Label names the rule in messages),
// and validates each: every bad field is named rules[i].field. decode
// answers false for an object it refused whole, with one message, which is
// then not validated field by field. failed is the message when any is
// bad.
func decodeRuleList(items []json.RawMessage, failed string, decode func(i int, o *wire.Object, errs *[]engine.FieldError) (Rule, bool)) ([]Rule, error) {
	if len(items) > MaxApplyRules {
		msg := fmt.Sprintf("holds %d rules, more than the %d one request takes", len(items), MaxApplyRules)
		return nil, invalid("too many rules: "+msg, engine.FieldError{Field: "rules", Message: msg})
	}
	var errs []engine.FieldError
	rules := make([]Rule, 0, len(items))
	for i, item := range items {
		o, err := wire.Parse(item, fmt.Sprintf("rules[%d].", i), &errs)
		if err != nil {
			errs = append(errs, engine.FieldError{Field: fmt.Sprintf("rules[%d]", i), Message: "must be a rule object"})
			continue
		}
		r, whole := decode(i, o, &errs)
		if !whole {
			continue // refused whole, with one message
		}
		wire.ValidateRule(&r, o.Path, o.Label, &errs)
		rules = append(rules, r)
	}
	if len(errs) > 0 {
		return nil, invalid(failed, errs...)
	}
	return rules, nil
}

// ApplyOptions says how Apply syncs.
type ApplyOptions struct {
	// DryRun writes nothing: the plan says what would be done.
	DryRun bool
	// Prune deletes the stored rules the file does not name.
	Prune bool
	// AllowEmpty lets a prune delete every rule of an app, or of the
	// server (app ""), that has some: without it, such a prune (a file
	// with an empty or mistaken list, most often) is refused.
	AllowEmpty bool
}

// Apply syncs the stored rules to want, decoded by DecodeFile or
// ImportSentinel, in one transaction: it creates the new, updates the
// changed, and with opts.Prune deletes the stored rules want does not name.
// With opts.DryRun nothing is written. A scoped who (Actor.Apps) may name
// only rules of its apps (else a ForbiddenError), and prune deletes only
// those. It returns the plan, done or to do.
func (s *Service) Apply(ctx context.Context, want []Rule, opts ApplyOptions, who Actor) (ApplyPlan, error) {
	dryRun, prune := opts.DryRun, opts.Prune
	plan := ApplyPlan{DryRun: dryRun, Created: []PlanItem{}, Updated: []PlanUpdate{}, Deleted: []PlanItem{}, Unchanged: []PlanItem{}}
	err := s.write(ctx, dryRun, func(tx *Tx) error {
		if err := forbidden(outOfScope(tx, want, who)...); err != nil {
			return err
		}
		var creates []*Rule
		for i := range want {
			r := &want[i]
			tx.from(r.Name, requestPath{prefix: fmt.Sprintf("rules[%d].", i), label: r.Name})
			item := PlanItem{Name: r.Name, Kind: r.Kind, Resource: r.Resource}
			old, exists := tx.named(r.Name)
			if !exists {
				creates = append(creates, r)
				plan.Created = append(plan.Created, item)
				continue
			}
			if old.Kind != r.Kind {
				msg := fmt.Sprintf("rule %q is of kind %s; a rule's kind cannot change (delete it, or use another name)", r.Name, old.Kind)
				return invalid(msg, engine.FieldError{Field: fmt.Sprintf("rules[%d].kind", i), Message: msg})
			}
			changes, err := contentChanges(ContentOf(&old), ContentOf(r))
			if err != nil {
				return err
			}
			if len(changes) == 0 {
				plan.Unchanged = append(plan.Unchanged, item)
				continue
			}
			r.ID, r.Version, r.CreatedAt = old.ID, old.Version, old.CreatedAt
			if _, err := tx.saveRule(r, store.ActionUpdate, who); err != nil {
				return err
			}
			plan.Updated = append(plan.Updated, PlanUpdate{PlanItem: item, Changes: changes})
		}
		if err := createRules(tx, creates, who); err != nil {
			return err
		}
		if !prune {
			return tx.announceApply(plan, want, nil, who)
		}
		wanted := make(map[string]bool, len(want))
		for _, r := range want {
			wanted[r.Name] = true
		}
		var unwanted []Rule
		for _, r := range tx.stored {
			if !wanted[r.Name] && who.mayWrite(r.App) {
				unwanted = append(unwanted, r)
			}
		}
		slices.SortFunc(unwanted, func(a, b Rule) int { return strings.Compare(a.Name, b.Name) })
		if !opts.AllowEmpty {
			if err := emptied(tx.stored, want, unwanted); err != nil {
				return err
			}
		}
		for _, old := range unwanted {
			if _, err := tx.saveRule(&old, store.ActionDelete, who); err != nil {
				return err
			}
			plan.Deleted = append(plan.Deleted, PlanItem{Name: old.Name, Kind: old.Kind, Resource: old.Resource})
		}
		return tx.announceApply(plan, want, unwanted, who)
	})
	return plan, err
}

// emptied refuses a prune of unwanted, among stored, that leaves an app
// (or the server, app "") with rules before and none after want applies.
func emptied(stored map[int64]Rule, want, unwanted []Rule) error {
	gone, after := map[string]int{}, map[string]int{}
	named := map[string]bool{}
	for _, r := range unwanted {
		gone[r.App]++
		named[r.Name] = true
	}
	for _, r := range want {
		after[r.App]++
		named[r.Name] = true
	}
	for _, r := range stored {
		if !named[r.Name] {
			after[r.App]++ // a rule the caller may not prune stays
		}
	}
	for _, app := range slices.Sorted(maps.Keys(gone)) {
		if after[app] > 0 {
			continue
		}
		whose := "the server's rules (app \"\")"
		if app != "" {
			whose = fmt.Sprintf("app %q", app)
		}
		msg := fmt.Sprintf("would delete every rule of %s (%d); apply with allowEmpty=true (sluice rules apply --allow-empty) to empty it", whose, gone[app])
		return invalid("the prune "+msg, engine.FieldError{Field: "prune", Message: msg})
	}
	return nil
}

// outOfScope names the rules of want that who may not write: those whose
// app is outside its scope, and those whose name a stored rule of such an
// app has (writing it would take that rule over).
func outOfScope(tx *Tx, want []Rule, who Actor) []engine.FieldError {
	var fields []engine.FieldError
	for i, r := range want {
		field := fmt.Sprintf("rules[%d].app", i)
		what := fmt.Sprintf("rule %q", r.Name)
		if !who.mayWrite(r.App) {
			fields = append(fields, who.outOfScope(field, what, r.App))
		} else if old, exists := tx.named(r.Name); exists && !who.mayWrite(old.App) {
			fields = append(fields, who.outOfScope(field, "the stored "+what, old.App))
		}
	}
	return fields
}

// contentChanges lists the fields in which two rules differ, by field
// name, the name itself aside (rules are matched by it).
func contentChanges(from, to Content) ([]FieldChange, error) {
	fromJSON, err := json.Marshal(from)
	if err != nil {
		return nil, err
	}
	toJSON, err := json.Marshal(to)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(fromJSON, toJSON) {
		return nil, nil
	}
	var fromFields, toFields map[string]json.RawMessage
	if err := errors.Join(json.Unmarshal(fromJSON, &fromFields), json.Unmarshal(toJSON, &toFields)); err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(fromFields))
	for name := range toFields {
		if _, ok := fromFields[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var changes []FieldChange
	for _, name := range names {
		a, b := fromFields[name], toFields[name]
		if name == "name" || bytes.Equal(a, b) {
			continue
		}
		changes = append(changes, FieldChange{Field: name, From: orNull(a), To: orNull(b)})
	}
	return changes, nil
}

func orNull(v json.RawMessage) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	return v
}

// RuleFile is what export writes: every rule, in the shape apply takes.
type RuleFile struct {
	Rules []Content `json:"rules"`
} //@name server.RuleFile

// MaxPlanEstimates bounds the rules a dry run's plan estimates the impact
// of: each reads a week of its resource's minutes.
const MaxPlanEstimates = 50

// Estimate sets the impact of the plan's created and changed flow and
// hotspot rules (want holds them; an update that changes only the
// description has none), the first MaxPlanEstimates of them, and says in a
// note if there were more.
func (p *ApplyPlan) Estimate(ctx context.Context, e *impact.Estimator, want []Rule) error {
	byName := make(map[string]*Rule, len(want))
	for i := range want {
		byName[want[i].Name] = &want[i]
	}
	var items []*PlanItem
	var rs []*wire.Rule
	add := func(item *PlanItem) {
		if r := byName[item.Name]; r != nil && impact.Estimable(r) {
			items, rs = append(items, item), append(rs, r)
		}
	}
	for i := range p.Created {
		add(&p.Created[i])
	}
	for i := range p.Updated {
		if slices.ContainsFunc(p.Updated[i].Changes, func(c FieldChange) bool { return c.Field != "description" }) {
			add(&p.Updated[i].PlanItem)
		}
	}
	if len(rs) > MaxPlanEstimates {
		p.Notes = append(p.Notes, PlanNote{Field: "impact", Message: fmt.Sprintf(
			"estimated for the first %d of the %d created or changed flow and hotspot rules", MaxPlanEstimates, len(rs))})
		items, rs = items[:MaxPlanEstimates], rs[:MaxPlanEstimates]
	}
	if len(rs) == 0 {
		return nil
	}
	ests, err := e.EstimateEach(ctx, rs)
	if err != nil {
		return err
	}
	for i := range ests {
		items[i].Impact = &ests[i]
	}
	return nil
}
