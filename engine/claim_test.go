package engine

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine/window"
)

// TestRacingCallsNeverShareTheLastRoom: callers racing on a frozen clock
// let exactly the threshold through. Deciding on the pass count and then
// adding to it let two calls both take the last room of a window (11 of
// 10 within a few hundred rounds); each call now claims its passes on the
// count its rules decided on.
func TestRacingCallsNeverShareTheLastRoom(t *testing.T) {
	for _, rule := range []FlowRule{
		{Resource: "r", Threshold: 10},
		{Resource: "r", Threshold: 150}, // a log that counts passes in groups
		{Resource: "r", Threshold: 10, TokenCalculateStrategy: StrategyWarmUp, WarmUpPeriodSec: 10},
	} {
		for round := range 300 {
			clock := NewManualClock(1_000_000)
			e := New(Options{Clock: clock})
			if err := e.LoadFlowRules([]FlowRule{rule}); err != nil {
				t.Fatal(err)
			}
			want := int64(rule.Threshold)
			if rule.TokenCalculateStrategy == StrategyWarmUp {
				want = int64(e.Resource("r").rules.Load().flow[0].warmUp().allowed(clock.NowMs()))
			}
			got := racePasses(e.Resource("r"), 2*int64(rule.Threshold))
			e.Close()
			if got != want {
				t.Fatalf("threshold %v (%s), round %d: %d passes on a frozen clock, want %d",
					rule.Threshold, rule.TokenCalculateStrategy, round, got, want)
			}
		}
	}
}

// racePasses makes calls on res from 8 goroutines let go at once, each
// passing call ended at once, and returns how many passed.
func racePasses(res *Resource, calls int64) int64 {
	var passed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			for range calls / 8 {
				if en, blk := res.Entry(); blk == nil {
					passed.Add(1)
					en.Exit()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	return passed.Load()
}

// TestContendedClaimsNeverShareTheLastRoom: callers racing on a frozen
// clock at a contended resource, whose statistics are striped while its
// pass numbering stays on the shared line, let exactly the threshold
// through, and the statistics count exactly those passes.
func TestContendedClaimsNeverShareTheLastRoom(t *testing.T) {
	for _, threshold := range []int64{150, 1000} {
		for round := range 40 {
			e, clock := newTestEngine(t, 1_000_000)
			res := e.Resource("r")
			contend(t, res)
			clock.Advance(2 * minuteMs)
			if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: float64(threshold)}}); err != nil {
				t.Fatal(err)
			}
			claimed := res.passes().Load()
			got := racePasses(res, 2*threshold)
			if got != threshold {
				t.Fatalf("threshold %d, round %d: %d passes on a frozen clock, want %d", threshold, round, got, threshold)
			}
			if counted := res.second.SumAll(clock.NowMs())[window.Pass]; counted != got {
				t.Fatalf("threshold %d, round %d: the statistics counted %d passes of %d (%d numbers claimed)",
					threshold, round, counted, got, res.passes().Load()-claimed)
			}
			e.Close()
		}
	}
}

// TestContendedPassesPerRealWindow: goroutines on every core hammer a
// contended resource on the real clock for a few windows. No real window
// of the rule's interval holds more than its threshold: no threshold+1
// passes all happened (between the call's start and its return) within
// less than an interval.
func TestContendedPassesPerRealWindow(t *testing.T) {
	const threshold, intervalMs, runFor = 200, 500, 2 * time.Second
	e := New(Options{})
	t.Cleanup(e.Close)
	r := e.Resource("r")
	contend(t, r)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: threshold, StatIntervalMs: intervalMs}}); err != nil {
		t.Fatal(err)
	}
	type pass struct{ from, to time.Duration }
	base := time.Now()
	goroutines := 2 * runtime.GOMAXPROCS(0)
	passes := make([][]pass, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for time.Since(base) < runFor {
				from := time.Since(base)
				en, blk := r.Entry()
				if blk == nil {
					en.Exit()
					passes[g] = append(passes[g], pass{from, time.Since(base)})
				}
			}
		})
	}
	wg.Wait()
	all := slices.Concat(passes...)
	slices.SortFunc(all, func(a, b pass) int { return cmp.Compare(a.from, b.from) })
	window := time.Duration(intervalMs) * time.Millisecond
	for i, first := range all {
		within := 0
		for _, p := range all[i:] {
			if p.from >= first.from+window {
				break
			}
			if p.to < first.from+window {
				within++
			}
		}
		if within > threshold {
			t.Fatalf("%d passes within %v of %v, over the threshold %d", within, window, first.from, threshold)
		}
	}
	t.Logf("%d passes in %v, %.0f per window", len(all), runFor, float64(len(all))*float64(window)/float64(runFor))
}
