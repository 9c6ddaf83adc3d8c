package engine

import (
	"errors"
	"testing"
)

// TestExpiredRulesStopApplying: a rule stops applying at its expiresAtMs
// without a load, the others of its resource keep applying, and a rule
// loaded already expired never applies.
func TestExpiredRulesStopApplying(t *testing.T) {
	e, clock := newTestEngine(t, 1000,
		FlowRule{Name: "incident", Resource: "r", Threshold: 0, ExpiresAtMs: 5000},
		FlowRule{Name: "later", Resource: "r", Threshold: 0, ExpiresAtMs: 9000},
		FlowRule{Name: "gone", Resource: "old", Threshold: 0, ExpiresAtMs: 500},
	)
	err := e.LoadCircuitBreakerRules([]CircuitBreakerRule{{Name: "cb", Resource: "b", Strategy: StrategyErrorCount,
		Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 60_000, ExpiresAtMs: 3000}})
	if err != nil {
		t.Fatal(err)
	}
	r, b := e.Resource("r"), e.Resource("b")
	if _, blk := r.Entry(); blk == nil || blk.Rule() != "incident" {
		t.Fatalf("before expiry: %v, want blocked by incident", blk)
	}
	if !tryPass(e.Resource("old")) {
		t.Fatal("a rule loaded expired applies")
	}
	en, blk := b.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	en.Exit(WithError(errors.New("boom")))
	if _, blk := b.Entry(); blk == nil {
		t.Fatal("the breaker did not open")
	}
	clock.Set(2999)
	if _, blk := b.Entry(); blk == nil {
		t.Fatal("the breaker stopped applying before it expired")
	}
	clock.Set(3000)
	if !tryPass(b) {
		t.Fatal("an expired breaker still blocks")
	}
	clock.Set(4999)
	if _, blk := r.Entry(); blk == nil || blk.Rule() != "incident" {
		t.Fatalf("at 4999: %v, want blocked by incident", blk)
	}
	clock.Set(5000)
	if _, blk := r.Entry(); blk == nil || blk.Rule() != "later" {
		t.Fatalf("at 5000: %v, want blocked by later", blk)
	}
	clock.Set(9000)
	if !tryPass(r) {
		t.Fatal("every rule expired, the call is blocked")
	}
	err = e.LoadAuthorityRules([]AuthorityRule{{Resource: "r", Strategy: AuthorityAllow, Origins: []string{"a"}, ExpiresAtMs: 10_000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, blk := r.Entry(); blk == nil || blk.Reason() != ReasonAuthority {
		t.Fatalf("at 9000: %v, want an authority block", blk)
	}
	clock.Set(10_000)
	if !tryPass(r) {
		t.Fatal("an expired authority rule still blocks")
	}
	if got := len(e.FlowRules()); got != 3 {
		t.Errorf("%d flow rules listed, want the 3 loaded, expired ones included", got)
	}
}

// TestExpirySwapsOnce: past the expiry, the first call publishes the rule
// set without the expired rule; the calls after it find it published.
func TestExpirySwapsOnce(t *testing.T) {
	e, clock := newTestEngine(t, 0,
		FlowRule{Name: "a", Resource: "r", Threshold: 1e9, ExpiresAtMs: 100},
		FlowRule{Name: "b", Resource: "r", Threshold: 1e9})
	r := e.Resource("r")
	clock.Set(100)
	tryPass(r)
	swapped := r.rules.Load()
	if len(swapped.flow) != 1 || swapped.expiresAtMs != noExpiry {
		t.Fatalf("after expiry: %d rules, expiry %d; want 1 rule, none expiring", len(swapped.flow), swapped.expiresAtMs)
	}
	tryPass(r)
	if r.rules.Load() != swapped {
		t.Fatal("a second call swapped the rule set again")
	}
}

// TestNegativeExpiryIsInvalid: expiresAtMs is a time or 0.
func TestNegativeExpiryIsInvalid(t *testing.T) {
	if err := ValidateFlowRules([]FlowRule{{Resource: "r", Threshold: 1, ExpiresAtMs: -1}}); err == nil {
		t.Fatal("a negative expiresAtMs is valid")
	}
}
