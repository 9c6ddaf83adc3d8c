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
	passesPerRealWindow(t, r, threshold, intervalMs, runFor)
}

// TestRacingBlocksNeverShareTheLastRoom: callers racing on a frozen clock
// at a contended resource whose rule is far enough above them for its
// passes to be numbered in blocks per core, until the window nears the
// threshold and they are numbered one at a time: never more than the
// threshold pass, no fewer than it less what the blocks of the lines can
// hold unused, and the statistics count exactly the passes, none of the
// numbers claimed unused.
func TestRacingBlocksNeverShareTheLastRoom(t *testing.T) {
	for _, threshold := range []int64{2_000, 10_000, 100_000} {
		for round := range 10 {
			e, clock := newTestEngine(t, 1_000_000)
			res := e.Resource("r")
			contend(t, res)
			clock.Advance(2 * minuteMs)
			if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: float64(threshold)}}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(3 * minuteMs) // the lines closed by the load open again
			claimed := res.passes().Load()
			got := racePasses(res, 2*threshold)
			// Each line's block holds under a block's numbers, and the room
			// for a block is a block of every line four times over.
			_, _, room := res.second.BlockSize(res.rules.Load().flow[0].passes.Slack(), 1000)
			if got > threshold || got < threshold-room {
				t.Fatalf("threshold %d, round %d: %d passes on a frozen clock, want %d less at most %d left in blocks",
					threshold, round, got, threshold, room)
			}
			if res.second.AheadMs() < clock.NowMs() {
				t.Fatalf("threshold %d: no block of numbers was claimed", threshold)
			}
			if counted := res.second.SumAll(clock.NowMs())[window.Pass]; counted != got {
				t.Fatalf("threshold %d, round %d: the statistics counted %d passes of %d (%d numbers claimed)",
					threshold, round, counted, got, res.passes().Load()-claimed)
			}
			if inFlight := res.Concurrency(); inFlight != 0 {
				t.Fatalf("threshold %d, round %d: %d calls in flight once all exited", threshold, round, inFlight)
			}
			e.Close()
		}
	}
}

// TestBlockNumbersCountOnceUsed: a contended resource's call that claims
// a block of numbers counts one pass and one call in flight, not the
// block; the block's numbers given up past its deadline never count.
func TestBlockNumbersCountOnceUsed(t *testing.T) {
	e, clock := newTestEngine(t, 1_000_000)
	res := e.Resource("r")
	contend(t, res)
	clock.Advance(2 * minuteMs)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: MaxThreshold}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * minuteMs)
	before := res.passes().Load()
	first, blk := res.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	if res.passes().Load()-before < 2 {
		t.Fatalf("the call claimed %d numbers, want a block", res.passes().Load()-before)
	}
	check := func(passes, inFlight int64) {
		t.Helper()
		if got := res.second.SumAll(clock.NowMs())[window.Pass]; got != passes {
			t.Fatalf("the second counts %d passes, want %d (%d numbers claimed)", got, passes, res.passes().Load()-before)
		}
		if got := res.Concurrency(); got != inFlight {
			t.Fatalf("%d calls in flight, want %d", got, inFlight)
		}
	}
	check(1, 1)
	second, blk := res.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	check(2, 2)
	first.Exit()
	second.Exit()
	check(2, 0)
	clock.Advance(2) // past the block's deadline: its numbers left are given up
	if !tryPass(res) {
		t.Fatal("blocked")
	}
	check(3, 0)
}

// TestBlockMarkedAtItsDeadline: a block of numbers claimed at t and used
// up at t+1 is marked at t+1 in the pass log, with its group, which it
// completes: a window that holds the threshold from t+1 on has room for
// none of its passes at t+1000, not for the passes of the group.
func TestBlockMarkedAtItsDeadline(t *testing.T) {
	const threshold = 2000 // groups of 20 passes, blocks of 4
	e, clock := newTestEngine(t, 1_000_000)
	res := e.Resource("r")
	contend(t, res)
	clock.Advance(2 * minuteMs)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: threshold}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * minuteMs)
	if size, _, _ := res.second.BlockSize(res.rules.Load().flow[0].passes.Slack(), 1000); size != 4 || res.passes().Load() != 0 {
		t.Fatalf("blocks of %d numbers from %d, want 4 from 0", size, res.passes().Load())
	}
	for range 18 { // the fifth block, 17 to 20, is claimed
		if !tryPass(res) {
			t.Fatal("blocked")
		}
	}
	if res.passes().Load() != 20 {
		t.Fatalf("%d numbers claimed, want 20", res.passes().Load())
	}
	clock.Advance(1)
	passed := 18
	for tryPass(res) {
		passed++
	}
	if passed != threshold {
		t.Fatalf("%d passes, want %d", passed, threshold)
	}
	// Passes 19 to 2000 happened at t+1: at t+1000, 18 may pass.
	clock.Advance(999)
	late := 0
	for tryPass(res) {
		late++
	}
	if late > 18 {
		t.Fatalf("%d passes at t+1000, when the window from t+1 holds %d", late, threshold-18)
	}
}

// TestExactPassAfterABlockMarkedNoEarlier: a call that numbers its pass
// exactly after another core's block, at the block's reading, is marked
// no earlier than the block's deadline, so that the log's marks never
// decrease in the order of the numbers. Core A claims numbers 1963 to
// 1966 at t and uses the last three at t+1; core B, near the threshold,
// numbers 1967 to 2000 at t, completing group 100 (groups of 20 passes).
// At t+1000 a call of 1000 must leave group 100 (k = 3000+1000-2000):
// marked t, the log would take it and every pass before it as out of the
// window, A's three at t+1 too, and let the call through, 2,003 passes
// in the window from t+1.
func TestExactPassAfterABlockMarkedNoEarlier(t *testing.T) {
	for attempt := range 20 {
		if exactAfterBlock(t) {
			return
		}
		t.Logf("attempt %d: the two goroutines shared a line", attempt)
	}
	t.Fatal("no two goroutines on different lines in 20 attempts")
}

// exactAfterBlock runs TestExactPassAfterABlockMarkedNoEarlier once; it
// reports false when its second goroutine took the first's line.
func exactAfterBlock(t *testing.T) bool {
	t.Helper()
	const threshold = 2000 // groups of 20 passes, blocks of 4
	e, clock := newTestEngine(t, 1_000_000)
	defer e.Close()
	res := e.Resource("r")
	contend(t, res)
	clock.Advance(2 * minuteMs)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: threshold}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * minuteMs)
	numbered := func(want int64) {
		t.Helper()
		if got := res.passes().Load(); got != want {
			t.Fatalf("%d numbers claimed, want %d", got, want)
		}
	}
	for range 1960 { // 490 blocks of 4
		if !tryPass(res) {
			t.Fatal("blocked")
		}
	}
	if en, blk := res.Entry(WithCount(2)); blk == nil {
		en.Exit()
	}
	numbered(1962)
	clock.Advance(500) // t: room for 38
	run := func(f func()) {
		done := make(chan struct{})
		go func() { f(); close(done) }()
		<-done
	}
	onA := make(chan func())
	defer close(onA)
	go func() {
		for f := range onA {
			f()
		}
	}()
	inA := func(f func()) {
		done := make(chan struct{})
		onA <- func() { f(); close(done) }
		<-done
	}
	inA(func() { tryPass(res) })
	numbered(1966)
	passedB := 0
	run(func() {
		for tryPass(res) {
			passedB++
		}
	})
	if passedB == 37 { // A's three numbers, then 34 exactly
		return false
	}
	numbered(2000)
	if passedB != 34 {
		t.Fatalf("B passed %d at t, want 34", passedB)
	}
	clock.Advance(1)
	inA(func() {
		for range 3 {
			if !tryPass(res) {
				t.Error("A's block refused a pass at t+1")
			}
		}
	})
	numbered(2000)
	// The first 1960 passes, marked at t-499 (their blocks' deadline),
	// are out of the window at t+501.
	clock.Advance(500)
	if en, blk := res.Entry(WithCount(1000)); blk == nil {
		en.Exit()
	} else {
		t.Fatal("1000 blocked at t+501")
	}
	clock.Advance(499)
	if en, blk := res.Entry(WithCount(1000)); blk == nil {
		en.Exit()
		t.Fatal("1000 passed at t+1000, 2,003 in the window from t+1")
	}
	return true
}

// TestContendedBlocksPerRealWindow is TestContendedPassesPerRealWindow at
// a threshold whose passes are numbered in blocks per core on the real
// clock: no threshold+1 passes all happened within less than an interval.
func TestContendedBlocksPerRealWindow(t *testing.T) {
	const threshold, intervalMs, runFor = 20_000, 1000, 2500 * time.Millisecond
	e := New(Options{})
	t.Cleanup(e.Close)
	r := e.Resource("r")
	contend(t, r)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "r", Threshold: threshold, StatIntervalMs: intervalMs}}); err != nil {
		t.Fatal(err)
	}
	base := passesPerRealWindow(t, r, threshold, intervalMs, runFor)
	if r.second.AheadMs() < base.UnixMilli() {
		t.Fatal("no block of numbers was claimed")
	}
}

// passesPerRealWindow has goroutines on every core call r for runFor on
// the real clock and fails t if threshold+1 of the passes all happened
// (between the call's start and its return) within less than intervalMs.
// It returns when the calls began.
func passesPerRealWindow(t *testing.T, r *Resource, threshold int, intervalMs int64, runFor time.Duration) time.Time {
	t.Helper()
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
	var longest time.Duration
	for _, p := range all {
		longest = max(longest, p.to-p.from)
	}
	window := time.Duration(intervalMs) * time.Millisecond
	end := 0 // the first pass that starts at or after the window's end
	for i, first := range all {
		for end < len(all) && all[end].from < first.from+window {
			end++
		}
		// Those that start in the window, less those that end after it:
		// they start less than the longest pass before its end.
		within := end - i
		for j := end - 1; j >= i && all[j].from >= first.from+window-longest; j-- {
			if all[j].to >= first.from+window {
				within--
			}
		}
		if within > threshold {
			t.Fatalf("%d passes within %v of %v, over the threshold %d", within, window, first.from, threshold)
		}
	}
	t.Logf("%d passes in %v, %.0f per window", len(all), runFor, float64(len(all))*float64(window)/float64(runFor))
	return base
}
