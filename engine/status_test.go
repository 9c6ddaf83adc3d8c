package engine

import "testing"

func TestStatusOfAFlowRule(t *testing.T) {
	e, clock := newTestEngine(t, 1_000_000, FlowRule{Name: "ten", Resource: "r", Threshold: 10})
	r := e.Resource("r")
	if s := r.Status(false); !s.Known || s.Remaining != 10 || s.ResetMs != 0 || s.Limit != 10 || s.IntervalMs != 1000 || s.Rule != "ten" {
		t.Fatalf("idle: %+v", s)
	}
	for range 3 {
		tryPass(r)
	}
	clock.Advance(400)
	for range 7 {
		tryPass(r)
	}
	// The three passes of 400 ms ago leave the window first.
	if s := r.Status(false); s.Remaining != 0 || s.ResetMs != 600 {
		t.Fatalf("full: %+v, want 0 left, reset in 600 ms", s)
	}
	if tryPass(r) {
		t.Fatal("an eleventh call passed")
	}
	if s := r.Status(true, WithCount(4)); s.Remaining != 0 || s.ResetMs != 1000 {
		t.Fatalf("blocked, 4 wanted: %+v, want reset in 1000 ms (the passes of now leave then)", s)
	}
	clock.Advance(600)
	if s := r.Status(false); s.Remaining != 3 || s.ResetMs != 400 {
		t.Fatalf("after the first three left: %+v", s)
	}
}

func TestStatusOfADayQuotaPerValue(t *testing.T) {
	e, clock := newTestEngine(t, 1_000_000)
	if err := e.LoadHotspotRules([]HotspotRule{{Name: "daily", Resource: "r", ParamKey: "user", Threshold: 1000, StatIntervalMs: 86_400_000}}); err != nil {
		t.Fatal(err)
	}
	r := e.Resource("r")
	for range 250 {
		if !tryPass(r, WithParam("user", "ann"), WithCount(4)) {
			t.Fatal("blocked under the quota")
		}
		clock.Advance(60_000)
	}
	if tryPass(r, WithParam("user", "ann")) {
		t.Fatal("the 1001st call of the day passed")
	}
	if !tryPass(r, WithParam("user", "bob")) {
		t.Fatal("another value was blocked")
	}
	s := r.Status(true, WithParam("user", "ann"))
	// A log for 1,000 marks passes in groups of 10, each when its last
	// pass is: the first ten passed 250, 249 and 248 minutes ago, and
	// leave the day together, a day after the last of them.
	if !s.Known || s.Remaining != 0 || s.Limit != 1000 || s.ResetMs != 86_400_000-248*60_000 {
		t.Fatalf("ann: %+v", s)
	}
	if s := r.Status(false, WithParam("user", "bob")); s.Remaining != 999 {
		t.Fatalf("bob: %+v", s)
	}
	clock.Advance(s.ResetMs - 1)
	if tryPass(r, WithParam("user", "ann")) {
		t.Fatal("a call passed before the reset")
	}
	clock.Advance(1)
	if !tryPass(r, WithParam("user", "ann"), WithCount(4)) {
		t.Fatal("the first passes of the day did not leave it")
	}
}

func TestStatusUnknownWithoutAWindowRule(t *testing.T) {
	e, _ := newTestEngine(t, 1_000_000, FlowRule{Name: "c", Resource: "r", Metric: MetricConcurrency, Threshold: 5},
		FlowRule{Name: "s", Resource: "r", Threshold: 1, Mode: ModeShadow})
	if s := e.Resource("r").Status(false); s.Known {
		t.Fatalf("a concurrency rule and a shadow rule gave %+v", s)
	}
}

func TestShadowStatusReadsOnlyShadowRules(t *testing.T) {
	e, _ := newTestEngine(t, 1_000_000, FlowRule{Name: "watch", Resource: "r", Threshold: 2, Mode: ModeShadow},
		FlowRule{Name: "enforced", Resource: "both", Threshold: 100},
		FlowRule{Name: "watch-both", Resource: "both", Threshold: 1, Mode: ModeShadow})
	if err := e.LoadHotspotRules([]HotspotRule{{Name: "per-user", Resource: "h", ParamKey: "user", Threshold: 1, Mode: ModeShadow}}); err != nil {
		t.Fatal(err)
	}
	r := e.Resource("r")
	for range 3 {
		if !tryPass(r) {
			t.Fatal("a shadow rule blocked")
		}
	}
	if s := r.ShadowStatus(); !s.Known || s.Rule != "watch" || s.Limit != 2 || s.Remaining != 0 || s.ResetMs != 1000 {
		t.Fatalf("over the shadow rule: %+v, want watch, 0 left, reset in 1000 ms", s)
	}
	both := e.Resource("both")
	tryPass(both)
	if s := both.Status(false); s.Rule != "enforced" || s.Remaining != 99 {
		t.Fatalf("enforced status beside a shadow rule: %+v", s)
	}
	if s := both.ShadowStatus(); s.Rule != "watch-both" || s.Remaining != 0 {
		t.Fatalf("shadow status beside an enforced rule: %+v", s)
	}
	h := e.Resource("h")
	tryPass(h, WithParam("user", "ann"))
	if s := h.ShadowStatus(WithParam("user", "ann")); s.Rule != "per-user" || s.Remaining != 0 {
		t.Fatalf("ann over the shadow hotspot rule: %+v", s)
	}
	if s := h.ShadowStatus(WithParam("user", "bob")); s.Remaining != 1 {
		t.Fatalf("bob under the shadow hotspot rule: %+v", s)
	}
	if s := h.Status(false, WithParam("user", "ann")); s.Known {
		t.Fatalf("Status read a shadow hotspot rule: %+v", s)
	}
}
