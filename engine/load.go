package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LoadFlowRules replaces every flow rule with rules, as Sentinel's LoadRules
// does. The set is validated first (a *ValidationError names every bad field
// as "rules[i].field"; nothing changes then). Each resource then switches to
// its new rules atomically: a call sees the old rules or the new ones, never a
// mix. Statistics are kept, and so is the state (throttling queue, warm-up
// tokens, own window) of every rule that is loaded again unchanged. It costs
// what every flow rule costs; LoadResourceRules replaces the rules of a few
// resources for what theirs cost.
func (e *Engine) LoadFlowRules(rules []FlowRule) error {
	loaded, err := validateFlowSet("rules", rules, e.cluster != nil)
	if err != nil {
		return err
	}
	c := newRuleChange(len(loaded))
	for _, rule := range loaded {
		rc := c.of(rule.Resource)
		rc.flow = append(rc.flow, rule)
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.commitEvery(c, flowKind)
	return nil
}

// commitEvery commits c as the replacement of every rule of kind: each
// resource that c names or that holds rules of kind gets the rules of kind
// c gives it, none if it gives none. The caller holds loadMu.
func (e *Engine) commitEvery(c *ruleChange, kind ruleKind) {
	for _, name := range c.order {
		c.resources[name].replaced[kind] = true
	}
	for r, entry := range e.book.entries {
		if entry.rules.has(kind) {
			c.of(r.name).replaced[kind] = true
		}
	}
	e.commit(c)
}

// has reports whether s has rules of kind.
func (s *ruleSet) has(kind ruleKind) bool {
	switch kind {
	case flowKind:
		return len(s.flow) > 0
	case breakerKind:
		return len(s.breakers) > 0
	case hotspotKind:
		return len(s.hotspot()) > 0
	case authorityKind:
		return len(s.authority()) > 0
	default:
		return s.adaptive() != nil
	}
}

// ResourceRules is every rule of some resources, for LoadResourceRules.
type ResourceRules struct {
	// Resources names the resources whose rules are replaced; one with no
	// rule below is left with none.
	Resources []string
	// Flow and CircuitBreakers are the new rules of those resources, each
	// resource's in the order they apply. Every rule's resource must be
	// one of Resources.
	Flow            []FlowRule
	CircuitBreakers []CircuitBreakerRule
	Hotspot         []HotspotRule
	Authority       []AuthorityRule
	// AdaptiveConcurrency holds at most one rule per resource.
	AdaptiveConcurrency []AdaptiveConcurrencyRule
	// System, when ReplaceSystem is set, replaces every system rule of
	// the engine (none left if it is empty): they have no resource.
	// DecodeRules sets ReplaceSystem, as its set holds every rule;
	// otherwise the system rules stay as they are.
	System        []SystemRule
	ReplaceSystem bool
}

// LoadResourceRules replaces the rules of every kind of the
// resources that rules names, and of no other, as sentinel-golang's
// LoadRulesOfResource does for one resource and one kind. It costs what
// those resources' rules cost, however many rules the engine holds.
//
// The rules are validated as a whole and with the rules that stay: names
// are unique per kind across the engine. A *ValidationError names every bad
// field as "resources[i]", "flow[i].field", "circuitBreakers[i].field",
// "hotspot[i].field", "authority[i].field", "adaptiveConcurrency[i].field"
// or "system[i].field";
// nothing changes then.
//
// Each resource whose rules change (its own, or the associated rules of
// other resources that measure it) switches to them with one atomic store
// of both kinds together: a call sees every rule the load gives its
// resource or none of them. The resources switch one after another, all
// before LoadResourceRules returns; the system rules, with ReplaceSystem,
// switch last, with one store of their own. Statistics are kept, and so is
// the state of every rule loaded again unchanged.
func (e *Engine) LoadResourceRules(rules ResourceRules) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	c, err := e.resourceChange(rules)
	if err != nil {
		return err
	}
	e.commit(c)
	if rules.ReplaceSystem {
		e.commitSystem(c.system)
	}
	return nil
}

// ValidateResourceRules checks rules as LoadResourceRules would now,
// against the rules loaded, without loading them: nil, or a
// *ValidationError naming every bad field.
func (e *Engine) ValidateResourceRules(rules ResourceRules) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	_, err := e.resourceChange(rules)
	return err
}

// RuleFieldError is one invalid field of a rule set, named by the rule it
// is of, so that a caller can name it as its own input does.
type RuleFieldError struct {
	// Rule is the name of the rule the field is of, and Field the rule's
	// own field ("threshold"); for a field of no rule ("resources[0]",
	// "system") Rule is "" and Field is as ValidationError names it.
	Rule string
	FieldError
}

// CheckResourceRules checks rules as ValidateResourceRules does and names
// each bad field by its rule (RuleAt): nil when the rules are valid. The
// validation and the naming of its fields stay together, as only the
// validation knows how it names them.
func (e *Engine) CheckResourceRules(rules ResourceRules) []RuleFieldError {
	invalid, ok := errors.AsType[*ValidationError](e.ValidateResourceRules(rules))
	if !ok {
		return nil
	}
	fields := make([]RuleFieldError, len(invalid.Fields))
	for i, fe := range invalid.Fields {
		fields[i].FieldError = fe
		if name, ruleField, ofRule := rules.RuleAt(fe.Field); ofRule {
			fields[i].Rule, fields[i].Field = name, ruleField
		}
	}
	return fields
}

// resourceChange validates rules and returns them as a change, the system
// rules with their defaults in its system. The caller holds loadMu.
func (e *Engine) resourceChange(rules ResourceRules) (*ruleChange, error) {
	var errs fieldErrors
	c := newRuleChange(len(rules.Resources))
	for i, name := range rules.Resources {
		errs.check(fmt.Sprintf("resources[%d]", i), validateResourceName(name))
		for kind := range kinds {
			c.of(name).replaced[kind] = true
		}
	}
	stages := validateKinds(&rules, c, &e.book, e.cluster != nil, &errs)
	if len(errs) > 0 {
		return nil, &ValidationError{Fields: errs}
	}
	for _, stage := range stages {
		stage(c)
	}
	return c, nil
}

// ClusterStatus reports what the engine's cluster rules decide on; Enabled
// is false without Options.Cluster.
func (e *Engine) ClusterStatus() ClusterStatus {
	if e.cluster == nil {
		return ClusterStatus{}
	}
	return e.cluster.status()
}

// FlowRules returns the loaded flow rules, defaults filled in, grouped by
// resource: the resources in the order they got their first rule, each
// one's rules in the order they apply.
func (e *Engine) FlowRules() []FlowRule {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	var rules []FlowRule
	for _, set := range e.book.inOrder(maps.Keys(e.book.entries)) {
		for _, c := range set.flow {
			rules = append(rules, c.rule())
		}
	}
	return rules
}

// ValidateFlowRules checks rules as LoadFlowRules would on an engine with
// a cluster count (Options.Cluster), without loading them: nil, or a
// *ValidationError naming every bad field as "rules[i].field".
func ValidateFlowRules(rules []FlowRule) error {
	_, err := validateFlowSet("rules", rules, true)
	return err
}

// validateFlowSet validates flow rules as a set, fields named
// "prefix[i].field", and returns them with their defaults.
func validateFlowSet(prefix string, rules []FlowRule, clustered bool) ([]FlowRule, error) {
	return validateSet(FlowKind, prefix, rules, flowSetCheck(prefix, clustered))
}

// flowSetCheck is the check of a set of flow rules: an Entry holds the
// calls in flight of one origin of one concurrency rule with a limitApp
// per resource at most, and cluster rules need an engine with a cluster
// count (clustered).
func flowSetCheck(prefix string, clustered bool) func(i int, rule FlowRule, errs *fieldErrors) {
	held := map[string]int{}
	return func(i int, rule FlowRule, errs *fieldErrors) {
		if rule.Scope == ScopeCluster && !clustered {
			errs.add(fmt.Sprintf("%s[%d].scope", prefix, i), "cluster needs a count shared by every engine, which this engine has not (sluice --redis)")
		}
		if rule.Metric != MetricConcurrency || rule.LimitApp == LimitAppDefault {
			return
		}
		if held[rule.Resource]++; held[rule.Resource] == 2 {
			errs.add(fmt.Sprintf("%s[%d].limitApp", prefix, i), "another concurrency rule of the resource has a limitApp: at most one may")
		}
	}
}

// merge adds the fields of err, a *ValidationError or nil.
func (e *fieldErrors) merge(err error) {
	var invalid *ValidationError
	if errors.As(err, &invalid) {
		*e = append(*e, invalid.Fields...)
	}
}

// ValidateResourceName says why name is not a valid resource name (1 to
// MaxResourceNameLen characters of UTF-8, no control characters), or
// returns "" when it is.
func ValidateResourceName(name string) string {
	if len(name) > 0 && len(name) <= MaxResourceNameLen && plainASCII(name) {
		return ""
	}
	return validateResourceName(name)
}

// plainASCII reports whether s is printable ASCII only, the common case
// the full check need not look at rune by rune.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// validateResourceName returns why name is not a valid resource name, or "".
func validateResourceName(name string) string {
	switch {
	case name == "":
		return "is required"
	case !utf8.ValidString(name):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(name) > MaxResourceNameLen:
		return fmt.Sprintf("must be at most %d characters", MaxResourceNameLen)
	case strings.IndexFunc(name, func(c rune) bool { return unicode.Is(unicode.Cc, c) }) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// loadOrder is the kinds in the order a load of many kinds checks them:
// those on a resource as Kinds has them, then those on none.
var loadOrder = func() []*Kind {
	order := slices.Clone(Kinds)
	slices.SortStableFunc(order, func(a, b *Kind) int {
		switch {
		case a.NoResource == b.NoResource:
			return 0
		case b.NoResource:
			return -1
		default:
			return 1
		}
	})
	return order
}()

// validateKinds checks the rules of every kind in rules as one load into
// c, which has the resources whose rules are replaced, on an engine whose
// rules book has: each kind's rules as a set, the system rules only with
// ReplaceSystem, every rule on one of those resources, and no name of a
// rule that book keeps (one of a resource c leaves alone). It adds every
// bad field to errs and returns what stages the rules, with their
// defaults, in c once the whole load is valid.
func validateKinds(rules *ResourceRules, c *ruleChange, book *ruleBook, clustered bool, errs *fieldErrors) []func(c *ruleChange) {
	stages := make([]func(c *ruleChange), len(loadOrder))
	for i, k := range loadOrder {
		stages[i] = k.load(rules, clustered, errs)
	}
	if len(rules.System) > 0 && !rules.ReplaceSystem {
		errs.add("system", "replaces the system rules only with ReplaceSystem set")
	}
	const unlisted = "is not one of the resources whose rules are replaced"
	for _, k := range loadOrder {
		if k.NoResource {
			continue
		}
		k.eachRule(rules, func(i int, _, resource string) {
			if c.resources[resource] == nil {
				errs.add(fmt.Sprintf("%s[%d].resource", k.list, i), unlisted)
			}
		})
	}
	for _, k := range loadOrder {
		if k.NoResource {
			continue
		}
		k.eachRule(rules, func(i int, name, _ string) {
			if r, ok := book.names[k.book][name]; ok && !c.replaces(r, k.book) {
				errs.add(fmt.Sprintf("%s[%d].name", k.list, i), fmt.Sprintf("%q is already the name of a rule of resource %q", name, r.name))
			}
		})
	}
	return stages
}

// RuleAt returns the name of the rule in rules that field, a field of the
// *ValidationError of LoadResourceRules ("flow[3].threshold"), is of, and
// the field within that rule ("threshold"); false for a field of no rule
// ("resources[0]", "system").
func (rules *ResourceRules) RuleAt(field string) (name, ruleField string, ok bool) {
	list, rest, _ := strings.Cut(field, "[")
	index, ruleField, _ := strings.Cut(rest, "].")
	at, err := strconv.Atoi(index)
	if err != nil {
		return "", "", false
	}
	for _, k := range Kinds {
		if k.list == list {
			name, ok = k.nameAt(rules, at)
			return name, ruleField, ok
		}
	}
	return "", "", false
}

// replaces reports whether c replaces the rules of kind of r.
func (c *ruleChange) replaces(r *Resource, kind ruleKind) bool {
	rc := c.resources[r.name]
	return rc != nil && rc.replaced[kind]
}
