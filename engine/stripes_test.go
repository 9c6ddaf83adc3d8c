package engine

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// contend calls r from every core until its statistics are striped
// (window.Stripes), and fails t if they are not within 10 s; it skips t on
// one core, where calls do not collide.
func contend(t *testing.T, r *Resource) {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("calls collide only on two cores or more")
	}
	deadline := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for r.second.Stripes() == nil && time.Now().Before(deadline) {
				for range 100 {
					tryPass(r)
				}
			}
		})
	}
	wg.Wait()
	if r.second.Stripes() == nil {
		t.Fatalf("calls on every core left %s unstriped for 10 s", r.Name())
	}
}

// TestContendedResourceCountsEveryCall: calls on many goroutines, through
// minutes that a writer moves on while a collector takes them, counted on
// the stripes of contended resources (one with no rule, one whose flow
// rule numbers its passes): CollectMinutes hands out every call exactly
// once, and none is left in flight.
func TestContendedResourceCountsEveryCall(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{Name: "far", Resource: "ruled", Threshold: MaxThreshold})
	resources := []*Resource{e.Resource("plain"), e.Resource("ruled")}
	for _, r := range resources {
		contend(t, r)
	}
	e.CollectMinutes() // what contend counted
	counted := map[string]int64{}
	const goroutines, calls = 8, 20_000
	stop := make(chan struct{})
	var background sync.WaitGroup
	background.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				if clock.NowMs() < 5*minuteMs {
					clock.Advance(13)
				}
				for _, m := range e.CollectMinutes() {
					counted[m.Resource] += m.Pass
					counted[m.Resource+" complete"] += m.Complete
				}
			}
		}
	})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := resources[g%len(resources)]
			for range calls {
				if !tryPass(r) {
					t.Error("a call was blocked")
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	background.Wait()
	for _, m := range e.CollectMinutes() {
		counted[m.Resource] += m.Pass
		counted[m.Resource+" complete"] += m.Complete
	}
	for _, r := range resources {
		want := int64(goroutines / len(resources) * calls)
		if got := counted[r.Name()]; got != want {
			t.Errorf("%s: collected %d passes of %d calls", r.Name(), got, want)
		}
		if got := counted[r.Name()+" complete"]; got != want {
			t.Errorf("%s: collected %d completions of %d calls", r.Name(), got, want)
		}
		if n := r.Concurrency(); n != 0 {
			t.Errorf("%s: %d calls left in flight", r.Name(), n)
		}
	}
}

// TestConcurrencyRuleCountsStripedCalls: the calls a contended resource
// counted in flight on its stripes, before a concurrency rule was loaded,
// leave it less room.
func TestConcurrencyRuleCountsStripedCalls(t *testing.T) {
	e, _ := newTestEngine(t, 0)
	r := e.Resource("orders")
	contend(t, r)
	var held []Entry
	for range 3 {
		en, blk := r.Entry()
		if blk != nil {
			t.Fatal(blk)
		}
		held = append(held, en)
	}
	if err := e.LoadFlowRules([]FlowRule{{Name: "conc", Resource: "orders", Metric: MetricConcurrency, Threshold: 5}}); err != nil {
		t.Fatal(err)
	}
	passed := 0
	for range 10 {
		en, blk := r.Entry()
		if blk != nil {
			continue
		}
		passed++
		held = append(held, en)
	}
	if passed != 2 {
		t.Errorf("%d calls passed with 3 in flight under a limit of 5, want 2", passed)
	}
	for _, en := range held {
		en.Exit()
	}
	if n := r.Concurrency(); n != 0 {
		t.Errorf("%d calls left in flight", n)
	}
}
