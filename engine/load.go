package engine

import (
	"errors"
	"fmt"
	"maps"
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
