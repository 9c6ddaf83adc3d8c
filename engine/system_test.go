package engine

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// newSystemEngine returns an engine on a manual clock at startMs that
// reads its process's figures under root, with rules loaded.
func newSystemEngine(t *testing.T, root procRoot, startMs int64, rules ...SystemRule) (*Engine, *ManualClock) {
	t.Helper()
	clock := NewManualClock(startMs)
	e := New(Options{Clock: clock, SystemRoot: string(root)})
	t.Cleanup(e.Close)
	if err := e.LoadSystemRules(rules); err != nil {
		t.Fatal(err)
	}
	return e, clock
}

// sampleNow reads the process's figures at once, as the engine does
// once a second while a system rule watches them.
func sampleNow(e *Engine) {
	e.loadMu.Lock()
	s := e.system.sampler
	e.loadMu.Unlock()
	s.sample()
}

// inbound enters an inbound call on r and returns it, failing the test
// if it is blocked.
func inbound(t *testing.T, r *Resource) Entry {
	t.Helper()
	en, blk := r.Entry(WithInbound())
	if blk != nil {
		t.Fatalf("an inbound call was blocked: %v", blk)
	}
	return en
}

// TestSystemRulesBlockInboundCallsPastTheTrigger: each metric blocks
// inbound calls, and only those, once its figure is past the trigger, with
// reason system and the rule's name; the blocks count as blocks.
func TestSystemRulesBlockInboundCallsPastTheTrigger(t *testing.T) {
	cpus := runtime.NumCPU()
	tests := []struct {
		name string
		rule SystemRule
		// past drives the figure past the trigger at 10,000 ms on.
		past func(t *testing.T, e *Engine, clock *ManualClock, root procRoot, r *Resource)
	}{
		{"inboundQps", SystemRule{MetricType: SystemInboundQPS, TriggerCount: 3},
			func(t *testing.T, _ *Engine, _ *ManualClock, _ procRoot, r *Resource) {
				for range 3 {
					inbound(t, r).Exit()
				}
			}},
		{"concurrency", SystemRule{MetricType: SystemConcurrency, TriggerCount: 2},
			func(t *testing.T, _ *Engine, _ *ManualClock, _ procRoot, r *Resource) {
				inbound(t, r)
				inbound(t, r)
			}},
		{"avgRt", SystemRule{MetricType: SystemAvgRt, TriggerCount: 100},
			func(t *testing.T, _ *Engine, _ *ManualClock, _ procRoot, r *Resource) {
				inbound(t, r).Exit(WithRtMs(90))
				inbound(t, r).Exit(WithRtMs(110))
				inbound(t, r).Exit(WithRtMs(101))
			}},
		{"load", SystemRule{MetricType: SystemLoad, TriggerCount: 1.5, Strategy: SystemNoAdaptive},
			func(t *testing.T, e *Engine, clock *ManualClock, root procRoot, _ *Resource) {
				root.write(t, "proc/loadavg", fmt.Sprintf("%d.01 1.00 0.50 3/512 4242\n", 2*cpus))
				clock.Advance(1000)
				sampleNow(e)
			}},
		{"cpuUsage", SystemRule{MetricType: SystemCPUUsage, TriggerCount: 0.5, Strategy: SystemNoAdaptive},
			func(t *testing.T, e *Engine, clock *ManualClock, root procRoot, _ *Resource) {
				root.cpuTicks(t, 130, 30) // 0.6 s in two: 60% of half a CPU
				clock.Advance(1000)
				sampleNow(e)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newProcRoot(t)
			root.write(t, "sys/fs/cgroup/cpu.max", "50000 100000\n")
			root.cpuTicks(t, 100, 0)
			root.write(t, "proc/loadavg", fmt.Sprintf("%d.00 1.00 0.50 3/512 4242\n", cpus))
			tt.rule.Name = "guard"
			e, clock := newSystemEngine(t, root, 10_000, tt.rule)
			r := e.Resource("GET:/orders")
			if en, blk := r.Entry(WithInbound()); blk != nil {
				t.Fatalf("before the trigger: %v", blk)
			} else {
				en.Exit()
			}
			clock.Advance(1000)
			tt.past(t, e, clock, root, r)
			_, blk := r.Entry(WithInbound())
			if blk == nil || blk.Reason() != ReasonSystem || blk.Rule() != "guard" {
				t.Fatalf("past the trigger: %v, want blocked by system rule guard", blk)
			}
			if _, blk := e.Entry("other", WithInbound(), WithOrigin("app")); blk == nil {
				t.Fatal("an inbound call on another resource passed")
			}
			if !tryPass(r) || !tryPass(e.Resource("outbound")) {
				t.Fatal("a call not marked inbound was blocked")
			}
			if live := r.Live(); live.BlockQps != 1 {
				t.Fatalf("block qps %v, want 1", live.BlockQps)
			}
		})
	}
}

// TestSystemBBR: past a cpuUsage trigger, bbr admits inbound calls while
// those in flight are at most the most completions per second times the
// least response time (here 60/s × 40 ms = 2.4), or at most one; noAdaptive
// blocks them all.
func TestSystemBBR(t *testing.T) {
	for _, strategy := range []SystemStrategy{SystemBBR, SystemNoAdaptive} {
		t.Run(string(strategy), func(t *testing.T) {
			root := newProcRoot(t)
			root.write(t, "sys/fs/cgroup/cpu.max", "50000 100000\n")
			root.cpuTicks(t, 0, 0)
			e, clock := newSystemEngine(t, root, 10_000,
				SystemRule{Name: "cpu", MetricType: SystemCPUUsage, TriggerCount: 0.5, Strategy: strategy})
			r := e.Resource("api")
			// Five calls of 40 ms and one of 60 ms complete in the first
			// 100 ms bucket; the CPU is idle.
			var done []Entry
			for range 5 {
				done = append(done, inbound(t, r))
			}
			slow := inbound(t, r)
			clock.Advance(40)
			for _, en := range done {
				en.Exit()
			}
			clock.Advance(20)
			slow.Exit()
			// The CPU is busy: 0.45 s in half a second is 180% of half a CPU.
			root.cpuTicks(t, 45, 0)
			clock.Set(10_500)
			sampleNow(e)
			admitted := 0
			var held []Entry
			for range 5 {
				en, blk := r.Entry(WithInbound())
				if blk != nil {
					if blk.Reason() != ReasonSystem || blk.Rule() != "cpu" {
						t.Fatalf("blocked by %v, want system rule cpu", blk)
					}
					break
				}
				admitted++
				held = append(held, en)
			}
			want := 3 // in flight before each: 0, 1, 2 ≤ 60/s × 40 ms
			if strategy == SystemNoAdaptive {
				want = 0
			}
			if admitted != want {
				t.Fatalf("%d calls admitted past the trigger, want %d", admitted, want)
			}
			if strategy == SystemBBR {
				held[0].Exit(WithRtMs(50))
				if _, blk := r.Entry(WithInbound()); blk != nil {
					t.Fatalf("a call was blocked with 2 in flight: %v", blk)
				}
			}
			if !tryPass(r) {
				t.Fatal("a call not marked inbound was blocked")
			}
		})
	}
}

// TestSystemShadowRulePasses: a shadow system rule lets the calls it would
// block pass and counts them as shadow blocks.
func TestSystemShadowRulePasses(t *testing.T) {
	e, _ := newSystemEngine(t, newProcRoot(t), 10_000,
		SystemRule{Name: "one", Mode: ModeShadow, MetricType: SystemConcurrency, TriggerCount: 1})
	r := e.Resource("api")
	inbound(t, r)
	inbound(t, r)
	inbound(t, r)
	if live := r.Live(); live.PassQps != 3 || live.ShadowBlockQps != 2 || live.BlockQps != 0 {
		t.Fatalf("live %+v, want 3 passes, 2 of them shadow blocks", live)
	}
}

// TestSystemRulesExpire: a system rule stops applying at its expiresAtMs
// without a load, and stays listed.
func TestSystemRulesExpire(t *testing.T) {
	e, clock := newSystemEngine(t, newProcRoot(t), 10_000,
		SystemRule{Name: "none", MetricType: SystemConcurrency, TriggerCount: 1, ExpiresAtMs: 12_000},
		SystemRule{Name: "later", MetricType: SystemInboundQPS, TriggerCount: 1, ExpiresAtMs: 20_000})
	r := e.Resource("api")
	held := inbound(t, r)
	clock.Set(11_999)
	if _, blk := r.Entry(WithInbound()); blk == nil || blk.Rule() != "none" {
		t.Fatalf("before expiry: %v, want blocked by none", blk)
	}
	clock.Set(12_000)
	inbound(t, r).Exit()
	if _, blk := r.Entry(WithInbound()); blk == nil || blk.Rule() != "later" {
		t.Fatalf("at 12000: %v, want blocked by later", blk)
	}
	clock.Set(20_000)
	inbound(t, r).Exit()
	inbound(t, r).Exit()
	held.Exit()
	if got := len(e.SystemRules()); got != 2 {
		t.Fatalf("%d rules listed, want the 2 expired", got)
	}
}

// TestSystemSamplerRunsOnlyForSampledFigures: no sampler goroutine runs
// until a rule watches load or cpuUsage; loading none stops it, and so
// does Close, after which no load starts it.
func TestSystemSamplerRunsOnlyForSampledFigures(t *testing.T) {
	e, _ := newSystemEngine(t, newProcRoot(t), 0, SystemRule{MetricType: SystemConcurrency, TriggerCount: 10})
	running := func() bool {
		e.loadMu.Lock()
		defer e.loadMu.Unlock()
		s := e.system.sampler
		if s == nil {
			return false
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.stop != nil
	}
	steps := []struct {
		rules []SystemRule
		want  bool
	}{
		{[]SystemRule{{MetricType: SystemAvgRt, TriggerCount: 10}}, false},
		{[]SystemRule{{MetricType: SystemLoad, TriggerCount: 2}}, true},
		{[]SystemRule{{MetricType: SystemCPUUsage, TriggerCount: 0.9}, {MetricType: SystemLoad, TriggerCount: 2}}, true},
		{[]SystemRule{{MetricType: SystemInboundQPS, TriggerCount: 10}}, false},
		{nil, false},
		{[]SystemRule{{MetricType: SystemCPUUsage, TriggerCount: 0.9}}, true},
	}
	for i, step := range steps {
		if err := e.LoadSystemRules(step.rules); err != nil {
			t.Fatal(err)
		}
		if got := running(); got != step.want {
			t.Fatalf("step %d: sampling %v, want %v", i, got, step.want)
		}
	}
	e.Close()
	if running() {
		t.Fatal("sampling after Close")
	}
	if err := e.LoadSystemRules([]SystemRule{{MetricType: SystemLoad, TriggerCount: 2}}); err != nil {
		t.Fatal(err)
	}
	if running() {
		t.Fatal("a load after Close started sampling")
	}
}

// TestSystemRuleFieldValidation: bad fields are named; defaults fill the
// mode and the strategy (bbr for the sampled figures).
func TestSystemRuleFieldValidation(t *testing.T) {
	tests := []struct {
		name string
		rule SystemRule
		want []FieldError
	}{
		{"zero trigger", SystemRule{MetricType: SystemLoad, TriggerCount: 0},
			[]FieldError{{"rules[0].triggerCount", "must be > 0"}}},
		{"negative trigger", SystemRule{MetricType: SystemConcurrency, TriggerCount: -3},
			[]FieldError{{"rules[0].triggerCount", "must be > 0"}}},
		{"cpuUsage over 1", SystemRule{MetricType: SystemCPUUsage, TriggerCount: 1.2},
			[]FieldError{{"rules[0].triggerCount", "must be at most 1 for metricType cpuUsage: a ratio of the CPU quota"}}},
		{"unknown strategy", SystemRule{MetricType: SystemLoad, TriggerCount: 2, Strategy: "fast"},
			[]FieldError{{"rules[0].strategy", "must be one of noAdaptive, bbr"}}},
		{"bbr on a counted figure", SystemRule{MetricType: SystemAvgRt, TriggerCount: 2, Strategy: SystemBBR},
			[]FieldError{{"rules[0].strategy", "bbr applies only to metricType load and cpuUsage"}}},
		{"no metric", SystemRule{TriggerCount: 2},
			[]FieldError{{"rules[0].metricType", "is required: one of load, avgRt, concurrency, inboundQps, cpuUsage"}}},
		{"unknown metric", SystemRule{MetricType: "memory", TriggerCount: 2},
			[]FieldError{{"rules[0].metricType", "must be one of load, avgRt, concurrency, inboundQps, cpuUsage"}}},
		{"bad mode and name", SystemRule{Name: "Bad Name", Mode: "loud", MetricType: SystemLoad, TriggerCount: 2},
			[]FieldError{{"rules[0].name", "must be 1-128 characters of a-z, 0-9, '.', '_' or '-', starting and ending with a letter or digit"},
				{"rules[0].mode", "must be one of enforce, shadow"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateSystemRules([]SystemRule{tt.rule})
			var invalid *ValidationError
			if !errors.As(err, &invalid) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			if !reflect.DeepEqual(invalid.Fields, tt.want) {
				t.Fatalf("got %v, want %v", invalid.Fields, tt.want)
			}
		})
	}
	for _, f := range []string{"metricType", "triggerCount", "strategy"} {
		if _, ok := SystemRuleFields.Lookup(f); !ok {
			t.Fatalf("the field table has no %s", f)
		}
	}
	e, _ := newSystemEngine(t, newProcRoot(t), 0,
		SystemRule{Name: "cpu", MetricType: SystemCPUUsage, TriggerCount: 0.8},
		SystemRule{Name: "qps", MetricType: SystemInboundQPS, TriggerCount: 1000, Mode: ModeShadow})
	want := []SystemRule{
		{Name: "cpu", Mode: ModeEnforce, MetricType: SystemCPUUsage, TriggerCount: 0.8, Strategy: SystemBBR},
		{Name: "qps", Mode: ModeShadow, MetricType: SystemInboundQPS, TriggerCount: 1000, Strategy: SystemNoAdaptive},
	}
	if got := e.SystemRules(); !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %+v, want %+v", got, want)
	}
	err := e.LoadSystemRules([]SystemRule{{Name: "cpu", MetricType: SystemLoad, TriggerCount: 1}, {Name: "cpu", MetricType: SystemLoad, TriggerCount: 2}})
	if err == nil || !reflect.DeepEqual(e.SystemRules(), want) {
		t.Fatalf("a set with a name twice: %v, rules now %+v; want an error and the rules unchanged", err, e.SystemRules())
	}
}

// TestSystemRulesLoadWithResourceRules: LoadResourceRules replaces the
// system rules only with ReplaceSystem, names their bad fields as
// system[i], and leaves them otherwise.
func TestSystemRulesLoadWithResourceRules(t *testing.T) {
	e, _ := newSystemEngine(t, newProcRoot(t), 0, SystemRule{Name: "conc", MetricType: SystemConcurrency, TriggerCount: 1})
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"a"}, Flow: []FlowRule{{Resource: "a", Threshold: 5}}}); err != nil {
		t.Fatal(err)
	}
	if len(e.SystemRules()) != 1 {
		t.Fatal("a load without ReplaceSystem dropped the system rules")
	}
	err := e.LoadResourceRules(ResourceRules{System: []SystemRule{{MetricType: SystemLoad, TriggerCount: 1}}})
	var invalid *ValidationError
	if !errors.As(err, &invalid) || invalid.Fields[0].Field != "system" {
		t.Fatalf("system rules without ReplaceSystem: %v, want an error naming system", err)
	}
	err = e.LoadResourceRules(ResourceRules{ReplaceSystem: true, System: []SystemRule{{MetricType: SystemLoad}}})
	if !errors.As(err, &invalid) || invalid.Fields[0].Field != "system[0].triggerCount" {
		t.Fatalf("a bad system rule: %v, want an error naming system[0].triggerCount", err)
	}
	if err := e.LoadResourceRules(ResourceRules{ReplaceSystem: true}); err != nil || len(e.SystemRules()) != 0 {
		t.Fatalf("ReplaceSystem with none: %v, %d rules left; want none", err, len(e.SystemRules()))
	}
	r := e.Resource("a")
	inbound(t, r)
	inbound(t, r)
}
