package engine

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// TestHotPathDoesNotAllocate: neither a pass, nor a block, nor Exit
// allocates, by name or by handle, whatever the rule.
func TestHotPathDoesNotAllocate(t *testing.T) {
	rules := []FlowRule{
		{Name: "qps", Resource: "qps", Threshold: 1e12},
		{Name: "blocked", Resource: "blocked", Threshold: 0},
		{Name: "paced", Resource: "paced", Threshold: 1e9, ControlBehavior: BehaviorThrottling, MaxQueueingTimeMs: 1000},
		{Name: "warm", Resource: "warm", Threshold: 1e9, TokenCalculateStrategy: StrategyWarmUp, WarmUpPeriodSec: 1},
		{Name: "conc", Resource: "conc", Metric: MetricConcurrency, Threshold: 10},
		{Name: "own", Resource: "own", Threshold: 1e12, StatIntervalMs: 5000},
		{Name: "shadow", Resource: "shadow", Threshold: 0, Mode: ModeShadow},
	}
	e, clock := newTestEngine(t, 0, rules...)
	err := e.LoadCircuitBreakerRules([]CircuitBreakerRule{
		{Resource: "qps", Strategy: StrategyErrorRatio, Threshold: 1, RetryTimeoutMs: 1000},
		{Resource: "blocked", Strategy: StrategySlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 1, RetryTimeoutMs: 1000},
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for _, rule := range rules {
		r := e.Resource(rule.Resource)
		t.Run(rule.Name, func(t *testing.T) {
			byName := testing.AllocsPerRun(1000, func() {
				clock.Advance(1)
				if en, blk := e.Entry(rule.Resource, WithNoWait(), WithCount(2), WithOrigin("app"), WithParam("user", "u1"), WithPrioritized()); blk == nil {
					en.Exit(WithError(boom))
				}
			})
			byHandle := testing.AllocsPerRun(1000, func() {
				clock.Advance(1)
				if en, blk := r.Entry(); blk == nil {
					en.Exit()
				}
			})
			if byName != 0 || byHandle != 0 {
				t.Fatalf("allocations per call: %v by name, %v by handle; want 0", byName, byHandle)
			}
		})
	}
}

// TestBlocksDoNotAllocate: a contended resource's passes numbered in
// blocks per core, taken from a block or claiming one, allocate nothing.
func TestBlocksDoNotAllocate(t *testing.T) {
	e, clock := newTestEngine(t, 0)
	r := e.Resource("r")
	contend(t, r)
	clock.Advance(2 * minuteMs)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: 1e12}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * minuteMs)
	before := r.passes().Load()
	calls := 0
	allocs := testing.AllocsPerRun(1000, func() {
		if calls++; calls%100 == 0 {
			clock.Advance(1)
		}
		if en, blk := r.Entry(); blk == nil {
			en.Exit()
		}
	})
	if allocs != 0 {
		t.Fatalf("allocations per call: %v; want 0", allocs)
	}
	if claimed := r.passes().Load() - before; claimed <= int64(calls) {
		t.Fatalf("%d numbers claimed for %d calls: no block", claimed, calls)
	}
}

// heapPerResource loads one rule on each of n resources, sends each some
// traffic, and returns the heap they take, per resource.
func heapPerResource(n int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	clock := NewManualClock(0)
	e := New(Options{Clock: clock})
	rules := make([]FlowRule, n)
	for i := range rules {
		rules[i] = FlowRule{Name: fmt.Sprintf("rule-%d", i), Resource: fmt.Sprintf("resource-%d", i), Threshold: 100}
	}
	if err := e.LoadFlowRules(rules); err != nil {
		panic(err)
	}
	for ms := range int64(3) {
		clock.Set(ms * 250)
		for i := range rules {
			if en, blk := e.Entry(rules[i].Resource); blk == nil {
				en.Exit()
			}
		}
	}
	rules = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestMemoryPerResource is docs/engine.md's memory figure: 10,000 resources with
// one rule and traffic each take 1,004 bytes of heap apiece, and the test
// fails 5% past it.
func TestMemoryPerResource(t *testing.T) {
	perResource := heapPerResource(10_000)
	t.Logf("heap per resource: %.0f bytes", perResource)
	if perResource > 1054 {
		t.Fatalf("heap per resource %.0f bytes, want <= 1054", perResource)
	}
}

// TestHotspotDoesNotAllocate: a pass and a block of a hotspot rule on a
// tracked value allocate nothing, whatever the rule.
func TestHotspotDoesNotAllocate(t *testing.T) {
	rules := []HotspotRule{
		{Name: "qps", Resource: "qps", ParamKey: "k", Threshold: 1e12},
		{Name: "blocked", Resource: "blocked", ParamKey: "k", Threshold: 0},
		{Name: "burst", Resource: "burst", ParamKey: "k", Threshold: 1e9, BurstCount: 10},
		{Name: "paced", Resource: "paced", ParamKey: "k", Threshold: 1e9, ControlBehavior: BehaviorThrottling, MaxQueueingTimeMs: 1000},
		{Name: "conc", Resource: "conc", ParamKey: "k", Metric: MetricConcurrency, Threshold: 10},
	}
	e, clock := newTestEngine(t, 0)
	if err := e.LoadHotspotRules(rules); err != nil {
		t.Fatal(err)
	}
	for _, rule := range rules {
		r := e.Resource(rule.Resource)
		tryPass(r, WithParam("k", "present"))
		t.Run(rule.Name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() {
				clock.Advance(1)
				if en, blk := r.Entry(WithParam("k", "present"), WithNoWait()); blk == nil {
					en.Exit()
				}
			})
			if allocs != 0 {
				t.Fatalf("allocations per call: %v; want 0", allocs)
			}
		})
	}
}

// TestOriginRulesDoNotAllocate: authority rules and flow rules with a
// limitApp allocate nothing on a pass or a block of a known origin.
func TestOriginRulesDoNotAllocate(t *testing.T) {
	e, clock := newTestEngine(t, 0,
		FlowRule{Resource: "app", Threshold: 1e12, LimitApp: "checkout"},
		FlowRule{Resource: "app", Threshold: 0, LimitApp: LimitAppOther},
	)
	err := e.LoadAuthorityRules([]AuthorityRule{{Resource: "app", Strategy: AuthorityDeny, Origins: []string{"crawler"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Resource("app")
	tryPass(r, WithOrigin("billing"))
	for _, origin := range []string{"checkout", "billing", "crawler", ""} {
		allocs := testing.AllocsPerRun(1000, func() {
			clock.Advance(1)
			if en, blk := r.Entry(WithOrigin(origin)); blk == nil {
				en.Exit()
			}
		})
		if allocs != 0 {
			t.Errorf("origin %q: allocations per call %v; want 0", origin, allocs)
		}
	}
}

// TestInboundDoesNotAllocate: an inbound call allocates nothing, on a
// pass or a block, with no system rule or with one of each metric.
func TestInboundDoesNotAllocate(t *testing.T) {
	tests := []struct {
		name  string
		rules []SystemRule
	}{
		{"no system rule", nil},
		{"inboundQps", []SystemRule{{MetricType: SystemInboundQPS, TriggerCount: 1e12}}},
		{"concurrency", []SystemRule{{MetricType: SystemConcurrency, TriggerCount: 1e12}}},
		{"avgRt", []SystemRule{{MetricType: SystemAvgRt, TriggerCount: 1e12}}},
		{"load", []SystemRule{{MetricType: SystemLoad, TriggerCount: 1e12}}},
		{"cpuUsage", []SystemRule{{MetricType: SystemCPUUsage, TriggerCount: 1}}},
		{"blocked", []SystemRule{{MetricType: SystemInboundQPS, TriggerCount: 1e-9}}},
		{"shadow", []SystemRule{{MetricType: SystemConcurrency, TriggerCount: 1e-9, Mode: ModeShadow}}},
		{"bbr past the trigger", []SystemRule{{MetricType: SystemLoad, TriggerCount: 1e-9, Strategy: SystemBBR}}},
	}
	root := newProcRoot(t)
	root.write(t, "proc/loadavg", "64.00 1.00 0.50 3/512 4242\n")
	boom := errors.New("boom")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, clock := newSystemEngine(t, root, 0, tt.rules...)
			r := e.Resource("api")
			allocs := testing.AllocsPerRun(1000, func() {
				clock.Advance(1)
				if en, blk := r.Entry(WithInbound()); blk == nil {
					en.Exit()
				}
				if en, blk := e.Entry("api", WithInbound(), WithCount(2), WithOrigin("app")); blk == nil {
					en.Exit(WithError(boom))
				}
			})
			if allocs != 0 {
				t.Fatalf("allocations per call: %v; want 0", allocs)
			}
		})
	}
}

// TestAdaptiveDoesNotAllocate: with an adaptive concurrency rule, in each
// mode, a pass, a block and Exit, which learns once per span, allocate
// nothing (a new limit, once per span at most, does).
func TestAdaptiveDoesNotAllocate(t *testing.T) {
	e, clock := newTestEngine(t, 0)
	err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{
		{Name: "learning", Resource: "learning"},
		{Name: "tight", Resource: "tight", InitialLimit: 1, MinLimit: 1, MaxLimit: 1},
		{Name: "shadow", Resource: "shadow", InitialLimit: 1, MinLimit: 1, MaxLimit: 1, Mode: ModeShadow},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"learning", "tight", "shadow"} {
		r := e.Resource(name)
		t.Run(name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() {
				clock.Advance(7)
				if en, blk := r.Entry(WithCount(2)); blk == nil {
					en.Exit()
				}
				if en, blk := r.Entry(); blk == nil {
					en.Exit(WithRtMs(3))
				}
			})
			if allocs != 0 {
				t.Fatalf("allocations per call: %v, want 0", allocs)
			}
		})
	}
}
