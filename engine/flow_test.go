package engine

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRejectAccuracy is docs/engine.md's accuracy figure on the manual clock: two
// goroutines hammer a 100 QPS rule for 5 s; no real 1-second window may
// hold more than 110 passes (Sentinel: 200) and the mean stays 100 ± 2.
func TestRejectAccuracy(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 100})
	r := e.Resource("orders")
	const durationMs, goroutines, callsPerMs = 5000, 2, 4
	passes := make([][]int64, goroutines)
	for ms := range int64(durationMs) {
		clock.Set(ms)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for range callsPerMs {
					if tryPass(r) {
						passes[g] = append(passes[g], ms)
					}
				}
			})
		}
		wg.Wait()
	}
	all := append(passes[0], passes[1]...)
	if worst := maxInAnyWindow(all, 1000); worst > 110 {
		t.Errorf("a 1-second window held %d passes, want <= 110", worst)
	} else {
		t.Logf("most passes in any 1-second window: %d", worst)
	}
	mean := float64(len(all)) / (durationMs / 1000)
	if mean < 98 || mean > 102 {
		t.Errorf("mean %.1f passes per second, want 100 ± 2", mean)
	}
}

// TestRejectBurstAtBucketEnd: a burst in the last millisecond of a bucket is
// held against the threshold for a whole second from then.
func TestRejectBurstAtBucketEnd(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{Resource: "orders", Threshold: 100})
	r := e.Resource("orders")
	clock.Set(99)
	for i := range 100 {
		if !tryPass(r) {
			t.Fatalf("call %d at 99 ms blocked", i)
		}
	}
	if tryPass(r) {
		t.Fatal("call 101 at 99 ms passed")
	}
	for _, ms := range []int64{100, 500, 1000, 1050, 1098} {
		clock.Set(ms)
		if tryPass(r) {
			t.Fatalf("call at %d ms passed; the burst at 99 ms is less than a second old", ms)
		}
	}
	clock.Set(1099)
	for i := range 100 {
		if !tryPass(r) {
			t.Fatalf("call %d at 1099 ms blocked", i)
		}
	}
	if tryPass(r) {
		t.Fatal("call 101 at 1099 ms passed")
	}
}

func TestRejectBatchCount(t *testing.T) {
	e, _ := newTestEngine(t, 1000, FlowRule{Resource: "orders", Threshold: 10})
	r := e.Resource("orders")
	if !tryPass(r, WithCount(7)) {
		t.Fatal("batch of 7 blocked under a threshold of 10")
	}
	if tryPass(r, WithCount(4)) {
		t.Fatal("batch of 4 passed with 7 of 10 used")
	}
	if !tryPass(r, WithCount(3)) {
		t.Fatal("batch of 3 blocked with 7 of 10 used")
	}
	if !tryPass(e.Resource("other"), WithCount(1_000_000)) {
		t.Fatal("a resource without rules blocked")
	}
}

func TestRejectThresholdZeroBlocksAll(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Name: "closed", Resource: "orders", Threshold: 0})
	_, blk := e.Entry("orders")
	if blk == nil {
		t.Fatal("threshold 0 let a call pass")
	}
	if blk.Reason() != ReasonFlow || blk.Rule() != "closed" {
		t.Fatalf("block = %s/%s, want flow/closed", blk.Reason(), blk.Rule())
	}
	if blk.Error() != "sluice: blocked by flow rule closed" {
		t.Fatalf("Error() = %q", blk.Error())
	}
}

// TestOwnStatInterval: a rule with its own statIntervalMs counts over it.
func TestOwnStatInterval(t *testing.T) {
	e, clock := newTestEngine(t, 0,
		FlowRule{Name: "per-2s", Resource: "orders", Threshold: 10, StatIntervalMs: 2000},
		FlowRule{Name: "per-1s", Resource: "orders", Threshold: 8},
	)
	r := e.Resource("orders")
	passed := 0
	for ms := int64(0); ms < 2000; ms += 10 {
		clock.Set(ms)
		if tryPass(r) {
			passed++
		}
	}
	// per-1s lets 8 through (0..70 ms), then one more as each of them is a
	// second old (1000, 1010), until per-2s holds the total at 10, which it
	// does until the first of them is 2 s old.
	if passed != 10 {
		t.Fatalf("%d passes in 2 s, want 10", passed)
	}
	clock.Set(1999)
	if _, blk := r.Entry(); blk == nil || blk.Rule() != "per-2s" {
		t.Fatalf("at 1999 ms: block %v, want per-2s", blk)
	}
	clock.Set(2000)
	if !tryPass(r) {
		t.Fatal("blocked at 2000 ms, when the first pass is 2 s old")
	}
}

// TestRulesLoadedOnABusyResource: rules loaded on a resource that has been
// passing calls without one count its last second's passes, each at the
// end of its bucket at the latest, and count them once when they come
// together.
func TestRulesLoadedOnABusyResource(t *testing.T) {
	e, clock := newTestEngine(t, 0)
	r := e.Resource("orders")
	for range 8 {
		tryPass(r)
	}
	clock.Set(150)
	tryPass(r)
	tryPass(r)
	clock.Set(500)
	err := e.LoadFlowRules([]FlowRule{
		{Name: "twelve", Resource: "orders", Threshold: 12},
		{Name: "ten", Resource: "orders", Threshold: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, blk := r.Entry(); blk == nil || blk.Rule() != "ten" {
		t.Fatalf("at 500 ms, with 10 passes in the last second: block %v, want ten's", blk)
	}
	clock.Set(1098)
	if tryPass(r) {
		t.Fatal("passed at 1098 ms: the 8 passes of the bucket at 0 may have been at 99 ms")
	}
	clock.Set(1099)
	for i := range 8 {
		if !tryPass(r) {
			t.Fatalf("call %d at 1099 ms blocked", i)
		}
	}
	if tryPass(r) {
		t.Fatal("a 9th call passed at 1099 ms, with the passes at 150 ms in the window")
	}
}

func TestThrottlingSpacing(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{
		Name: "paced", Resource: "orders", Threshold: 100,
		ControlBehavior: BehaviorThrottling, MaxQueueingTimeMs: 500,
	})
	r := e.Resource("orders")
	// Two goroutines ask every millisecond; each pass is scheduled at its
	// time plus the wait it is given.
	var mu sync.Mutex
	var scheduled []int64
	blocked := 0
	for ms := range int64(3000) {
		clock.Set(ms)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				en, blk := r.Entry(WithNoWait())
				mu.Lock()
				defer mu.Unlock()
				if blk != nil {
					blocked++
					return
				}
				if en.WaitMs() > 500 {
					t.Errorf("told to wait %d ms, more than maxQueueingTimeMs", en.WaitMs())
				}
				scheduled = append(scheduled, ms+en.WaitMs())
				en.Exit()
			})
		}
		wg.Wait()
	}
	if blocked == 0 {
		t.Fatal("no caller was blocked although the queue was full")
	}
	slices.Sort(scheduled)
	for i := 1; i < len(scheduled); i++ {
		if gap := scheduled[i] - scheduled[i-1]; gap < 10 {
			t.Fatalf("passes %d and %d are %d ms apart, want >= 10", i-1, i, gap)
		}
	}
	mean := float64(scheduled[len(scheduled)-1]-scheduled[0]) / float64(len(scheduled)-1)
	if mean < 9 || mean > 11 {
		t.Fatalf("mean spacing %.2f ms, want 10 ± 1", mean)
	}
}

func TestThrottlingWaitsAndBlocks(t *testing.T) {
	e, clock := newTestEngine(t, 1000, FlowRule{
		Resource: "orders", Threshold: 10, ControlBehavior: BehaviorThrottling, MaxQueueingTimeMs: 250,
	})
	r := e.Resource("orders")
	var waits []int64
	for {
		en, blk := r.Entry(WithNoWait())
		if blk != nil {
			break
		}
		waits = append(waits, en.WaitMs())
		en.Exit()
	}
	// 100 ms apart: now, +100, +200; +300 is over the 250 ms queue.
	if want := []int64{0, 100, 200}; !slices.Equal(waits, want) {
		t.Fatalf("waits = %v, want %v", waits, want)
	}
	// Without WithNoWait the engine sleeps: on the manual clock, time moves.
	clock.Set(2000)
	r.Entry() // takes the slot at 2000
	en, blk := r.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	if clock.NowMs() != 2100 || en.WaitMs() != 100 {
		t.Fatalf("after a throttled Entry the clock is %d, wait %d; want 2100 and 100", clock.NowMs(), en.WaitMs())
	}
}

func TestThrottlingWithoutQueueing(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{Resource: "orders", Threshold: 5, ControlBehavior: BehaviorThrottling})
	r := e.Resource("orders")
	passed := 0
	for ms := range int64(1000) {
		clock.Set(ms)
		if en, blk := r.Entry(WithNoWait()); blk == nil {
			if en.WaitMs() != 0 {
				t.Fatalf("waited %d ms with maxQueueingTimeMs 0", en.WaitMs())
			}
			passed++
		}
	}
	if passed != 5 {
		t.Fatalf("%d passes in a second at 5 per second, want 5", passed)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Name: "two-at-once", Resource: "orders", Metric: MetricConcurrency, Threshold: 2})
	r := e.Resource("orders")
	a, blk := r.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	b, blk := r.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	if _, blk = r.Entry(); blk == nil || blk.Reason() != ReasonConcurrency || blk.Rule() != "two-at-once" {
		t.Fatalf("third call: block %v, want concurrency/two-at-once", blk)
	}
	if r.Concurrency() != 2 {
		t.Fatalf("concurrency %d after a blocked call, want 2", r.Concurrency())
	}
	a.Exit()
	if _, blk = r.Entry(WithCount(2)); blk == nil {
		t.Fatal("a batch of 2 passed with 1 of 2 in flight")
	}
	c, blk := r.Entry()
	if blk != nil {
		t.Fatalf("blocked after an Exit: %v", blk)
	}
	b.Exit()
	c.Exit()
	if r.Concurrency() != 0 {
		t.Fatalf("concurrency %d after every Exit, want 0", r.Concurrency())
	}
}

func TestConcurrencyLimitUnderContention(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Resource: "orders", Metric: MetricConcurrency, Threshold: 3})
	r := e.Resource("orders")
	var inFlight, worst sync.Mutex
	current, most := 0, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				en, blk := r.Entry()
				if blk != nil {
					continue
				}
				inFlight.Lock()
				current++
				worst.Lock()
				most = max(most, current)
				worst.Unlock()
				current--
				inFlight.Unlock()
				en.Exit()
			}
		})
	}
	wg.Wait()
	if r.Concurrency() != 0 {
		t.Fatalf("concurrency %d at the end, want 0", r.Concurrency())
	}
	if most > 3 {
		t.Fatalf("%d calls in flight at once, want <= 3", most)
	}
}

// TestConcurrencyLimitWhileCallsLeaveEveryWay: a concurrency rule reads
// the calls in flight as the passes less the completions, so what moves
// either without a call entering or leaving (outcomes reported without an
// entry, passes tallied from outside, exits that complete more or fewer
// calls than entered, releases) must never let the rule admit more than
// its limit, on a resource calls contend for (statistics on stripes) or
// not.
func TestConcurrencyLimitWhileCallsLeaveEveryWay(t *testing.T) {
	for _, contended := range []bool{false, true} {
		e, _ := newTestEngine(t, 0)
		r := e.Resource("orders")
		if contended {
			contend(t, r)
		}
		if err := e.LoadFlowRules([]FlowRule{{Name: "conc", Resource: "orders", Metric: MetricConcurrency, Threshold: 3}}); err != nil {
			t.Fatal(err)
		}
		var inFlight, most atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 3000 {
					if g == 0 {
						r.RecordComplete(2, 1, false)
						r.Tally(true, 2)
						continue
					}
					count := 1 + int64(i%2)
					en, blk := r.Entry(WithCount(count))
					if blk != nil {
						continue
					}
					now := inFlight.Add(count)
					for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
					}
					inFlight.Add(-count)
					switch i % 4 {
					case 0:
						en.Exit()
					case 1:
						en.Exit(WithCompleteCount(3))
					case 2:
						en.Release()
						r.RecordComplete(count, 1, false)
					default:
						en.Exit(WithCompleteCount(1))
					}
				}
			})
		}
		wg.Wait()
		if n := r.Concurrency(); n != 0 {
			t.Errorf("contended %v: %d in flight at the end, want 0", contended, n)
		}
		if m := most.Load(); m > 3 {
			t.Errorf("contended %v: %d calls in flight at once, want <= 3", contended, m)
		}
	}
}

func TestAssociated(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{
		Name: "writes-yield", Resource: "write", Threshold: 5,
		RelationStrategy: RelationAssociated, RefResource: "read",
	})
	write, read := e.Resource("write"), e.Resource("read")
	if !tryPass(write) {
		t.Fatal("write blocked while read is idle")
	}
	for i := range 20 {
		if !tryPass(read) {
			t.Fatalf("read %d blocked: the rule limits write, not read", i)
		}
	}
	if _, blk := write.Entry(); blk == nil || blk.Rule() != "writes-yield" {
		t.Fatalf("write passed while read runs at 20/s over a threshold of 5 (block %v)", blk)
	}
	clock.Set(1000)
	if !tryPass(write) {
		t.Fatal("write blocked a second after read went idle")
	}
}

// TestAssociatedReadsTheReferencedPasses: an associated rule blocks a call
// iff the referenced resource's passes in the window, and the call, are
// over the threshold: checked against the passes themselves while read
// runs evenly paced, unevenly paced, under and over the threshold.
func TestAssociatedReadsTheReferencedPasses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		readsAt func(i int64) int64 // the time of read's i-th call
	}{
		{"4 per second", func(i int64) int64 { return i * 250 }},
		{"4 per second, late by 0-3 ms", func(i int64) int64 { return i*250 + []int64{0, 3, 1, 2}[i%4] }},
		{"4.9 per second", func(i int64) int64 { return i * 1000 / 49 * 10 }},
		{"5 per second", func(i int64) int64 { return i * 200 }},
		{"pairs 90 ms apart, twice a second", func(i int64) int64 { return i/2*500 + i%2*90 }},
		{"bursts of 3 every 700 ms", func(i int64) int64 { return i / 3 * 700 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, clock := newTestEngine(t, 0, FlowRule{
				Name: "writes-yield", Resource: "write", Threshold: 5,
				RelationStrategy: RelationAssociated, RefResource: "read",
			})
			write, read := e.Resource("write"), e.Resource("read")
			var reads []int64
			next := int64(0)
			blocked := 0
			for ms := int64(0); ms < 10_000; ms++ {
				clock.Set(ms)
				for tt.readsAt(next) == ms {
					if !tryPass(read) {
						t.Fatal("read blocked: the rule limits write")
					}
					reads = append(reads, ms)
					next++
				}
				if ms%7 != 0 {
					continue
				}
				inWindow := 0
				for _, at := range reads {
					if at > ms-1000 {
						inWindow++
					}
				}
				en, blk := write.Entry()
				if blk == nil {
					en.Exit()
				} else {
					blocked++
				}
				if want := inWindow+1 > 5; (blk != nil) != want {
					t.Fatalf("at %d ms, with %d reads in the last second: blocked %v, want %v", ms, inWindow, blk != nil, want)
				}
			}
			t.Logf("write blocked %d times in %d checks", blocked, 10_000/7+1)
		})
	}
}

func TestAssociatedConcurrency(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{
		Resource: "write", Metric: MetricConcurrency, Threshold: 1,
		RelationStrategy: RelationAssociated, RefResource: "read",
	})
	read, blk := e.Entry("read")
	if blk != nil {
		t.Fatal(blk)
	}
	if _, blk := e.Entry("write"); blk == nil {
		t.Fatal("write passed while read has 1 in flight against a threshold of 1")
	}
	read.Exit()
	if !tryPass(e.Resource("write")) {
		t.Fatal("write blocked with read idle")
	}
}

func TestShadowMode(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Name: "try-it", Resource: "orders", Threshold: 2, Mode: ModeShadow})
	r := e.Resource("orders")
	for i := range 5 {
		if !tryPass(r) {
			t.Fatalf("call %d blocked by a shadow rule", i)
		}
	}
	live := r.Live()
	if live.PassQps != 5 || live.ShadowBlockQps != 3 || live.BlockQps != 0 {
		t.Fatalf("live = %+v, want 5 pass, 3 shadowBlock, 0 block", live)
	}
}

func TestShadowAndEnforceTogether(t *testing.T) {
	e, _ := newTestEngine(t, 0,
		FlowRule{Name: "shadow", Resource: "orders", Threshold: 1, Mode: ModeShadow},
		FlowRule{Name: "enforce", Resource: "orders", Threshold: 3},
	)
	r := e.Resource("orders")
	for range 5 {
		tryPass(r)
	}
	// Calls 2 and 3 pass enforce but not shadow; 4 and 5 are blocked by
	// enforce and are not counted as shadow blocks.
	live := r.Live()
	if live.PassQps != 3 || live.ShadowBlockQps != 2 || live.BlockQps != 2 {
		t.Fatalf("live = %+v, want 3 pass, 2 shadowBlock, 2 block", live)
	}
}

func TestFirstBlockingRuleIsReported(t *testing.T) {
	e, _ := newTestEngine(t, 0,
		FlowRule{Name: "wide", Resource: "orders", Threshold: 100},
		FlowRule{Name: "narrow", Resource: "orders", Threshold: 0},
		FlowRule{Name: "closed", Resource: "orders", Threshold: 0},
	)
	if _, blk := e.Entry("orders"); blk == nil || blk.Rule() != "narrow" {
		t.Fatalf("block = %v, want narrow", blk)
	}
}

func TestExitRecordsOutcome(t *testing.T) {
	e, clock := newTestEngine(t, 0)
	r := e.Resource("orders")
	en, _ := r.Entry(WithCount(2))
	clock.Advance(30)
	en.Exit(WithError(errors.New("boom")))
	en, _ = r.Entry()
	en.Exit(WithRtMs(90))
	live := r.Live()
	want := LiveStats{PassQps: 3, CompleteQps: 3, ErrorQps: 2, AvgRtMs: 50}
	if live != want {
		t.Fatalf("live = %+v, want %+v", live, want)
	}
	var zero Entry
	zero.Exit() // must not panic or count
	if got := r.Live(); got != want {
		t.Fatalf("zero Entry's Exit changed stats: %+v", got)
	}
}

func TestReloadKeepsStatisticsAndState(t *testing.T) {
	paced := FlowRule{Name: "paced", Resource: "pay", Threshold: 1, ControlBehavior: BehaviorThrottling}
	qps := FlowRule{Name: "qps", Resource: "orders", Threshold: 10}
	e, _ := newTestEngine(t, 0, qps, paced)
	orders, pay := e.Resource("orders"), e.Resource("pay")
	for range 10 {
		tryPass(orders)
	}
	if !tryPass(pay) {
		t.Fatal("first paced call blocked")
	}
	// Same rules again, one more rule: passes so far still count, and the
	// throttling slot just taken is still taken.
	if err := e.LoadFlowRules([]FlowRule{paced, qps, {Resource: "other", Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	if tryPass(orders) {
		t.Fatal("11th call passed after a reload")
	}
	if tryPass(pay) {
		t.Fatal("paced rule forgot its last pass on reload")
	}
	// A raised threshold is a new rule on the same statistics.
	qps.Threshold = 15
	if err := e.LoadFlowRules([]FlowRule{qps}); err != nil {
		t.Fatal(err)
	}
	passed := 0
	for range 10 {
		if tryPass(orders) {
			passed++
		}
	}
	if passed != 5 {
		t.Fatalf("%d passes after raising 10 to 15, want 5", passed)
	}
	if !tryPass(pay) {
		t.Fatal("pay still limited after its rule was removed")
	}
	if got := orders.Live().PassQps; got != 15 {
		t.Fatalf("orders pass qps = %v after reloads, want 15", got)
	}
}

func TestLoadRejectsInvalidSetAndKeepsOld(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Name: "keep", Resource: "orders", Threshold: 1})
	err := e.LoadFlowRules([]FlowRule{
		{Name: "ok", Resource: "orders", Threshold: 5},
		{Name: "bad", Resource: "", Threshold: -1},
		{Name: "ok", Resource: "x", Threshold: 1},
	})
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	want := []FieldError{
		{"rules[1].resource", "is required"},
		{"rules[1].threshold", "must be >= 0"},
		{"rules[2].name", `"ok" is already the name of rules[0]`},
	}
	if len(verr.Fields) != len(want) {
		t.Fatalf("fields = %+v, want %+v", verr.Fields, want)
	}
	for i := range want {
		if verr.Fields[i] != want[i] {
			t.Fatalf("field %d = %+v, want %+v", i, verr.Fields[i], want[i])
		}
	}
	if got := e.FlowRules(); len(got) != 1 || got[0].Name != "keep" {
		t.Fatalf("rules after a rejected load = %+v, want the old one", got)
	}
}

func TestFlowRulesReturnsDefaults(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Resource: "orders", Threshold: 1})
	got := e.FlowRules()
	want := FlowRule{
		Resource: "orders", Threshold: 1, Mode: ModeEnforce, Metric: MetricQPS, StatIntervalMs: 1000,
		ControlBehavior: BehaviorReject, TokenCalculateStrategy: StrategyDirect, RelationStrategy: RelationCurrent,
		Scope: ScopeLocal, LimitApp: LimitAppDefault,
	}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("FlowRules() = %+v, want [%+v]", got, want)
	}
}

// TestFlowCheckerKeepsTheRuleWhole: a checker keeps only the name,
// resource, threshold, interval and mode of a common rule (a rate limit
// that rejects) and the whole of any other, with its kind's state; either
// way the rule comes back as loaded, and a reload of an equal rule keeps
// its checker.
func TestFlowCheckerKeepsTheRuleWhole(t *testing.T) {
	rules := []FlowRule{
		{Name: "common", Resource: "a", Threshold: 100},
		{Name: "shadow", Resource: "a", Threshold: 5, StatIntervalMs: 60_000, Mode: ModeShadow},
		{Name: "paced", Resource: "b", Threshold: 10, ControlBehavior: BehaviorThrottling, MaxQueueingTimeMs: 100},
		{Name: "inflight", Resource: "b", Threshold: 3, Metric: MetricConcurrency},
		{Name: "checkout", Resource: "c", Threshold: 7, LimitApp: "checkout"},
		{Name: "expiring", Resource: "c", Threshold: 9, ExpiresAtMs: 10_000},
		{Name: "replacing", Resource: "c", Threshold: 9, Replaces: "old"},
	}
	e, _ := newTestEngine(t, 0, rules...)
	got := e.FlowRules()
	if len(got) != len(rules) {
		t.Fatalf("FlowRules() = %+v, want %d rules", got, len(rules))
	}
	for i, rule := range rules {
		if want := rule.WithDefaults(); got[i] != want {
			t.Errorf("FlowRules()[%d] = %+v, want %+v", i, got[i], want)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		for _, c := range e.Resource(name).rules.Load().flow {
			if common := c.ruleName() == "common" || c.ruleName() == "shadow"; common != (c.uncommon == nil) {
				t.Errorf("rule %s: whole rule kept %v, want %v", c.ruleName(), c.uncommon != nil, !common)
			}
		}
	}
	before := e.Resource("a").rules.Load().flow[0]
	if err := e.LoadFlowRules(rules); err != nil {
		t.Fatal(err)
	}
	if after := e.Resource("a").rules.Load().flow[0]; after != before {
		t.Fatal("an equal common rule got a new checker on reload")
	}
}

// TestReleaseAndRecordComplete: the HTTP check API's way through the
// engine: release the entry at once, report the outcome later.
func TestReleaseAndRecordComplete(t *testing.T) {
	e, _ := newTestEngine(t, 0,
		FlowRule{Resource: "conc", Metric: MetricConcurrency, Threshold: 1},
		FlowRule{Resource: "write", Metric: MetricConcurrency, Threshold: 1, RelationStrategy: RelationAssociated, RefResource: "read"},
	)
	plain, conc := e.Resource("plain"), e.Resource("conc")
	for _, tt := range []struct {
		name string
		want bool
	}{{"plain", false}, {"conc", true}, {"read", true}, {"write", false}} {
		en, blk := e.Entry(tt.name)
		if blk != nil {
			t.Fatal(blk)
		}
		if got := en.NeedsExit(); got != tt.want {
			t.Errorf("%s: NeedsExit() = %v, want %v", tt.name, got, tt.want)
		}
		if got := en.CountsInFlight(); got != tt.want {
			t.Errorf("%s: CountsInFlight() = %v, want %v", tt.name, got, tt.want)
		}
		en.Release()
	}
	var none Entry
	if none.NeedsExit() || none.CountsInFlight() {
		t.Error("the zero Entry needs an Exit")
	}
	en, blk := conc.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	en.Release()
	if conc.Concurrency() != 0 {
		t.Fatalf("concurrency %d after Release, want 0", conc.Concurrency())
	}
	if !tryPass(conc) {
		t.Fatal("blocked after the only entry was released")
	}
	plain.RecordComplete(3, 40, true)
	plain.RecordComplete(0, 10, false) // ignored
	if got, want := plain.Live(), (LiveStats{PassQps: 1, CompleteQps: 3, ErrorQps: 3, AvgRtMs: 40}); got != want {
		t.Fatalf("live = %+v, want %+v", got, want)
	}
}
