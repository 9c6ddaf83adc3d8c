package engine

import (
	"errors"
	"strconv"
	"testing"
)

// passes counts how many of n calls with opts pass r.
func passes(r *Resource, n int, opts ...EntryOption) int {
	got := 0
	for range n {
		if tryPass(r, opts...) {
			got++
		}
	}
	return got
}

// TestAuthorityRules: allow lets only the listed origins through (a call
// without one is blocked), deny blocks the listed ones, shadow only counts.
func TestAuthorityRules(t *testing.T) {
	e, _ := newTestEngine(t, 0)
	err := e.LoadAuthorityRules([]AuthorityRule{
		{Name: "only-checkout", Resource: "allow", Strategy: AuthorityAllow, Origins: []string{"checkout"}},
		{Name: "no-crawler", Resource: "deny", Strategy: AuthorityDeny, Origins: []string{"crawler"}},
		{Name: "try", Resource: "shadow", Strategy: AuthorityAllow, Origins: []string{"checkout"}, Mode: ModeShadow},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resource, origin string
		pass             bool
	}{
		{"allow", "checkout", true}, {"allow", "crawler", false}, {"allow", "", false},
		{"deny", "checkout", true}, {"deny", "crawler", false}, {"deny", "", true},
		{"shadow", "crawler", true},
	} {
		en, blk := e.Entry(tc.resource, WithOrigin(tc.origin))
		if (blk == nil) != tc.pass {
			t.Errorf("%s from %q: blocked %v, want pass %v", tc.resource, tc.origin, blk, tc.pass)
			continue
		}
		if blk != nil && blk.Reason() != ReasonAuthority {
			t.Errorf("reason %s, want authority", blk.Reason())
		}
		en.Exit()
	}
	if got := len(e.AuthorityRules()); got != 3 {
		t.Errorf("%d authority rules listed, want 3", got)
	}
	if err := e.LoadAuthorityRules([]AuthorityRule{{Resource: "r", Strategy: "maybe"}}); err == nil {
		t.Error("a rule without origins and with a bad strategy loaded")
	}
}

// TestLimitApp: a rule for an origin counts only that origin's calls, on
// their own statistics; other limits each unnamed origin apart; a call
// without an origin is limited by neither; default counts every caller.
func TestLimitApp(t *testing.T) {
	e, clock := newTestEngine(t, 0,
		FlowRule{Name: "checkout", Resource: "r", Threshold: 5, LimitApp: "checkout"},
		FlowRule{Name: "others", Resource: "r", Threshold: 1, LimitApp: LimitAppOther},
		FlowRule{Name: "all", Resource: "r", Threshold: 20},
	)
	r := e.Resource("r")
	for _, tc := range []struct {
		origin string
		want   int
	}{{"checkout", 5}, {"billing", 1}, {"search", 1}, {"", 13}} {
		if got := passes(r, 13, WithOrigin(tc.origin)); got != tc.want {
			t.Errorf("origin %q: %d passes, want %d", tc.origin, got, tc.want)
		}
		if tc.origin == "billing" {
			if _, blk := r.Entry(WithOrigin("billing")); blk == nil || blk.Rule() != "others" || blk.Reason() != ReasonFlow {
				t.Errorf("billing's block %v, want flow others", blk)
			}
		}
	}
	if _, blk := r.Entry(); blk == nil || blk.Rule() != "all" {
		t.Errorf("block %v, want all", blk)
	}
	clock.Set(1000)
	if got := passes(r, 10, WithOrigin("checkout")); got != 5 {
		t.Errorf("a second later, checkout: %d passes, want 5", got)
	}
}

// TestLimitAppConcurrency counts one origin's calls in flight.
func TestLimitAppConcurrency(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Resource: "r", Metric: MetricConcurrency, Threshold: 1, LimitApp: "batch"})
	r := e.Resource("r")
	en, blk := r.Entry(WithOrigin("batch"))
	if blk != nil || !en.NeedsExit() {
		t.Fatalf("%v, needs exit %v", blk, en.NeedsExit())
	}
	if _, blk := r.Entry(WithOrigin("batch")); blk == nil || blk.Reason() != ReasonConcurrency {
		t.Fatalf("second batch call: %v, want a concurrency block", blk)
	}
	if !tryPass(r, WithOrigin("web")) {
		t.Fatal("another origin is limited")
	}
	en.Exit()
	if !tryPass(r, WithOrigin("batch")) {
		t.Fatal("exit did not free the origin")
	}
}

// TestLimitAppOtherIsBounded: limitApp other keeps statistics for at most
// maxOriginsTracked origins.
func TestLimitAppOtherIsBounded(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Resource: "r", Threshold: 1, LimitApp: LimitAppOther})
	r := e.Resource("r")
	for i := range 2 * maxOriginsTracked {
		tryPass(r, WithOrigin("origin-"+strconv.Itoa(i)))
	}
	if n := r.rules.Load().more.keyed[0].values.len(); n > maxOriginsTracked {
		t.Fatalf("%d origins tracked, bound %d", n, maxOriginsTracked)
	}
}

// TestLimitAppValidation: a limitApp other than default needs a rule on
// its own resource's calls counted directly.
func TestLimitAppValidation(t *testing.T) {
	for _, rule := range []FlowRule{
		{Resource: "r", Threshold: 1, LimitApp: "a", TokenCalculateStrategy: StrategyWarmUp, WarmUpPeriodSec: 1},
		{Resource: "r", Threshold: 1, LimitApp: "a", RelationStrategy: RelationAssociated, RefResource: "s"},
	} {
		errs := rule.Validate()
		if len(errs) != 1 || errs[0].Field != "limitApp" {
			t.Errorf("%+v: %v, want one error on limitApp", rule, errs)
		}
	}
	two := []FlowRule{
		{Resource: "r", Metric: MetricConcurrency, Threshold: 1, LimitApp: "a"},
		{Resource: "r", Metric: MetricConcurrency, Threshold: 1, LimitApp: "b"},
	}
	if err := ValidateFlowRules(two); err == nil {
		t.Error("two concurrency rules with a limitApp on one resource are valid")
	}
}

// TestResourceRulesLoadEveryKind: LoadResourceRules replaces the
// authority and hotspot rules of the resources it names with their flow
// rules, and names are unique per kind across loads.
func TestResourceRulesLoadEveryKind(t *testing.T) {
	e, _ := newTestEngine(t, 0)
	err := e.LoadResourceRules(ResourceRules{
		Resources: []string{"r"},
		Flow:      []FlowRule{{Name: "f", Resource: "r", Threshold: 100}},
		Hotspot:   []HotspotRule{{Name: "h", Resource: "r", ParamKey: "k", Threshold: 1}},
		Authority: []AuthorityRule{{Name: "a", Resource: "r", Strategy: AuthorityDeny, Origins: []string{"bad"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Resource("r")
	if _, blk := r.Entry(WithOrigin("bad")); blk == nil || blk.Rule() != "a" {
		t.Fatalf("%v, want blocked by a", blk)
	}
	tryPass(r, WithParam("k", "v"))
	if _, blk := r.Entry(WithParam("k", "v")); blk == nil || blk.Rule() != "h" {
		t.Fatalf("%v, want blocked by h", blk)
	}
	err = e.LoadResourceRules(ResourceRules{Resources: []string{"s"},
		Authority: []AuthorityRule{{Name: "a", Resource: "s", Strategy: AuthorityAllow, Origins: []string{"x"}}}})
	var invalid *ValidationError
	if !errors.As(err, &invalid) || invalid.Fields[0].Field != "authority[0].name" {
		t.Fatalf("a taken authority name: %v", err)
	}
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"r"}}); err != nil {
		t.Fatal(err)
	}
	if !tryPass(r, WithOrigin("bad"), WithParam("k", "v")) || len(e.AuthorityRules()) != 0 || len(e.HotspotRules()) != 0 {
		t.Fatal("the rules of r outlived their replacement")
	}
}
