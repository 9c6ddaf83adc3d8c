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
	reusable := make(map[FlowRule][]*flowChecker, len(e.flowCheckers))
	for _, c := range e.flowCheckers {
		reusable[c.rule] = append(reusable[c.rule], c)
	}
	checkers := make([]*flowChecker, len(loaded))
	sets := make(map[*Resource]*ruleSet)
	setOf := func(r *Resource) *ruleSet {
		s := sets[r]
		if s == nil {
			s = &ruleSet{}
			sets[r] = s
		}
		return s
	}
	for i, rule := range loaded {
		c := takeReusable(reusable, rule)
		if c == nil {
			stat := e.resourceFor(rule.Resource)
			if rule.RelationStrategy == RelationAssociated {
				stat = e.resourceFor(rule.RefResource)
			}
			c = newFlowChecker(rule, stat, now)
		}
		checkers[i] = c
		own := setOf(e.resourceFor(rule.Resource))
		own.flow = append(own.flow, c)
		if c.concurrency {
			stat := setOf(c.stat)
			stat.inFlightMatters = true
			if c.stat.name == rule.Resource {
				stat.reserveConcurrency = true
			}
		}
		if c.ownWindow {
			feeds := setOf(c.stat)
			feeds.feeds = append(feeds.feeds, c.win)
		}
	}
	for _, c := range e.flowCheckers {
		setOf(e.resourceFor(c.rule.Resource))
		setOf(c.stat)
	}
	for r, s := range sets {
		if len(s.flow) == 0 && len(s.feeds) == 0 && !s.inFlightMatters {
			s = noRules
		}
		r.rules.Store(s)
	}
	e.flowCheckers = checkers
	return nil
}

func takeReusable(pool map[FlowRule][]*flowChecker, rule FlowRule) *flowChecker {
	list := pool[rule]
	if len(list) == 0 {
		return nil
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
	loaded := make([]FlowRule, len(rules))
	var errs fieldErrors
	names := make(map[string]int, len(rules))
	for i, rule := range rules {
		rule = rule.WithDefaults()
		for _, fe := range rule.Validate() {
			errs.add(fmt.Sprintf("rules[%d].%s", i, fe.Field), fe.Message)
		}
		if rule.Name != "" {
			if first, taken := names[rule.Name]; taken {
				errs.add(fmt.Sprintf("rules[%d].name", i), fmt.Sprintf("%q is already the name of rules[%d]", rule.Name, first))
			} else {
				names[rule.Name] = i
			}
		}
		loaded[i] = rule
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Fields: errs}
	}
	return loaded, nil
}
