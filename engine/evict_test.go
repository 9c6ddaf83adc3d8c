package engine

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testTTL   = 10 * time.Minute
	testTTLMs = int64(testTTL / time.Millisecond)
)

// newBoundedEngine returns an engine on a manual clock at 0 that tracks at
// most maxResources resources and forgets them after testTTL.
func newBoundedEngine(t *testing.T, maxResources int) (*Engine, *ManualClock) {
	t.Helper()
	clock := NewManualClock(0)
	e := New(Options{Clock: clock, MaxResources: maxResources, ResourceIdleTTL: testTTL})
	t.Cleanup(e.Close)
	return e, clock
}

// tracked lists the names the engine tracks, sorted.
func tracked(e *Engine) []string {
	var names []string
	for _, r := range e.Resources() {
		names = append(names, r.Name())
	}
	slices.Sort(names)
	return names
}

// collectedPasses sums the passes CollectMinutes hands out, by resource.
func collectedPasses(e *Engine) map[string]int64 {
	out := map[string]int64{}
	for _, m := range e.CollectMinutes() {
		out[m.Resource] += m.Pass
	}
	return out
}

func TestEvictIdle(t *testing.T) {
	e, clock := newBoundedEngine(t, 0)
	err := e.LoadFlowRules([]FlowRule{
		{Resource: "ruled", Threshold: 100},
		{Resource: "writer", Threshold: 100, RelationStrategy: RelationAssociated, RefResource: "reader"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.LoadCircuitBreakerRules([]CircuitBreakerRule{{Resource: "pay", Strategy: StrategyErrorCount, Threshold: 1, RetryTimeoutMs: 1000}}); err != nil {
		t.Fatal(err)
	}
	idle := e.Resource("idle") // created at 0, never called
	tryPass(e.Resource("quiet"))
	inFlight, blk := e.Entry("in-flight")
	if blk != nil {
		t.Fatal(blk)
	}

	// Traffic is known to the minute: quiet's last call, in minute 0, is
	// taken to end at 60 s.
	clock.Set(testTTLMs + minuteMs - 1)
	tryPass(e.Resource("busy"))
	if n := e.EvictIdle(); n != 1 || !idle.Evicted() || e.Lookup("idle") != nil {
		t.Fatalf("EvictIdle() = %d, idle evicted %v; want only idle, idle for the TTL", n, idle.Evicted())
	}
	clock.Set(testTTLMs + minuteMs)
	if n := e.EvictIdle(); n != 1 || e.Lookup("quiet") != nil {
		t.Fatalf("EvictIdle() = %d, want quiet out a TTL after its last minute", n)
	}
	want := []string{"busy", "in-flight", "pay", "reader", "ruled", "writer"}
	if got := tracked(e); !slices.Equal(got, want) {
		t.Fatalf("tracked %v, want %v", got, want)
	}

	// Whatever the time, a rule's resources stay, and so does a call in
	// flight; the rest goes once idle.
	clock.Set(100 * testTTLMs)
	e.EvictIdle()
	want = []string{"in-flight", "pay", "reader", "ruled", "writer"}
	if got := tracked(e); !slices.Equal(got, want) {
		t.Fatalf("tracked %v, want %v", got, want)
	}
	inFlight.Exit()
	clock.Advance(testTTLMs + minuteMs)
	e.EvictIdle()
	if e.Lookup("in-flight") != nil {
		t.Fatal("in-flight still tracked a TTL after its call ended")
	}

	// Without their rules, they leave too.
	if err := e.LoadFlowRules(nil); err != nil {
		t.Fatal(err)
	}
	e.EvictIdle()
	if got := tracked(e); !slices.Equal(got, []string{"pay"}) {
		t.Fatalf("tracked %v once the flow rules are gone, want [pay]", got)
	}
}

// TestEvictedHandleStillCounts: a handle held across its eviction counts
// its calls under the resource the engine tracks by then, whose rules
// apply.
func TestEvictedHandleStillCounts(t *testing.T) {
	e, clock := newBoundedEngine(t, 0)
	held := e.Resource("orders")
	clock.Set(testTTLMs)
	if e.EvictIdle() != 1 || !held.Evicted() {
		t.Fatal("orders was not evicted")
	}
	if !tryPass(held) || !tryPass(held) {
		t.Fatal("an evicted handle blocked a call")
	}
	now := e.Lookup("orders")
	if now == nil || now == held || now.Live().PassQps != 2 {
		t.Fatalf("the calls went to %p (held %p), want a new resource counting 2", now, held)
	}
	if held.Live().PassQps != 0 {
		t.Fatal("the evicted resource counted the calls")
	}
	if err := e.LoadFlowRules([]FlowRule{{Resource: "orders", Threshold: 2}}); err != nil {
		t.Fatal(err)
	}
	if tryPass(held) {
		t.Fatal("a call through the evicted handle escaped the rule of its resource")
	}
	held.RecordComplete(3, 10, false)
	if got := now.Live().CompleteQps; got != 5 {
		t.Fatalf("complete qps %v, want 5 (2 exits and 3 recorded through the held handle)", got)
	}
}

// TestEvictionLosesNoMinute: what an evicted resource counted and nobody
// collected yet, and what a call racing with the eviction adds, still
// reach CollectMinutes, once.
func TestEvictionLosesNoMinute(t *testing.T) {
	clock := NewManualClock(0)
	e := New(Options{Clock: clock, ResourceIdleTTL: time.Second})
	t.Cleanup(e.Close)
	r := e.Resource("orders")
	tryPass(r)
	tryPass(r)
	clock.Set(minuteMs + 1_000)
	if e.EvictIdle() != 1 {
		t.Fatal("orders was not evicted")
	}
	// A call that found the handle before the mark records after it.
	r.recordPass(clock.NowMs(), clock.NowMs(), 1, 0, false, false, nil)
	if got := collectedPasses(e); got["orders"] != 3 {
		t.Fatalf("collected %v, want the 3 passes of orders", got)
	}
	r.recordPass(clock.NowMs(), clock.NowMs(), 4, 0, false, false, nil)
	clock.Advance(retiredGraceMs)
	if got := collectedPasses(e); got["orders"] != 4 {
		t.Fatalf("collected %v a minute after the eviction, want the 4 late passes", got)
	}
	if len(e.retired) != 0 {
		t.Fatalf("%d resources still retired after their grace", len(e.retired))
	}
	if got := collectedPasses(e); len(got) != 0 {
		t.Fatalf("collected %v after the grace, want nothing", got)
	}
}

// TestEvictionWithoutCollector: an engine whose minutes nobody collects
// lets go of what it evicted after two minutes.
func TestEvictionWithoutCollector(t *testing.T) {
	e, clock := newBoundedEngine(t, 0)
	e.Resource("a")
	clock.Set(2 * retiredGraceMs)
	e.Resource("b")
	clock.Set(testTTLMs)
	e.EvictIdle()
	clock.Advance(2 * retiredGraceMs)
	e.EvictIdle()
	if len(e.retired) != 1 || e.retired[0].res.Name() != "b" {
		t.Fatalf("retired %v, want only b, evicted just now", e.retired)
	}
}

func TestOverflow(t *testing.T) {
	e, clock := newBoundedEngine(t, 2)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "ruled", Threshold: 0}}); err != nil {
		t.Fatal(err)
	}
	if r := e.Resource("a"); r.Name() != "a" {
		t.Fatalf("second resource under a limit of 2 is %q", r.Name())
	}
	if o := e.Overflow(); o != (Overflow{}) {
		t.Fatalf("overflow %+v before the engine was full", o)
	}
	if r := e.Resource("b"); r.Name() != OverflowResource {
		t.Fatalf("third resource over a limit of 2 is %q, want %s", r.Name(), OverflowResource)
	}
	for _, name := range []string{"b", "c", "c"} {
		if !tryPass(e.Resource(name)) {
			t.Fatalf("a call on %s, over the limit, was blocked", name)
		}
	}
	if !tryPass(e.Resource("d"), WithCount(5)) {
		t.Fatal("a call over the limit was blocked")
	}
	if o := e.Overflow(); o.Calls != 5 || o.RecentName != "b" {
		t.Fatalf("overflow %+v, want 5 calls, b sampled", o)
	}
	clock.Advance(overflowSampleEveryMs)
	tryPass(e.Resource("e"))
	if o := e.Overflow(); o.Calls != 6 || o.RecentName != "e" {
		t.Fatalf("overflow %+v a second later, want 6 calls, e sampled", o)
	}
	if got := collectedPasses(e); got[OverflowResource] != 9 || len(got) != 1 {
		t.Fatalf("collected %v, want the 9 passes under %s", got, OverflowResource)
	}
	if _, blk := e.Entry("ruled"); blk == nil {
		t.Fatal("a resource named by a rule lost its rule")
	}
	if err := e.LoadFlowRules([]FlowRule{{Resource: "ruled", Threshold: 0}, {Resource: "ruled-too", Threshold: 0}}); err != nil {
		t.Fatal(err)
	}
	if _, blk := e.Entry("ruled-too"); blk == nil {
		t.Fatal("a rule over the limit was not applied")
	}

	// Once a resource leaves, a new name gets its own again.
	if err := e.LoadFlowRules([]FlowRule{{Resource: "ruled", Threshold: 0}}); err != nil {
		t.Fatal(err)
	}
	clock.Set(testTTLMs + 2*minuteMs)
	e.EvictIdle()
	if r := e.Resource("b"); r.Name() != "b" {
		t.Fatalf("b is %q once there is room, want b (tracked %v)", r.Name(), tracked(e))
	}
}

// TestSweepRunsByItself: the engine evicts on its own, without EvictIdle,
// and Close stops it.
func TestSweepRunsByItself(t *testing.T) {
	e := New(Options{ResourceIdleTTL: time.Millisecond})
	e.Resource("orders")
	deadline := time.Now().Add(10 * time.Second)
	for e.Lookup("orders") != nil {
		if time.Now().After(deadline) {
			t.Fatal("orders still tracked 10 s after its TTL of 1 ms")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.Close()
	e.Close()
}

// TestStressEvictionCountsEveryCall races evictions with calls by name and
// through held handles, on an engine too small for its names (run it with
// -race): every call that passed is collected exactly once.
func TestStressEvictionCountsEveryCall(t *testing.T) {
	clock := NewManualClock(0)
	e := New(Options{Clock: clock, MaxResources: 8, ResourceIdleTTL: time.Second})
	t.Cleanup(e.Close)
	if err := e.LoadFlowRules([]FlowRule{{Resource: "name-0", Threshold: 1e9}}); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 32)
	for i := range names {
		names[i] = fmt.Sprintf("name-%d", i)
	}
	held := []*Resource{e.Resource(names[0]), e.Resource(names[1]), e.Resource(names[2])}
	var passed, evicted atomic.Int64
	var collected int64
	collect := func() {
		for _, m := range e.CollectMinutes() {
			collected += m.Pass
		}
	}
	for round := range 40 {
		stop := make(chan struct{})
		var sweeper, workers sync.WaitGroup
		sweeper.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					evicted.Add(int64(e.EvictIdle()))
				}
			}
		})
		for w := range 4 {
			workers.Go(func() {
				for i := range 300 {
					var en Entry
					var blk *BlockError
					// Six names a round, five new: the others have idled
					// for rounds and are evicted as the calls come.
					if i%4 == 0 && round%8 == 0 {
						en, blk = held[(w+i)%len(held)].Entry()
					} else {
						en, blk = e.Entry(names[(round*5+(w+i)%6)%len(names)])
					}
					if blk != nil {
						t.Error(blk)
						return
					}
					passed.Add(1)
					en.Exit()
				}
			})
		}
		workers.Wait()
		close(stop)
		sweeper.Wait()
		// The clock moves between rounds only, so that every call of a
		// round is over before its evicted resources' grace ends. A sweep
		// before a collection a minute evicts some resources before their
		// last calls were collected.
		clock.Advance(20_000)
		evicted.Add(int64(e.EvictIdle()))
		if round%3 == 0 {
			collect()
		}
	}
	clock.Advance(3 * minuteMs)
	collect()
	if collected != passed.Load() {
		t.Fatalf("collected %d passes, want the %d calls that passed", collected, passed.Load())
	}
	if o := e.Overflow(); o.Calls == 0 || evicted.Load() == 0 {
		t.Fatalf("%d calls overflowed, %d resources were evicted: the test does not test both", o.Calls, evicted.Load())
	}
}
