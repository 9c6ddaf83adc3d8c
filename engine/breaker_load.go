package engine

import "fmt"

// maxBreakersPerResource bounds the circuit breakers of one resource: an
// Entry remembers which of them it probes in a 64-bit mask.
const maxBreakersPerResource = 64

// LoadCircuitBreakerRules replaces every circuit breaker rule with rules, as
// LoadFlowRules does for flow rules: validated first (a *ValidationError
// names every bad field as "rules[i].field"), then switched to atomically per
// resource. A breaker loaded again unchanged keeps its state and window.
func (e *Engine) LoadCircuitBreakerRules(rules []CircuitBreakerRule) error {
	loaded, err := validateCircuitBreakerRules(rules)
	if err != nil {
		return err
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	now := e.clock.NowMs()
	reusable := reusePool(e.breakers, func(b *breaker) CircuitBreakerRule { return b.rule })
	breakers := make([]*breaker, len(loaded))
	for i, rule := range loaded {
		b := takeReusable(reusable, rule)
		if b == nil {
			b = newBreaker(rule, e.resourceFor(rule.Resource), now, e.onBreakerChange)
		}
		breakers[i] = b
	}
	previous := e.ruledResources()
	e.breakers = breakers
	e.publish(previous)
	return nil
}

// ValidateCircuitBreakerRules checks rules as LoadCircuitBreakerRules
// would, without loading them.
func ValidateCircuitBreakerRules(rules []CircuitBreakerRule) error {
	_, err := validateCircuitBreakerRules(rules)
	return err
}

func validateCircuitBreakerRules(rules []CircuitBreakerRule) ([]CircuitBreakerRule, error) {
	perResource := make(map[string]int)
	return validateSet(rules, func(i int, rule CircuitBreakerRule, errs *fieldErrors) {
		if perResource[rule.Resource]++; perResource[rule.Resource] == maxBreakersPerResource+1 {
			errs.add(fmt.Sprintf("rules[%d].resource", i), fmt.Sprintf("has more than %d circuit breakers", maxBreakersPerResource))
		}
	})
}

// CircuitBreakerRules returns the loaded circuit breaker rules, defaults
// filled in.
func (e *Engine) CircuitBreakerRules() []CircuitBreakerRule {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	rules := make([]CircuitBreakerRule, len(e.breakers))
	for i, b := range e.breakers {
		rules[i] = b.rule
	}
	return rules
}

// Breakers returns the state of every loaded circuit breaker, in load
// order.
func (e *Engine) Breakers() []BreakerStatus {
	e.loadMu.Lock()
	breakers := e.breakers
	e.loadMu.Unlock()
	now := e.clock.NowMs()
	out := make([]BreakerStatus, len(breakers))
	for i, b := range breakers {
		out[i] = b.status(now)
	}
	return out
}
