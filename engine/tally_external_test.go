package engine

import "testing"

func TestTallyCountsOutsideDecisions(t *testing.T) {
	e, clock := newTestEngine(t, 1_000_000, FlowRule{Name: "ten", Resource: "r", Threshold: 10})
	r := e.Resource("r")
	r.Tally(true, 4)
	r.Tally(false, 3)
	r.Tally(false, 0)
	if s := r.Live(); s.PassQps != 4 || s.BlockQps != 4 {
		t.Fatalf("live after 4 passes and 3+1 blocks tallied: %+v", s)
	}
	// The rule's window holds the tallied passes: six more fit, not ten.
	for i := range 6 {
		if !tryPass(r) {
			t.Fatalf("call %d of the 6 left was blocked", i+1)
		}
	}
	if tryPass(r) {
		t.Fatal("a call past the rule's 10, 4 of them tallied, passed")
	}
	if s := r.Status(false); s.Remaining != 0 {
		t.Fatalf("status after the window filled: %+v", s)
	}
	clock.Advance(1000)
	if s := r.Status(false); s.Remaining != 10 {
		t.Fatalf("status a window later: %+v", s)
	}
	if r.Concurrency() != 0 {
		t.Fatalf("tallied passes left %d in flight", r.Concurrency())
	}
}

func TestTallyWithoutRules(t *testing.T) {
	e, _ := newTestEngine(t, 1_000_000)
	r := e.Resource("bare")
	r.Tally(true, 2)
	if s := r.Live(); s.PassQps != 2 {
		t.Fatalf("live: %+v", s)
	}
	var nilResource *Resource
	nilResource.Tally(true, 1)
}
