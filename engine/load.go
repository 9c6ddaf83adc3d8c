package engine

import (
	"fmt"
)

// LoadFlowRules replaces every flow rule with rules, as Sentinel's LoadRules
// does. The set is validated first (a *ValidationError names every bad field
// as "rules[i].field"; nothing changes then). Each resource then switches to
// its new rules atomically: a call sees the old rules or the new ones, never a
// mix. Statistics are kept, and so is the state (throttling queue, warm-up
// tokens, own window) of every rule that is loaded again unchanged.
func (e *Engine) LoadFlowRules(rules []FlowRule) error {
	loaded, err := validateFlowRules(rules)
	if err != nil {
		return err
	}

	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	now := e.clock.NowMs()
	reusable := reusePool(e.flowCheckers, func(c *flowChecker) FlowRule { return c.rule })
	checkers := make([]*flowChecker, len(loaded))
	for i, rule := range loaded {
		c := takeReusable(reusable, rule)
		if c == nil {
			stat := e.resourceFor(rule.Resource)
			if rule.RelationStrategy == RelationAssociated {
				stat = e.resourceFor(rule.RefResource)
			}
			c = newFlowChecker(rule, e.resourceFor(rule.Resource), stat, now)
		}
		checkers[i] = c
	}
	previous := e.ruledResources()
	e.flowCheckers = checkers
	e.publish(previous)
	return nil
}

// ruledResources lists the resources the loaded rules name or measure.
func (e *Engine) ruledResources() []*Resource {
	var out []*Resource
	for _, c := range e.flowCheckers {
		out = append(out, c.owner, c.stat)
	}
	for _, b := range e.breakers {
		out = append(out, b.owner)
	}
	return out
}

// publish gives every resource with loaded rules its new rule set, and an
// empty one to every resource in previous that has none left. Each
// resource switches atomically. The caller holds loadMu.
func (e *Engine) publish(previous []*Resource) {
	sets := make(map[*Resource]*ruleSet)
	setOf := func(r *Resource) *ruleSet {
		s := sets[r]
		if s == nil {
			s = &ruleSet{}
			sets[r] = s
		}
		return s
	}
	for _, c := range e.flowCheckers {
		own := setOf(c.owner)
		own.flow = append(own.flow, c)
		if c.concurrency {
			stat := setOf(c.stat)
			stat.inFlightMatters = true
			stat.reserveConcurrency = stat.reserveConcurrency || c.stat == c.owner
		}
		if c.ownWindow {
			feeds := setOf(c.stat)
			feeds.feeds = append(feeds.feeds, c.win)
		}
	}
	for _, b := range e.breakers {
		own := setOf(b.owner)
		own.breakers = append(own.breakers, b)
	}
	for _, r := range previous {
		setOf(r)
	}
	for r, s := range sets {
		if len(s.flow) == 0 && len(s.feeds) == 0 && len(s.breakers) == 0 && !s.inFlightMatters {
			s = noRules
		}
		r.rules.Store(s)
	}
}

// reusePool indexes loaded checkers by their rule, so that a reload keeps
// the state of every rule it loads unchanged.
func reusePool[R comparable, C any](loaded []C, ruleOf func(C) R) map[R][]C {
	pool := make(map[R][]C, len(loaded))
	for _, c := range loaded {
		pool[ruleOf(c)] = append(pool[ruleOf(c)], c)
	}
	return pool
}

// takeReusable takes a loaded checker of rule out of pool, or returns the
// zero C.
func takeReusable[R comparable, C any](pool map[R][]C, rule R) C {
	var none C
	list := pool[rule]
	if len(list) == 0 {
		return none
	}
	pool[rule] = list[1:]
	return list[0]
}

// FlowRules returns the loaded flow rules, defaults filled in.
func (e *Engine) FlowRules() []FlowRule {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	rules := make([]FlowRule, len(e.flowCheckers))
	for i, c := range e.flowCheckers {
		rules[i] = c.rule
	}
	return rules
}

// ValidateFlowRules checks rules as LoadFlowRules would, without loading
// them: nil, or a *ValidationError naming every bad field.
func ValidateFlowRules(rules []FlowRule) error {
	_, err := validateFlowRules(rules)
	return err
}

// validateFlowRules returns the rules with their defaults, or the error that
// names every bad field as "rules[i].field".
func validateFlowRules(rules []FlowRule) ([]FlowRule, error) {
	return validateSet(rules, nil)
}

// validatable is a rule type: FlowRule or CircuitBreakerRule.
type validatable[R any] interface {
	WithDefaults() R
	Validate() []FieldError
	ruleName() string
}

// validateSet validates rules as a set: each rule, unique names, and
// whatever check adds. It returns the rules with their defaults, or the
// error that names every bad field as "rules[i].field".
func validateSet[R validatable[R]](rules []R, check func(i int, rule R, errs *fieldErrors)) ([]R, error) {
	loaded := make([]R, len(rules))
	var errs fieldErrors
	names := make(map[string]int, len(rules))
	for i, rule := range rules {
		rule = rule.WithDefaults()
		for _, fe := range rule.Validate() {
			errs.add(fmt.Sprintf("rules[%d].%s", i, fe.Field), fe.Message)
		}
		if name := rule.ruleName(); name != "" {
			if first, taken := names[name]; taken {
				errs.add(fmt.Sprintf("rules[%d].name", i), fmt.Sprintf("%q is already the name of rules[%d]", name, first))
			} else {
				names[name] = i
			}
		}
		if check != nil {
			check(i, rule, &errs)
		}
		loaded[i] = rule
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Fields: errs}
	}
	return loaded, nil
}
