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

// check checks, with the engine's own validation, the rules the write in
// tx leaves on the resources it touches: those the server's own engine
// runs, against the rules it holds for every other resource, and those
// the engines of every app with rules of its own there run. It returns the
// server's own set, which its engine loads once the write commits, or a
// ValidationError naming the bad fields as the request does. The sets are
// worked out from the rules held first, and each is then handed to the
// engine whole.
func (s *Service) check(tx *Tx) (engine.ResourceRules, error) {
	resources, onResource := s.touched(tx.changed)
	rule := s.ruleOf(tx.changed)
	system, replaceSystem := s.systemRules(tx.changed)
	sets := append([]appSet{{resources: resources, rules: ruleSet(resources, onResource, rule, "")}},
		appSets(resources, onResource, rule)...)
	var own engine.ResourceRules
	for i, set := range sets {
		rules := engine.ResourceRules{Resources: set.resources}
		for _, r := range set.rules {
			r.Enforce(&rules)
		}
		failed := fmt.Sprintf("the rules the write leaves for the instances of app %q are not valid", set.app)
		if i == 0 {
			for _, r := range system {
				r.Enforce(&rules)
			}
			rules.ReplaceSystem = replaceSystem
			own, failed = rules, "the rules the write leaves are not valid"
		}
		if bad := s.engine.CheckResourceRules(rules); bad != nil {
			return engine.ResourceRules{}, requestFields(bad, failed, tx.written)
		}
	}
	return own, nil
}

// touched returns every resource that a changed rule is on or was on, in
// the order of the lowest changed rule ID on each, and each one's rule IDs
// once changed is written, ascending.
func (s *Service) touched(changed map[int64]*Rule) ([]string, map[string][]int64) {
	var resources []string
	ids := map[string][]int64{}
	touch := func(resource string) {
		if _, seen := ids[resource]; !seen {
			resources = append(resources, resource)
			ids[resource] = slices.DeleteFunc(slices.Clone(s.onResource[resource]), func(id int64) bool {
				_, ok := changed[id]
				return ok
			})
		}
	}
	// System rules are on no resource: systemSet has them.
	changedIDs := slices.Sorted(maps.Keys(changed))
	for _, id := range changedIDs {
		if old, ok := s.rules[id]; ok && old.Kind != engine.KindSystem {
			touch(old.Resource)
		}
		if r := changed[id]; r != nil && r.Kind != engine.KindSystem {
			touch(r.Resource)
		}
	}
	for _, id := range changedIDs {
		if r := changed[id]; r != nil && r.Kind != engine.KindSystem {
			ids[r.Resource] = append(ids[r.Resource], id)
		}
	}
	for _, resource := range resources {
		slices.Sort(ids[resource])
	}
	return resources, ids
}

// ruleOf returns a lookup of the rules by ID as they are once changed is
// written.
func (s *Service) ruleOf(changed map[int64]*Rule) func(id int64) *Rule {
	return func(id int64) *Rule {
		if r, ok := changed[id]; ok {
			return r
		}
		stored := s.rules[id]
		return &stored
	}
}

// ruleSet returns the rules of resources, given their rule IDs, that the
// engine of app runs ("" the server's own engine), each resource's by ID.
func ruleSet(resources []string, ids map[string][]int64, rule func(int64) *Rule, app string) []*Rule {
	var rules []*Rule
	for _, resource := range resources {
		for _, id := range ids[resource] {
			if r := rule(id); r.RunsIn(app) {
				rules = append(rules, r)
			}
		}
	}
	return rules
}

// appSet is the rules the instances of app run on some resources.
type appSet struct {
	app       string
	resources []string
	rules     []*Rule
}

// appSets returns, for every app that has a rule of its own on one of
// resources, the rules its instances run on those of resources where it
// has one, by app: on the others they run the server's own set, which is
// checked already.
func appSets(resources []string, ids map[string][]int64, rule func(int64) *Rule) []appSet {
	byApp := map[string][]string{}
	for _, resource := range resources {
		seen := map[string]bool{}
		for _, id := range ids[resource] {
			if app := rule(id).App; app != "" && !seen[app] {
				seen[app] = true
				byApp[app] = append(byApp[app], resource)
			}
		}
	}
	sets := make([]appSet, 0, len(byApp))
	for _, app := range slices.Sorted(maps.Keys(byApp)) {
		sets = append(sets, appSet{app: app, resources: byApp[app], rules: ruleSet(byApp[app], ids, rule, app)})
	}
	return sets
}

// systemRules returns the system rules that the server's own engine runs,
// the write's changes applied, by ID, and true, when the write changed a
// system rule; they are all loaded together, as a process's. Otherwise nil
// and false: the engine keeps its own.
func (s *Service) systemRules(changed map[int64]*Rule) ([]*Rule, bool) {
	touched := false
	for id, r := range changed {
		old, stored := s.rules[id]
		touched = touched || (r != nil && r.Kind == engine.KindSystem) || (stored && old.Kind == engine.KindSystem)
	}
	if !touched {
		return nil, false
	}
	var rules []*Rule
	for _, id := range slices.Sorted(maps.Keys(s.rules)) {
		if _, ok := changed[id]; !ok {
			if r := s.rules[id]; r.Kind == engine.KindSystem && r.RunsIn("") {
				rules = append(rules, &r)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(changed)) {
		if r := changed[id]; r != nil && r.Kind == engine.KindSystem && r.RunsIn("") {
			rules = append(rules, r)
		}
	}
	return rules, true
}

// requestFields words the engine's verdict on a rule set, each bad field
// named by its rule, as a ValidationError that names the fields as the
// request does ("resource", "rules[3].resource"); a rule the request does
// not have is named in the message. failed says which engine's set is not
// valid.
func requestFields(bad []engine.RuleFieldError, failed string, written map[string]requestPath) error {
	fields := make([]engine.FieldError, 0, len(bad))
	for _, fe := range bad {
		if fe.Rule == "" {
			fields = append(fields, fe.FieldError)
			continue
		}
		path, inRequest := written[fe.Rule]
		switch {
		case !inRequest:
			fields = append(fields, engine.FieldError{Field: fe.Field, Message: fmt.Sprintf("rule %q: %s", fe.Rule, fe.Message)})
		case path.label != "":
			fields = append(fields, engine.FieldError{Field: path.prefix + fe.Field, Message: fmt.Sprintf("rule %q: %s", path.label, fe.Message)})
		default:
			fields = append(fields, engine.FieldError{Field: path.prefix + fe.Field, Message: fe.Message})
		}
	}
	return invalid(failed+"; see details", fields...)
}
