package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// simService is a service that serves capacity calls at once in baseMs
// each, and more by sharing itself: a call that starts with n in flight
// takes baseMs × max(1, n/capacity).
type simService struct {
	capacity int64
	baseMs   int64
}

func (s *simService) latencyMs(inFlight int64) int64 {
	return max(s.baseMs, s.baseMs*inFlight/s.capacity)
}

// simLoad drives a resource with clients calls in a closed loop on a
// manual clock: each client calls again as soon as its call completes,
// or retryMs after a block. Everything happens in whole milliseconds.
type simLoad struct {
	clock   *ManualClock
	res     *Resource
	svc     *simService
	retryMs int64
	nowMs   int64
	// due lists, by millisecond, the clients whose call ends or who try
	// again then; entries those clients' calls in flight.
	due     map[int64][]int
	entries []Entry
	blocks  int64
	lastBlk *BlockError
}

func newSimLoad(clock *ManualClock, res *Resource, svc *simService, clients int) *simLoad {
	l := &simLoad{clock: clock, res: res, svc: svc, retryMs: 10, nowMs: clock.NowMs(), due: map[int64][]int{}, entries: make([]Entry, clients)}
	for c := range clients {
		l.due[l.nowMs] = append(l.due[l.nowMs], c)
	}
	return l
}

// runUntil plays the load until untilMs, calling each after every
// simulated millisecond.
func (l *simLoad) runUntil(untilMs int64, each func(nowMs int64)) {
	for ; l.nowMs < untilMs; l.nowMs++ {
		l.clock.Set(l.nowMs)
		clients := l.due[l.nowMs]
		delete(l.due, l.nowMs)
		for _, c := range clients {
			if l.entries[c] != (Entry{}) {
				l.entries[c].Exit()
				l.entries[c] = Entry{}
			}
		}
		for _, c := range clients {
			en, blk := l.res.Entry()
			if blk != nil {
				l.blocks++
				l.lastBlk = blk
				l.due[l.nowMs+l.retryMs] = append(l.due[l.nowMs+l.retryMs], c)
				continue
			}
			l.entries[c] = en
			doneMs := l.nowMs + l.svc.latencyMs(l.res.Concurrency())
			l.due[doneMs] = append(l.due[doneMs], c)
		}
		if each != nil {
			each(l.nowMs)
		}
	}
}

// settledAfter plays the load for phaseMs and returns how long after the
// phase's start the limit entered, for good, the band of ±15% around
// want; -1 if it did not.
func settledAfter(t *testing.T, l *simLoad, phaseMs, want int64) int64 {
	t.Helper()
	startMs := l.nowMs
	settledMs := int64(-1)
	var trace []string
	l.runUntil(startMs+phaseMs, func(nowMs int64) {
		st, ok := l.res.AdaptiveLimit()
		if !ok {
			t.Fatal("no adaptive limit")
		}
		within := st.Limit*100 >= want*85 && st.Limit*100 <= want*115
		switch {
		case !within:
			settledMs = -1
		case settledMs < 0:
			settledMs = nowMs - startMs
		}
		if (nowMs-startMs)%1000 == 0 {
			trace = append(trace, fmt.Sprintf("%d:%d", (nowMs-startMs)/1000, st.Limit))
		}
	})
	t.Logf("capacity %d: limit by second %s; within ±15%% after %d ms", want, strings.Join(trace, " "), settledMs)
	return settledMs
}

// TestAdaptiveLimitFindsCapacity is the acceptance test of issue #34: a
// service of capacity N, whose latency rises past N calls in flight,
// under a closed-loop load of 3N clients. With its defaults, each
// algorithm's limit comes within ±15% of N from its initial 20 and stays
// there, follows the capacity down to N/2 and back up to N, each within
// the times docs/engine.md gives (measured: see the test's log).
func TestAdaptiveLimitFindsCapacity(t *testing.T) {
	const capacity, phaseMs = 100, 30_000
	for _, tc := range []struct {
		algorithm                 AdaptiveAlgorithm
		findMs, downMs, recoverMs int64
	}{
		{AdaptiveGradient2, 10_000, 3_000, 8_000},
		{AdaptiveAIMD, 12_000, 3_000, 8_000},
	} {
		t.Run(string(tc.algorithm), func(t *testing.T) {
			clock := NewManualClock(0)
			e := New(Options{Clock: clock})
			t.Cleanup(e.Close)
			rule := AdaptiveConcurrencyRule{Name: "adaptive", Resource: "svc", Algorithm: tc.algorithm}
			if err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{rule}); err != nil {
				t.Fatal(err)
			}
			svc := &simService{capacity: capacity, baseMs: 50}
			load := newSimLoad(clock, e.Resource("svc"), svc, 3*capacity)
			for _, phase := range []struct {
				capacity, withinMs int64
			}{{capacity, tc.findMs}, {capacity / 2, tc.downMs}, {capacity, tc.recoverMs}} {
				svc.capacity = phase.capacity
				if got := settledAfter(t, load, phaseMs, phase.capacity); got < 0 || got > phase.withinMs {
					t.Fatalf("capacity %d: limit within ±15%% for good after %d ms, want at most %d", phase.capacity, got, phase.withinMs)
				}
			}
			if load.lastBlk == nil || load.lastBlk.Reason() != ReasonAdaptive || load.lastBlk.Rule() != "adaptive" || load.lastBlk.Limit() < 85 {
				t.Fatalf("last block %+v, want reason adaptive of rule adaptive at the limit", load.lastBlk)
			}
		})
	}
}

// TestAdaptiveShadowLearnsWithoutBlocking: in shadow mode the rule learns
// and publishes its limit, counts the calls past it as shadow blocks,
// and blocks none.
func TestAdaptiveShadowLearnsWithoutBlocking(t *testing.T) {
	clock := NewManualClock(0)
	e := New(Options{Clock: clock})
	t.Cleanup(e.Close)
	rule := AdaptiveConcurrencyRule{Name: "watch", Resource: "svc", Mode: ModeShadow, InitialLimit: 100}
	if err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{rule}); err != nil {
		t.Fatal(err)
	}
	svc := &simService{capacity: 40, baseMs: 50}
	load := newSimLoad(clock, e.Resource("svc"), svc, 20)
	load.runUntil(5_000, nil)
	// Three times as many clients join: nothing holds them back.
	for c := range 100 {
		load.entries = append(load.entries, Entry{})
		load.due[load.nowMs] = append(load.due[load.nowMs], 20+c)
	}
	shadowBlocked := 0.0
	load.runUntil(10_000, func(int64) { shadowBlocked += e.Resource("svc").Live().ShadowBlockQps })
	st, _ := e.Resource("svc").AdaptiveLimit()
	if load.blocks != 0 || shadowBlocked == 0 {
		t.Fatalf("%d blocks and %v shadow blocks counted, want none and some", load.blocks, shadowBlocked)
	}
	if st.Limit >= 100 || st.LastChange.Cause != AdaptiveLatency || st.NoLoadRttMs != 50 || st.ShortRttMs != 150 {
		t.Fatalf("status %+v: want a limit brought down by latency, no-load latency about 50 ms", st)
	}
	if got := st.LastChange.Explain(); !strings.HasPrefix(got, "latency rose ") || !strings.Contains(got, "over its no-load level: limit ") {
		t.Fatalf("explanation %q", got)
	}
}

// TestAdaptiveModeChangeKeepsLimit: promoting a shadow rule to enforce
// (or changing its bounds) keeps the limit it learned, within the new
// bounds; a rule loaded again unchanged keeps its limiter; a rule of
// another algorithm starts again from its initial limit.
func TestAdaptiveModeChangeKeepsLimit(t *testing.T) {
	clock := NewManualClock(0)
	e := New(Options{Clock: clock})
	t.Cleanup(e.Close)
	rule := AdaptiveConcurrencyRule{Name: "a", Resource: "svc", Mode: ModeShadow}
	if err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{rule}); err != nil {
		t.Fatal(err)
	}
	svc := &simService{capacity: 60, baseMs: 50}
	load := newSimLoad(clock, e.Resource("svc"), svc, 50)
	load.runUntil(20_000, nil)
	learned, _ := e.Resource("svc").AdaptiveLimit()
	if learned.Limit <= DefaultAdaptiveInitialLimit {
		t.Fatalf("limit %d after 20 s of 50 clients, want it above the initial %d", learned.Limit, DefaultAdaptiveInitialLimit)
	}
	for _, tc := range []struct {
		change func(*AdaptiveConcurrencyRule)
		want   int64
	}{
		{func(r *AdaptiveConcurrencyRule) { r.Mode = ModeEnforce }, learned.Limit},
		{func(r *AdaptiveConcurrencyRule) {}, learned.Limit},
		{func(r *AdaptiveConcurrencyRule) { r.MaxLimit, r.InitialLimit = 30, 10 }, 30},
		{func(r *AdaptiveConcurrencyRule) { r.Algorithm = AdaptiveAIMD }, 10},
	} {
		tc.change(&rule)
		if err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{rule}); err != nil {
			t.Fatal(err)
		}
		if st, _ := e.Resource("svc").AdaptiveLimit(); st.Limit != tc.want || st.Mode != rule.WithDefaults().Mode {
			t.Fatalf("after loading %+v: status %+v, want limit %d", rule, st, tc.want)
		}
	}
}

// TestAdaptiveRuleValidation: the defaults, the cross-field check of the
// limits, the fields of the other algorithm, one rule per resource, and
// the rule among the others of LoadResourceRules.
func TestAdaptiveRuleValidation(t *testing.T) {
	got := AdaptiveConcurrencyRule{Resource: "r"}.WithDefaults()
	want := AdaptiveConcurrencyRule{Resource: "r", Mode: ModeEnforce, Algorithm: AdaptiveGradient2, InitialLimit: 20, MinLimit: 4,
		MaxLimit: 1000, Tolerance: 1.1, Smoothing: 0.2}
	if got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		rule  AdaptiveConcurrencyRule
		field string
	}{
		{AdaptiveConcurrencyRule{Resource: "r", MinLimit: 50, MaxLimit: 40}, "minLimit"},
		{AdaptiveConcurrencyRule{Resource: "r", MinLimit: 30}, "initialLimit"},
		{AdaptiveConcurrencyRule{Resource: "r", MaxLimit: 10}, "initialLimit"},
		{AdaptiveConcurrencyRule{Resource: "r", Tolerance: 0.9}, "tolerance"},
		{AdaptiveConcurrencyRule{Resource: "r", Algorithm: "vegas"}, "algorithm"},
		{AdaptiveConcurrencyRule{Resource: "r", Algorithm: AdaptiveAIMD, Smoothing: 0.5}, "smoothing"},
		{AdaptiveConcurrencyRule{Resource: "r", BackoffRatio: 0.8}, "backoffRatio"},
		{AdaptiveConcurrencyRule{Resource: "r", Algorithm: AdaptiveAIMD, BackoffRatio: 1}, "backoffRatio"},
		{AdaptiveConcurrencyRule{}, "resource"},
	} {
		errs := tc.rule.Validate()
		if len(errs) != 1 || errs[0].Field != tc.field {
			t.Errorf("%+v: errors %+v, want one of %s", tc.rule, errs, tc.field)
		}
	}
	e := New(Options{Clock: NewManualClock(0)})
	t.Cleanup(e.Close)
	err := e.LoadResourceRules(ResourceRules{Resources: []string{"r"},
		AdaptiveConcurrency: []AdaptiveConcurrencyRule{{Name: "a", Resource: "r"}, {Name: "b", Resource: "r"}}})
	var invalid *ValidationError
	if !errors.As(err, &invalid) || len(invalid.Fields) != 1 || invalid.Fields[0].Field != "adaptiveConcurrency[1].resource" {
		t.Fatalf("two rules on one resource: %v", err)
	}
	err = e.LoadResourceRules(ResourceRules{Resources: []string{"r"},
		Flow:                []FlowRule{{Name: "f", Resource: "r", Threshold: 100}},
		AdaptiveConcurrency: []AdaptiveConcurrencyRule{{Name: "a", Resource: "r", InitialLimit: 1, MinLimit: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	en, blk := e.Entry("r")
	if blk != nil || !en.NeedsExit() {
		t.Fatalf("first call: %v, needs exit %v; want a pass that needs its exit", blk, en.NeedsExit())
	}
	if _, blk := e.Entry("r"); blk == nil || blk.Reason() != ReasonAdaptive || blk.Limit() != 1 {
		t.Fatalf("second call in flight: %v, want blocked by the adaptive limit 1", blk)
	}
	en.Exit()
	if rules := e.AdaptiveConcurrencyRules(); len(rules) != 1 || rules[0].Name != "a" || len(e.FlowRules()) != 1 {
		t.Fatalf("rules %+v", rules)
	}
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"r"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Resource("r").AdaptiveLimit(); ok || len(e.AdaptiveLimits()) != 0 {
		t.Fatal("the rule is still in force after its resource's rules were replaced by none")
	}
}

// TestAdaptiveLimitInMinutes: each minute the engine hands out keeps the
// least, greatest and latest limit the rule held in it, and a delta
// merged after another keeps the later's latest.
func TestAdaptiveLimitInMinutes(t *testing.T) {
	clock := NewManualClock(0)
	e := New(Options{Clock: clock})
	t.Cleanup(e.Close)
	rule := AdaptiveConcurrencyRule{Name: "a", Resource: "svc", Algorithm: AdaptiveAIMD}
	if err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{rule}); err != nil {
		t.Fatal(err)
	}
	svc := &simService{capacity: 100, baseMs: 50}
	load := newSimLoad(clock, e.Resource("svc"), svc, 300)
	load.runUntil(30_000, nil)
	first := e.CollectMinutes()
	load.runUntil(60_000, nil)
	second := e.CollectMinutes()
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("minutes %+v then %+v, want one each", first, second)
	}
	a, b := first[0].Counts, second[0].Counts
	// AIMD climbs by one a span from 20: 20 to about 50 in the first
	// 3 s after the rule's first span, past 100 within the minute.
	if a.AdaptiveLimitMin != 20 || a.AdaptiveLimitMax < 100 || a.AdaptiveLimitLast < 90 {
		t.Fatalf("first half minute: limits %d/%d/%d", a.AdaptiveLimitMin, a.AdaptiveLimitMax, a.AdaptiveLimitLast)
	}
	st, _ := e.Resource("svc").AdaptiveLimit()
	if b.AdaptiveLimitMin != 20 || b.AdaptiveLimitLast != st.Limit {
		t.Fatalf("second collection: limits %d/%d/%d, want the minute's least 20 and the latest %d", b.AdaptiveLimitMin, b.AdaptiveLimitMax, b.AdaptiveLimitLast, st.Limit)
	}
	merged := a
	merged.Merge(Counts{Calls: Calls{Pass: 1}, AdaptiveLimitMin: 7, AdaptiveLimitMax: 9, AdaptiveLimitLast: 8})
	merged.Merge(Counts{Calls: Calls{Pass: 1}})
	if merged.AdaptiveLimitMin != 7 || merged.AdaptiveLimitMax != a.AdaptiveLimitMax || merged.AdaptiveLimitLast != 8 {
		t.Fatalf("merged limits %d/%d/%d", merged.AdaptiveLimitMin, merged.AdaptiveLimitMax, merged.AdaptiveLimitLast)
	}
}

// TestAdaptiveLearnsUnderConcurrentCalls: calls on both cores, on the
// real clock, learn and read the limit at once (run with -race); the
// limit stays within its bounds and the minute keeps it.
func TestAdaptiveLearnsUnderConcurrentCalls(t *testing.T) {
	e := New(Options{})
	t.Cleanup(e.Close)
	rule := AdaptiveConcurrencyRule{Name: "a", Resource: "svc", InitialLimit: 8, MinLimit: 2, MaxLimit: 64}
	if err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{rule}); err != nil {
		t.Fatal(err)
	}
	r := e.Resource("svc")
	deadline := time.Now().Add(400 * time.Millisecond)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				if en, blk := r.Entry(); blk == nil {
					en.Exit(WithRtMs(int64(1 + (i+g)%5)))
				}
				_ = e.AdaptiveLimits()
			}
		})
	}
	wg.Wait()
	st, _ := r.AdaptiveLimit()
	minutes := e.CollectMinutes()
	if st.Limit < 2 || st.Limit > 64 || len(minutes) == 0 || minutes[len(minutes)-1].Counts.AdaptiveLimitLast == 0 {
		t.Fatalf("status %+v, minutes %+v", st, minutes)
	}
}
