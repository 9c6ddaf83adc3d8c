package engine

import (
	"fmt"
	"maps"
)

// maxBreakersPerResource bounds the circuit breakers of one resource: an
// Entry remembers which of them it probes in a 64-bit mask.
const maxBreakersPerResource = 64

// LoadCircuitBreakerRules replaces every circuit breaker rule with rules, as
// LoadFlowRules does for flow rules: validated first (a *ValidationError
// names every bad field as "rules[i].field"), then switched to atomically per
// resource. A breaker loaded again unchanged keeps its state and window.
func (e *Engine) LoadCircuitBreakerRules(rules []CircuitBreakerRule) error {
	loaded, err := validateCircuitBreakerRules("rules", rules)
	if err != nil {
		return err
	}
	c := newRuleChange(len(loaded))
	for _, rule := range loaded {
		rc := c.of(rule.Resource)
		rc.breakers = append(rc.breakers, rule)
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.commitEvery(c, breakerKind)
	return nil
}

// ValidateCircuitBreakerRules checks rules as LoadCircuitBreakerRules
// would, without loading them.
func ValidateCircuitBreakerRules(rules []CircuitBreakerRule) error {
	_, err := validateCircuitBreakerRules("rules", rules)
	return err
}

func validateCircuitBreakerRules(prefix string, rules []CircuitBreakerRule) ([]CircuitBreakerRule, error) {
	return validateSet(CircuitBreakerKind, prefix, rules, breakerSetCheck(prefix, false))
}

// breakerSetCheck is the check of a set of circuit breakers: at most
// maxBreakersPerResource per resource.
func breakerSetCheck(prefix string, _ bool) func(i int, rule CircuitBreakerRule, errs *fieldErrors) {
	perResource := make(map[string]int)
	return func(i int, rule CircuitBreakerRule, errs *fieldErrors) {
		if perResource[rule.Resource]++; perResource[rule.Resource] == maxBreakersPerResource+1 {
			errs.add(fmt.Sprintf("%s[%d].resource", prefix, i), fmt.Sprintf("has more than %d circuit breakers", maxBreakersPerResource))
		}
	}
}

// CircuitBreakerRules returns the loaded circuit breaker rules, defaults
// filled in, in the order of Breakers.
func (e *Engine) CircuitBreakerRules() []CircuitBreakerRule {
	var rules []CircuitBreakerRule
	for _, b := range e.loadedBreakers() {
		rules = append(rules, b.rule)
	}
	return rules
}

// Breakers returns the state of every loaded circuit breaker, grouped by
// resource: the resources in the order they got their first rule, each
// one's breakers in the order they were loaded.
func (e *Engine) Breakers() []BreakerStatus {
	breakers := e.loadedBreakers()
	now := e.clock.NowMs()
	out := make([]BreakerStatus, len(breakers))
	for i, b := range breakers {
		out[i] = b.status(now)
	}
	return out
}

func (e *Engine) loadedBreakers() []*breaker {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	var breakers []*breaker
	for _, set := range e.book.inOrder(maps.Keys(e.book.withBreakers)) {
		breakers = append(breakers, set.breakers...)
	}
	return breakers
}
