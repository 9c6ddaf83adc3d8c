package engine

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

var errBoom = errors.New("boom")

// breakerHarness is an engine on a manual clock with breakers loaded and
// their state changes recorded.
type breakerHarness struct {
	t       *testing.T
	eng     *Engine
	clock   *ManualClock
	res     *Resource
	mu      sync.Mutex
	changes []string
}

func newBreakerHarness(t *testing.T, rules ...CircuitBreakerRule) *breakerHarness {
	t.Helper()
	h := &breakerHarness{t: t, clock: NewManualClock(10_000)}
	h.eng = New(Options{Clock: h.clock, OnBreakerStateChange: func(c BreakerStateChange) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.changes = append(h.changes, string(c.From)+">"+string(c.To))
	}})
	t.Cleanup(h.eng.Close)
	if err := h.eng.LoadCircuitBreakerRules(rules); err != nil {
		t.Fatal(err)
	}
	h.res = h.eng.Resource(rules[0].Resource)
	return h
}

// call makes one call that takes rtMs and fails with err; it reports
// whether the call was let through.
func (h *breakerHarness) call(rtMs int64, err error) bool {
	e, blk := h.res.Entry()
	if blk != nil {
		if blk.Reason() != ReasonCircuitBreaker {
			h.t.Fatalf("blocked for %s, want circuitBreaker", blk.Reason())
		}
		return false
	}
	e.Exit(WithRtMs(rtMs), WithError(err))
	return true
}

func (h *breakerHarness) state() BreakerState { return h.eng.Breakers()[0].State }

func (h *breakerHarness) wantState(want BreakerState) {
	h.t.Helper()
	if got := h.state(); got != want {
		h.t.Fatalf("state %s, want %s", got, want)
	}
}

func (h *breakerHarness) wantChanges(want ...string) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.changes, want) {
		h.t.Fatalf("state changes %v, want %v", h.changes, want)
	}
}

func TestBreakerErrorCount(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Name: "pay-errors", Resource: "pay", Strategy: StrategyErrorCount,
		Threshold: 3, MinRequestAmount: 5, RetryTimeoutMs: 5000,
	})
	for range 4 {
		h.call(1, errBoom)
	}
	h.wantState(BreakerClosed) // 4 errors, but fewer than 5 calls
	h.call(1, nil)
	h.wantState(BreakerOpen) // 5 calls, 4 errors >= 3
	_, blk := h.res.Entry()
	if blk == nil || blk.Rule() != "pay-errors" || blk.Reason() != ReasonCircuitBreaker {
		t.Fatalf("entry while open: %v, want blocked by pay-errors", blk)
	}
	h.clock.Advance(4999)
	if h.call(1, nil) {
		t.Fatal("a call passed 1 ms before retryTimeoutMs")
	}
	h.clock.Advance(1)
	if !h.call(1, nil) {
		t.Fatal("the probe was blocked after retryTimeoutMs")
	}
	h.wantState(BreakerClosed)
	h.wantChanges("closed>open", "open>halfOpen", "halfOpen>closed")
	// Closing starts a fresh window: the old errors do not trip it again.
	h.call(1, errBoom)
	h.wantState(BreakerClosed)
}

func TestBreakerErrorRatio(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Resource: "pay", Strategy: StrategyErrorRatio, Threshold: 0.5, MinRequestAmount: 4, RetryTimeoutMs: 1000,
	})
	h.call(1, errBoom)
	h.call(1, errBoom)
	h.call(1, nil)
	h.call(1, nil)
	h.wantState(BreakerClosed) // 2 of 4 = 0.5, not above it
	h.call(1, errBoom)
	h.wantState(BreakerOpen) // 3 of 5 = 0.6
}

func TestBreakerSlowRequestRatio(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Resource: "pay", Strategy: StrategySlowRequestRatio, Threshold: 0.4, MaxAllowedRtMs: 100,
		MinRequestAmount: 5, RetryTimeoutMs: 1000,
	})
	for _, rt := range []int64{100, 100, 101, 5, 250} { // 2 of 5 slow: 0.4
		h.call(rt, nil)
	}
	h.wantState(BreakerClosed)
	h.call(101, errBoom) // errors do not count for this strategy; slowness does
	h.wantState(BreakerOpen)
	status := h.eng.Breakers()[0]
	if status.Total != 6 || status.Slow != 3 || status.Errors != 1 {
		t.Fatalf("status = %+v, want 6 total, 3 slow, 1 error", status)
	}
	// A slow probe opens it again, with a new retry timeout.
	h.clock.Advance(1000)
	if !h.call(500, nil) {
		t.Fatal("probe blocked")
	}
	h.wantState(BreakerOpen)
	h.clock.Advance(999)
	if h.call(1, nil) {
		t.Fatal("passed before the new retry timeout")
	}
	h.clock.Advance(1)
	if !h.call(1, nil) {
		t.Fatal("probe blocked after the new retry timeout")
	}
	h.wantState(BreakerClosed)
	h.wantChanges("closed>open", "open>halfOpen", "halfOpen>open", "open>halfOpen", "halfOpen>closed")
}

func TestBreakerWindowForgetsOldFailures(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Resource: "pay", Strategy: StrategyErrorCount, Threshold: 3, MinRequestAmount: 1,
		RetryTimeoutMs: 1000, StatIntervalMs: 2000,
	})
	h.call(1, errBoom)
	h.call(1, errBoom)
	h.clock.Advance(2000)
	h.call(1, errBoom)
	h.wantState(BreakerClosed) // the first two are out of the 2 s window
	h.call(1, errBoom)
	h.call(1, errBoom)
	h.wantState(BreakerOpen)
}

func TestBreakerProbesRace(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1,
		RetryTimeoutMs: 1000, ProbeNum: 3,
	})
	h.call(1, errBoom)
	h.wantState(BreakerOpen)
	h.clock.Advance(1000)
	var passed atomic.Int64
	var probes sync.Mutex
	var held []Entry
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if e, blk := h.res.Entry(); blk == nil {
					passed.Add(1)
					probes.Lock()
					held = append(held, e)
					probes.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if passed.Load() != 3 {
		t.Fatalf("%d calls passed half-open, want exactly probeNum = 3", passed.Load())
	}
	h.wantState(BreakerHalfOpen)
	held[0].Exit()
	held[1].Exit()
	h.wantState(BreakerHalfOpen) // 2 of 3 probes succeeded
	held[2].Exit()
	h.wantState(BreakerClosed)
}

func TestBreakerReleasedProbeFreesItsSlot(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 1000,
	})
	h.call(1, errBoom)
	h.clock.Advance(1000)
	probe, blk := h.res.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	if !probe.NeedsExit() || probe.CountsInFlight() {
		t.Fatalf("a probe: NeedsExit %v, CountsInFlight %v; want true, false", probe.NeedsExit(), probe.CountsInFlight())
	}
	if _, blk := h.res.Entry(); blk == nil {
		t.Fatal("a second call passed with the only probe in flight")
	}
	probe.Release()
	if !h.call(1, nil) {
		t.Fatal("no probe could pass after the first was released")
	}
	h.wantState(BreakerClosed)
}

// TestBreakerProbeExitedWithCompleteCount: a probe's outcome may arrive in
// another portion than its calls passed in; it still decides the breaker
// and every call of the probe leaves flight.
func TestBreakerProbeExitedWithCompleteCount(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 1000,
	})
	h.call(1, errBoom)
	h.clock.Advance(1000)
	probe, blk := h.res.Entry(WithCount(3))
	if blk != nil {
		t.Fatal(blk)
	}
	probe.Exit(WithCompleteCount(2), WithRtMs(30), WithError(errBoom), WithCompleteCount(0))
	h.wantState(BreakerOpen)
	h.wantChanges("closed>open", "open>halfOpen", "halfOpen>open")
	if got, want := h.res.Live(), (LiveStats{PassQps: 3, CompleteQps: 2, ErrorQps: 2, AvgRtMs: 30}); got != want {
		t.Fatalf("live = %+v, want %+v", got, want)
	}
}

func TestBreakerProbeGivenBackWhenAnotherBlocks(t *testing.T) {
	h := newBreakerHarness(t,
		CircuitBreakerRule{Name: "a", Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 1000},
		CircuitBreakerRule{Name: "b", Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 5000},
	)
	h.call(1, errBoom) // opens both
	h.clock.Advance(1000)
	// a lets a probe through, b is still open and blocks the call: a must
	// get its probe back, or it would wait for an outcome forever.
	if _, blk := h.res.Entry(); blk == nil || blk.Rule() != "b" {
		t.Fatalf("block = %v, want b", blk)
	}
	h.clock.Advance(4000)
	if !h.call(1, nil) {
		t.Fatal("the probe of both was blocked")
	}
	for _, s := range h.eng.Breakers() {
		if s.State != BreakerClosed {
			t.Fatalf("%s is %s after a successful probe, want closed", s.Rule, s.State)
		}
	}
}

func TestBreakerReloadKeepsUnchangedState(t *testing.T) {
	rule := CircuitBreakerRule{Name: "pay", Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 1000}
	h := newBreakerHarness(t, rule)
	h.call(1, errBoom)
	h.wantState(BreakerOpen)
	other := CircuitBreakerRule{Resource: "ship", Strategy: StrategyErrorRatio, Threshold: 0.5, RetryTimeoutMs: 10}
	if err := h.eng.LoadCircuitBreakerRules([]CircuitBreakerRule{other, rule}); err != nil {
		t.Fatal(err)
	}
	if h.call(1, nil) {
		t.Fatal("an unchanged breaker forgot it was open on reload")
	}
	rule.RetryTimeoutMs = 2000
	if err := h.eng.LoadCircuitBreakerRules([]CircuitBreakerRule{rule}); err != nil {
		t.Fatal(err)
	}
	if !h.call(1, nil) {
		t.Fatal("a changed breaker is a new breaker, closed")
	}
	if err := h.eng.LoadCircuitBreakerRules(nil); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if !h.call(1, errBoom) {
			t.Fatal("blocked with no breaker loaded")
		}
	}
}

func TestBreakerShadowMode(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{
		Resource: "pay", Mode: ModeShadow, Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 1000,
	})
	h.call(1, errBoom)
	h.wantState(BreakerOpen)
	for range 3 {
		if !h.call(1, nil) {
			t.Fatal("a shadow breaker blocked")
		}
	}
	if got := h.res.Live().ShadowBlockQps; got != 3 {
		t.Fatalf("shadowBlock %v, want 3", got)
	}
}

func TestBreakerWithFlowRule(t *testing.T) {
	h := newBreakerHarness(t, CircuitBreakerRule{Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 1000})
	if err := h.eng.LoadFlowRules([]FlowRule{{Name: "cap", Resource: "pay", Threshold: 2}}); err != nil {
		t.Fatal(err)
	}
	h.call(1, nil)
	h.call(1, nil)
	if _, blk := h.res.Entry(); blk == nil || blk.Reason() != ReasonFlow {
		t.Fatalf("third call: %v, want blocked by the flow rule", blk)
	}
	if got := h.eng.Breakers(); len(got) != 1 {
		t.Fatalf("loading flow rules dropped the breakers: %v", got)
	}
	h.res.RecordComplete(1, 10, true) // an outcome reported later trips it
	h.wantState(BreakerOpen)
}

func TestCircuitBreakerRuleValidate(t *testing.T) {
	valid := CircuitBreakerRule{Name: "pay-errors", Resource: "pay", Strategy: StrategyErrorRatio, Threshold: 0.5, RetryTimeoutMs: 1000}
	tests := []struct {
		name   string
		edit   func(*CircuitBreakerRule)
		fields []string
	}{
		{"valid", func(r *CircuitBreakerRule) {}, nil},
		{"no strategy", func(r *CircuitBreakerRule) { r.Strategy = "" }, []string{"strategy"}},
		{"unknown strategy", func(r *CircuitBreakerRule) { r.Strategy = "latency" }, []string{"strategy"}},
		{"ratio above 1", func(r *CircuitBreakerRule) { r.Threshold = 1.5 }, []string{"threshold"}},
		{"ratio below 0", func(r *CircuitBreakerRule) { r.Threshold = -0.1 }, []string{"threshold"}},
		{"count of 0", func(r *CircuitBreakerRule) { r.Strategy = StrategyErrorCount; r.Threshold = 0 }, []string{"threshold"}},
		{"fractional count", func(r *CircuitBreakerRule) { r.Strategy = StrategyErrorCount; r.Threshold = 2.5 }, []string{"threshold"}},
		{"count", func(r *CircuitBreakerRule) { r.Strategy = StrategyErrorCount; r.Threshold = 10 }, nil},
		{"slow without max rt", func(r *CircuitBreakerRule) { r.Strategy = StrategySlowRequestRatio }, []string{"maxAllowedRtMs"}},
		{"slow", func(r *CircuitBreakerRule) { r.Strategy = StrategySlowRequestRatio; r.MaxAllowedRtMs = 200 }, nil},
		{"max rt on error ratio", func(r *CircuitBreakerRule) { r.MaxAllowedRtMs = 200 }, []string{"maxAllowedRtMs"}},
		{"no retry timeout", func(r *CircuitBreakerRule) { r.RetryTimeoutMs = 0 }, []string{"retryTimeoutMs"}},
		{"min request 0 is the default", func(r *CircuitBreakerRule) { r.MinRequestAmount = 0 }, nil},
		{"negative min request", func(r *CircuitBreakerRule) { r.MinRequestAmount = -1 }, []string{"minRequestAmount"}},
		{"interval 999", func(r *CircuitBreakerRule) { r.StatIntervalMs = 999 }, []string{"statIntervalMs"}},
		{"interval 600001", func(r *CircuitBreakerRule) { r.StatIntervalMs = 600_001 }, []string{"statIntervalMs"}},
		{"negative probes", func(r *CircuitBreakerRule) { r.ProbeNum = -1 }, []string{"probeNum"}},
		{"bad envelope", func(r *CircuitBreakerRule) { r.Name = "Pay"; r.Resource = ""; r.Mode = "x" }, []string{"name", "resource", "mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := valid
			tt.edit(&rule)
			var fields []string
			for _, fe := range rule.Validate() {
				fields = append(fields, fe.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tt.fields, ",") {
				t.Fatalf("Validate() fields = %v, want %v", fields, tt.fields)
			}
		})
	}
}
