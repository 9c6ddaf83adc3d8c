package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLoadResourceRulesTouchesOnlyItsResources(t *testing.T) {
	paced := FlowRule{Name: "paced", Resource: "pay", Threshold: 1, ControlBehavior: BehaviorThrottling}
	e, _ := newTestEngine(t, 0,
		FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 10},
		paced,
	)
	shipBreaker := CircuitBreakerRule{Name: "ship-errors", Resource: "ship", Strategy: StrategyErrorCount, Threshold: 1, RetryTimeoutMs: 1000}
	if err := e.LoadCircuitBreakerRules([]CircuitBreakerRule{shipBreaker}); err != nil {
		t.Fatal(err)
	}
	orders, pay, ship := e.Resource("orders"), e.Resource("pay"), e.Resource("ship")
	if !tryPass(pay) {
		t.Fatal("first paced call blocked")
	}
	paySet, shipSet := pay.rules.Load(), ship.rules.Load()

	err := e.LoadResourceRules(ResourceRules{
		Resources: []string{"orders"},
		Flow:      []FlowRule{{Name: "orders-qps", Resource: "orders", Threshold: 0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if pay.rules.Load() != paySet || ship.rules.Load() != shipSet {
		t.Fatal("resources the load does not name were published again")
	}
	if tryPass(orders) {
		t.Fatal("orders passed its new threshold of 0")
	}
	if tryPass(pay) {
		t.Fatal("the paced rule of an untouched resource forgot its last pass")
	}
	want := []string{"orders-qps=0", "paced=1"}
	var got []string
	for _, r := range e.FlowRules() {
		got = append(got, fmt.Sprintf("%s=%g", r.Name, r.Threshold))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("FlowRules() = %v, want %v", got, want)
	}
	if got := e.CircuitBreakerRules(); len(got) != 1 || got[0].Name != "ship-errors" {
		t.Fatalf("CircuitBreakerRules() = %+v, want ship-errors alone", got)
	}

	// A resource named with no rule loses them all, of both kinds.
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"ship", "pay"}}); err != nil {
		t.Fatal(err)
	}
	if pay.rules.Load() != noRules || ship.rules.Load() != noRules {
		t.Fatal("resources loaded with no rule kept some")
	}
	if got := e.FlowRules(); len(got) != 1 || got[0].Name != "orders-qps" {
		t.Fatalf("FlowRules() = %+v, want orders-qps alone", got)
	}
}

func TestLoadResourceRulesKeepsStateOfUnchangedRules(t *testing.T) {
	paced := FlowRule{Name: "paced", Resource: "pay", Threshold: 1, ControlBehavior: BehaviorThrottling}
	e, _ := newTestEngine(t, 0, paced)
	pay := e.Resource("pay")
	if !tryPass(pay) {
		t.Fatal("first paced call blocked")
	}
	err := e.LoadResourceRules(ResourceRules{
		Resources: []string{"pay"},
		Flow:      []FlowRule{{Name: "pay-qps", Resource: "pay", Threshold: 100}, paced},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tryPass(pay) {
		t.Fatal("the paced rule loaded again unchanged forgot its last pass")
	}
	if got := pay.Live().PassQps; got != 1 {
		t.Fatalf("pass qps = %v after the load, want the 1 before it", got)
	}
}

func TestLoadResourceRulesValidates(t *testing.T) {
	flow := func(name, resource string) FlowRule { return FlowRule{Name: name, Resource: resource, Threshold: 1} }
	breaker := func(name, resource string) CircuitBreakerRule {
		return CircuitBreakerRule{Name: name, Resource: resource, Strategy: StrategyErrorCount, Threshold: 1, RetryTimeoutMs: 1000}
	}
	tooMany := make([]CircuitBreakerRule, maxBreakersPerResource+1)
	for i := range tooMany {
		tooMany[i] = breaker(fmt.Sprintf("b%d", i), "a")
	}
	tests := []struct {
		name  string
		rules ResourceRules
		want  []FieldError // nil: valid
	}{
		{
			name:  "a flow rule's name is taken by a rule of a resource left alone",
			rules: ResourceRules{Resources: []string{"a"}, Flow: []FlowRule{flow("b-qps", "a")}},
			want:  []FieldError{{"flow[0].name", `"b-qps" is already the name of a rule of resource "b"`}},
		},
		{
			name:  "a breaker's name is taken by a breaker of a resource left alone",
			rules: ResourceRules{Resources: []string{"a"}, CircuitBreakers: []CircuitBreakerRule{breaker("b-errors", "a")}},
			want:  []FieldError{{"circuitBreakers[0].name", `"b-errors" is already the name of a rule of resource "b"`}},
		},
		{
			name:  "kinds have names of their own",
			rules: ResourceRules{Resources: []string{"a"}, Flow: []FlowRule{flow("b-errors", "a")}},
		},
		{
			name:  "a name moves between resources the load replaces",
			rules: ResourceRules{Resources: []string{"a", "b"}, Flow: []FlowRule{flow("b-qps", "a"), flow("a-qps", "b")}},
		},
		{
			name:  "names are unique within the load",
			rules: ResourceRules{Resources: []string{"a", "c"}, Flow: []FlowRule{flow("x", "a"), flow("x", "c")}},
			want:  []FieldError{{"flow[1].name", `"x" is already the name of flow[0]`}},
		},
		{
			name: "every rule is on a resource the load names",
			rules: ResourceRules{
				Resources:       []string{"a"},
				Flow:            []FlowRule{flow("x", "a"), flow("y", "c")},
				CircuitBreakers: []CircuitBreakerRule{breaker("z", "b")},
			},
			want: []FieldError{
				{"flow[1].resource", "is not one of the resources whose rules are replaced"},
				{"circuitBreakers[0].resource", "is not one of the resources whose rules are replaced"},
			},
		},
		{
			name:  "resource names are checked",
			rules: ResourceRules{Resources: []string{"a", ""}},
			want:  []FieldError{{"resources[1]", "is required"}},
		},
		{
			name:  "each rule is checked",
			rules: ResourceRules{Resources: []string{"a"}, Flow: []FlowRule{{Resource: "a", Threshold: -1}}},
			want:  []FieldError{{"flow[0].threshold", "must be >= 0"}},
		},
		{
			name:  "circuit breakers per resource are bounded",
			rules: ResourceRules{Resources: []string{"a"}, CircuitBreakers: tooMany},
			want:  []FieldError{{fmt.Sprintf("circuitBreakers[%d].resource", maxBreakersPerResource), fmt.Sprintf("has more than %d circuit breakers", maxBreakersPerResource)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, 0, flow("a-qps", "a"), flow("b-qps", "b"))
			if err := e.LoadCircuitBreakerRules([]CircuitBreakerRule{breaker("b-errors", "b")}); err != nil {
				t.Fatal(err)
			}
			before := e.FlowRules()

			validated := e.ValidateResourceRules(tt.rules)
			if got := e.FlowRules(); !slices.Equal(got, before) {
				t.Fatalf("ValidateResourceRules changed the rules: %+v", got)
			}
			loaded := e.LoadResourceRules(tt.rules)

			for _, err := range []error{validated, loaded} {
				var invalid *ValidationError
				switch {
				case tt.want == nil && err != nil:
					t.Fatalf("err = %v, want the rules accepted", err)
				case tt.want != nil && !errors.As(err, &invalid):
					t.Fatalf("err = %v, want a *ValidationError", err)
				case tt.want != nil && !slices.Equal(invalid.Fields, tt.want):
					t.Fatalf("fields = %+v, want %+v", invalid.Fields, tt.want)
				}
			}
			if tt.want != nil {
				if got := e.FlowRules(); !slices.Equal(got, before) {
					t.Fatalf("a rejected load changed the rules: %+v", got)
				}
			}
		})
	}
}

// TestRuleNamesFollowTheirRules: a name is taken while a loaded rule has
// it, wherever the rule moved, and free once it is gone.
func TestRuleNamesFollowTheirRules(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Name: "x", Resource: "a", Threshold: 1})
	// b is loaded first, so the name is b's before a's rules are replaced.
	err := e.LoadResourceRules(ResourceRules{Resources: []string{"b", "a"}, Flow: []FlowRule{{Name: "x", Resource: "b", Threshold: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	onC := ResourceRules{Resources: []string{"c"}, Flow: []FlowRule{{Name: "x", Resource: "c", Threshold: 1}}}
	var invalid *ValidationError
	if err := e.LoadResourceRules(onC); !errors.As(err, &invalid) || invalid.Fields[0].Message != `"x" is already the name of a rule of resource "b"` {
		t.Fatalf("err = %v, want x taken by b", err)
	}
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.LoadResourceRules(onC); err != nil {
		t.Fatalf("err = %v, want x free once its rule is gone", err)
	}
}

// TestLoadResourceRulesSwitchesBothKindsAtOnce: a call never sees the flow
// rules of one load beside the circuit breakers of another.
func TestLoadResourceRulesSwitchesBothKindsAtOnce(t *testing.T) {
	e, _ := newTestEngine(t, 0)
	generation := func(g int) ResourceRules {
		return ResourceRules{
			Resources: []string{"pay"},
			Flow:      []FlowRule{{Resource: "pay", Threshold: float64(g)}},
			CircuitBreakers: []CircuitBreakerRule{
				{Resource: "pay", Strategy: StrategyErrorCount, Threshold: float64(g), RetryTimeoutMs: 1000},
			},
		}
	}
	if err := e.LoadResourceRules(generation(1)); err != nil {
		t.Fatal(err)
	}
	pay := e.Resource("pay")
	var done atomic.Bool
	var mixed atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			s := pay.rules.Load()
			if s.flow[0].threshold != s.breakers[0].rule.Threshold {
				mixed.Add(1)
			}
		}
	})
	for g := 2; g <= 2000; g++ {
		if err := e.LoadResourceRules(generation(g)); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	if n := mixed.Load(); n > 0 {
		t.Fatalf("%d reads saw the flow rule of one load with the breaker of another", n)
	}
}

// TestAssociatedRuleSurvivesLoadsOfTheResourceItMeasures: an associated
// rule's pass log keeps being fed by the resource it measures when that
// resource's own rules are loaded, and stops when the rule is removed.
func TestAssociatedRuleSurvivesLoadsOfTheResourceItMeasures(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{
		Name: "writes-yield", Resource: "write", Threshold: 5, StatIntervalMs: 2000,
		RelationStrategy: RelationAssociated, RefResource: "read",
	})
	write, read := e.Resource("write"), e.Resource("read")
	err := e.LoadResourceRules(ResourceRules{
		Resources: []string{"read"},
		Flow:      []FlowRule{{Name: "read-qps", Resource: "read", Threshold: 100}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		tryPass(read)
	}
	if _, blk := write.Entry(); blk == nil || blk.Rule() != "writes-yield" {
		t.Fatalf("write passed with read over the threshold of its associated rule (block %v)", blk)
	}
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	if s := read.rules.Load(); len(s.feeds) != 1 {
		t.Fatalf("read feeds %d logs once its own rules are gone, want the associated rule's", len(s.feeds))
	}
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"write"}}); err != nil {
		t.Fatal(err)
	}
	if read.rules.Load() != noRules || write.rules.Load() != noRules {
		t.Fatal("rule sets left behind once no rule names either resource")
	}
	if !tryPass(write) {
		t.Fatal("write blocked with its rule gone")
	}
}

func TestRulesAreListedByResource(t *testing.T) {
	e, _ := newTestEngine(t, 0,
		FlowRule{Name: "b1", Resource: "b", Threshold: 1},
		FlowRule{Name: "a1", Resource: "a", Threshold: 1},
		FlowRule{Name: "b2", Resource: "b", Threshold: 1},
	)
	err := e.LoadResourceRules(ResourceRules{
		Resources: []string{"c", "b"},
		Flow:      []FlowRule{{Name: "c1", Resource: "c", Threshold: 1}, {Name: "b3", Resource: "b", Threshold: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range e.FlowRules() {
		got = append(got, r.Name)
	}
	if want := []string{"b3", "a1", "c1"}; !slices.Equal(got, want) {
		t.Fatalf("FlowRules() = %v, want %v: by resource, in the order each got its first rule", got, want)
	}
}

// TestIncrementalLoadsMatchTheirRules loads random rules on a few resources,
// some loads replacing a few resources, others every rule of a kind, and
// checks after each that every resource's rule set is what its rules, and
// the associated rules measuring it, call for.
func TestIncrementalLoadsMatchTheirRules(t *testing.T) {
	names := []string{"r0", "r1", "r2", "r3", "r4"}
	rng := rand.New(rand.NewPCG(1, 2))
	randomFlow := func(resource string, i int) FlowRule {
		r := FlowRule{Name: fmt.Sprintf("f-%s-%d", resource, i), Resource: resource, Threshold: float64(rng.IntN(3))}
		if rng.IntN(3) == 0 {
			r.Metric = MetricConcurrency
		} else if rng.IntN(2) == 0 {
			r.StatIntervalMs = 2000
		}
		if rng.IntN(3) == 0 {
			r.RelationStrategy, r.RefResource = RelationAssociated, names[rng.IntN(len(names))]
		}
		return r.WithDefaults()
	}
	randomBreaker := func(resource string, i int) CircuitBreakerRule {
		return CircuitBreakerRule{
			Name: fmt.Sprintf("b-%s-%d", resource, i), Resource: resource,
			Strategy: StrategyErrorCount, Threshold: float64(1 + rng.IntN(2)), RetryTimeoutMs: 1000,
		}.WithDefaults()
	}
	flow := map[string][]FlowRule{}
	breakers := map[string][]CircuitBreakerRule{}
	e, _ := newTestEngine(t, 0)
	for step := range 300 {
		switch rng.IntN(10) {
		case 0: // every flow rule at once
			var all []FlowRule
			for _, name := range names {
				flow[name] = nil
				for i := range rng.IntN(3) {
					flow[name] = append(flow[name], randomFlow(name, i))
				}
				all = append(all, flow[name]...)
			}
			if err := e.LoadFlowRules(all); err != nil {
				t.Fatal(err)
			}
		case 1: // every circuit breaker at once
			var all []CircuitBreakerRule
			for _, name := range names {
				breakers[name] = nil
				for i := range rng.IntN(2) {
					breakers[name] = append(breakers[name], randomBreaker(name, i))
				}
				all = append(all, breakers[name]...)
			}
			if err := e.LoadCircuitBreakerRules(all); err != nil {
				t.Fatal(err)
			}
		default: // the rules of a few resources
			var load ResourceRules
			for _, name := range names {
				if rng.IntN(3) > 0 {
					continue
				}
				load.Resources = append(load.Resources, name)
				flow[name], breakers[name] = nil, nil
				for i := range rng.IntN(3) {
					if rng.IntN(4) == 0 && len(flow[name]) > 0 {
						flow[name] = append(flow[name], flow[name][0]) // the same rule twice, unnamed
						flow[name][len(flow[name])-1].Name = ""
						continue
					}
					flow[name] = append(flow[name], randomFlow(name, i))
				}
				for i := range rng.IntN(2) {
					breakers[name] = append(breakers[name], randomBreaker(name, i))
				}
				load.Flow = append(load.Flow, flow[name]...)
				load.CircuitBreakers = append(load.CircuitBreakers, breakers[name]...)
			}
			if err := e.LoadResourceRules(load); err != nil {
				t.Fatal(err)
			}
		}
		var wantBreakers, gotBreakers []string
		for _, name := range names {
			want := expectedRuleSet(name, flow, breakers)
			if got := describeRuleSet(e.Resource(name).rules.Load()); got != want {
				t.Fatalf("step %d: %s has %s, want %s", step, name, got, want)
			}
			for _, b := range breakers[name] {
				wantBreakers = append(wantBreakers, b.Name)
			}
		}
		for _, b := range e.Breakers() {
			gotBreakers = append(gotBreakers, b.Rule)
		}
		slices.Sort(wantBreakers)
		slices.Sort(gotBreakers)
		if !slices.Equal(gotBreakers, wantBreakers) {
			t.Fatalf("step %d: Breakers() lists %v, want %v", step, gotBreakers, wantBreakers)
		}
	}
}

// describeRuleSet summarises a rule set: its rules, the pass logs it feeds
// and its concurrency flags.
func describeRuleSet(s *ruleSet) string {
	var flow, breakers []string
	for _, c := range s.flow {
		flow = append(flow, fmt.Sprintf("%+v", c.rule()))
	}
	for _, b := range s.breakers {
		breakers = append(breakers, b.rule.Name)
	}
	return fmt.Sprintf("flow %v breakers %v feeds %d reserve %t inFlight %t",
		flow, breakers, len(s.feeds), s.reserveConcurrency, s.inFlightMatters)
}

// expectedRuleSet is describeRuleSet of the rule set that resource name
// must have, worked out from every resource's rules.
func expectedRuleSet(name string, flow map[string][]FlowRule, breakers map[string][]CircuitBreakerRule) string {
	var own, breakerNames []string
	feeds, reserve, inFlight := 0, false, false
	for _, r := range flow[name] {
		own = append(own, fmt.Sprintf("%+v", r))
	}
	for _, b := range breakers[name] {
		breakerNames = append(breakerNames, b.Name)
	}
	for _, rules := range flow {
		for _, r := range rules {
			stat := r.Resource
			if r.RelationStrategy == RelationAssociated {
				stat = r.RefResource
			}
			if stat != name {
				continue
			}
			if r.Metric == MetricConcurrency {
				inFlight = true
				reserve = reserve || r.Resource == name
			} else if r.ControlBehavior != BehaviorThrottling || r.TokenCalculateStrategy == StrategyWarmUp {
				feeds++ // the rule's pass log
			}
		}
	}
	return fmt.Sprintf("flow %v breakers %v feeds %d reserve %t inFlight %t", own, breakerNames, feeds, reserve, inFlight)
}

// BenchmarkLoadResourceRules replaces the rule of one resource among n
// resources with a rule each: the cost must not grow with n.
func BenchmarkLoadResourceRules(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			rules := make([]FlowRule, n)
			for i := range rules {
				rules[i] = FlowRule{Name: fmt.Sprintf("rule-%d", i), Resource: fmt.Sprintf("resource-%d", i), Threshold: 100}
			}
			e := benchEngine(b, rules...)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				rule := rules[i%n]
				rule.Threshold = float64(i)
				i++
				err := e.LoadResourceRules(ResourceRules{Resources: []string{rule.Resource}, Flow: []FlowRule{rule}})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLoadResourceRulesNamesEveryKindInOrder holds the order of a load's
// errors, which the REST API's 422 details follow: each kind's own
// checks in the order of ResourceRules' lists, then the rules on a
// resource the load does not name, then the names taken by rules that
// stay. The registry walks the kinds; no kind is named in the load.
func TestLoadResourceRulesNamesEveryKindInOrder(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Name: "taken", Resource: "b", Threshold: 1})
	rules := ResourceRules{
		Resources:       []string{"a"},
		Flow:            []FlowRule{{Name: "f", Resource: "a", Threshold: -1}, {Name: "taken", Resource: "a", Threshold: 1}},
		CircuitBreakers: []CircuitBreakerRule{{Name: "c", Resource: "elsewhere", Strategy: StrategyErrorCount, Threshold: 1, RetryTimeoutMs: -1}},
		Hotspot:         []HotspotRule{{Name: "h", Resource: "a", Threshold: -1}},
		Authority:       []AuthorityRule{{Name: "x", Resource: "a"}},
		AdaptiveConcurrency: []AdaptiveConcurrencyRule{
			{Name: "ad", Resource: "a", Algorithm: "none"},
		},
		System: []SystemRule{{Name: "s", MetricType: SystemLoad, TriggerCount: -1}},
	}
	err := e.ValidateResourceRules(rules)
	invalid, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("got %v, want a *ValidationError", err)
	}
	var lists []string
	for _, fe := range invalid.Fields {
		list := fe.Field
		if i := strings.IndexAny(list, "[."); i >= 0 {
			list = list[:i]
		}
		if len(lists) == 0 || lists[len(lists)-1] != list {
			lists = append(lists, list)
		}
	}
	want := []string{"flow", "circuitBreakers", "hotspot", "authority", "adaptiveConcurrency", "system", "circuitBreakers", "flow"}
	if !slices.Equal(lists, want) {
		t.Errorf("the errors' lists run %v, want %v (all: %v)", lists, want, invalid.Fields)
	}
	last := invalid.Fields[len(invalid.Fields)-1]
	if last.Field != "flow[1].name" || last.Message != `"taken" is already the name of a rule of resource "b"` {
		t.Errorf("last error %v, want flow[1].name taken by the rule of b", last)
	}
}

// TestCheckResourceRulesNamesFieldsByRule: CheckResourceRules names a bad
// field of a rule by the rule's name and its own field, and a field of no
// rule as ValidateResourceRules does; a valid set has none.
func TestCheckResourceRulesNamesFieldsByRule(t *testing.T) {
	e, _ := newTestEngine(t, 0)
	if got := e.CheckResourceRules(ResourceRules{Resources: []string{"a"}, Flow: []FlowRule{{Name: "ok", Resource: "a", Threshold: 1}}}); got != nil {
		t.Fatalf("a valid set: %v, want nil", got)
	}
	got := e.CheckResourceRules(ResourceRules{Resources: []string{"a", ""}, Flow: []FlowRule{{Name: "ok", Resource: "a", Threshold: 1}, {Name: "f", Resource: "a", Threshold: -1}}})
	var ofSet, ofRule bool
	for _, fe := range got {
		ofSet = ofSet || fe.Rule == "" && fe.Field == "resources[1]"
		ofRule = ofRule || fe.Rule == "f" && fe.Field == "threshold"
		if fe.Rule == "ok" {
			t.Errorf("%v names the valid rule", fe)
		}
	}
	if !ofSet || !ofRule {
		t.Errorf("got %+v, want resources[1] of no rule and threshold of rule f", got)
	}
}

func TestRuleAtNamesTheRuleOfAField(t *testing.T) {
	rules := ResourceRules{
		Flow:                []FlowRule{{Name: "f0"}, {Name: "f1"}},
		AdaptiveConcurrency: []AdaptiveConcurrencyRule{{Name: "a0"}},
		System:              []SystemRule{{Name: "s0"}},
	}
	tests := []struct {
		field, name, ruleField string
		ok                     bool
	}{
		{"flow[1].threshold", "f1", "threshold", true},
		{"adaptiveConcurrency[0].resource", "a0", "resource", true},
		{"system[0].triggerCount", "s0", "triggerCount", true},
		{"flow[2].threshold", "", "", false},
		{"flow[-1].threshold", "", "", false},
		{"hotspot[0].resource", "", "", false},
		{"resources[0]", "", "", false},
		{"system", "", "", false},
	}
	for _, tt := range tests {
		name, ruleField, ok := rules.RuleAt(tt.field)
		if ok != tt.ok || name != tt.name || (ok && ruleField != tt.ruleField) {
			t.Errorf("RuleAt(%q) = %q, %q, %v; want %q, %q, %v", tt.field, name, ruleField, ok, tt.name, tt.ruleField, tt.ok)
		}
	}
}
