package engine

import "testing"

// TestPrioritizedBorrowsTheComingWindow: when a reject rule's window is
// full, a prioritized call passes with the wait until room is made, if at
// most OccupyTimeoutMs; a call that is not prioritized is blocked.
func TestPrioritizedBorrowsTheComingWindow(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{Resource: "r", Threshold: 2})
	r := e.Resource("r")
	clock.Set(100)
	tryPass(r)
	clock.Set(300)
	tryPass(r)
	clock.Set(599)
	if _, blk := r.Entry(WithPrioritized(), WithNoWait()); blk == nil {
		t.Fatal("a prioritized call passed with 501 ms to wait")
	}
	clock.Set(600)
	if _, blk := r.Entry(WithNoWait()); blk == nil {
		t.Fatal("a call that is not prioritized passed a full window")
	}
	en, blk := r.Entry(WithPrioritized(), WithNoWait())
	if blk != nil || en.WaitMs() != 500 {
		t.Fatalf("prioritized: %v, wait %d; want a pass after 500 ms", blk, en.WaitMs())
	}
	en.Exit()
	// The borrowed pass took the room the first pass left at 1100, and
	// counts from then: when the second leaves, at 1300, there is room
	// for one call, not two as if it counted from 600.
	clock.Set(1100)
	if got := passes(r, 5); got != 0 {
		t.Fatalf("at 1100, %d passes: the borrowed quota was lent again", got)
	}
	clock.Set(1300)
	if got := passes(r, 5); got != 1 {
		t.Fatalf("at 1300, %d passes, want 1", got)
	}
}

// TestPrioritizedHoldsThreshold: prioritized calls hammering a reject
// rule, each counted when its wait ends, never put more than the
// threshold in any window, bursts at bucket ends included.
func TestPrioritizedHoldsThreshold(t *testing.T) {
	for _, threshold := range []int64{1, 10, 100} {
		e, clock := newTestEngine(t, 0, FlowRule{Resource: "r", Threshold: float64(threshold)})
		r := e.Resource("r")
		var times []int64
		for ms := range int64(8000) {
			clock.Set(ms)
			for {
				opts := []EntryOption{WithNoWait()}
				if ms%3 == 0 {
					opts = append(opts, WithPrioritized())
				}
				en, blk := r.Entry(opts...)
				if blk != nil {
					break
				}
				times = append(times, ms+en.WaitMs())
				en.Exit()
			}
		}
		if worst := maxInAnyWindow(times, 1000); worst > int(threshold) {
			t.Errorf("threshold %d: a window held %d passes", threshold, worst)
		}
		if len(times) < int(7*threshold) {
			t.Errorf("threshold %d: %d passes in 8 s", threshold, len(times))
		}
	}
}

// TestPrioritizedOnlyBorrowsFromReject: a throttling rule does not lend.
func TestPrioritizedOnlyBorrowsFromReject(t *testing.T) {
	e, _ := newTestEngine(t, 0, FlowRule{Resource: "r", Threshold: 1, ControlBehavior: BehaviorThrottling})
	r := e.Resource("r")
	tryPass(r)
	if _, blk := r.Entry(WithPrioritized(), WithNoWait()); blk == nil {
		t.Fatal("a throttling rule lent quota")
	}
}
