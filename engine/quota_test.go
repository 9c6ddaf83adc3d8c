package engine

import (
	"testing"

	"github.com/sluicehq/sluice/engine/window"
)

const day = 86_400_000

// passes counts how many of n calls pass, each of count, one a minute.
func passesOf(r *Resource, clock *ManualClock, n int, opts ...EntryOption) int {
	passed := 0
	for range n {
		if tryPass(r, opts...) {
			passed++
		}
		clock.Advance(60_000)
	}
	return passed
}

func TestADayQuotaKeepsItsCountWhenItsThresholdChanges(t *testing.T) {
	e, clock := newTestEngine(t, 1_000_000, FlowRule{Name: "daily", Resource: "r", Threshold: 100, StatIntervalMs: day})
	r := e.Resource("r")
	if got := passesOf(r, clock, 60); got != 60 {
		t.Fatalf("%d of 60 passed under a quota of 100", got)
	}
	if err := e.LoadFlowRules([]FlowRule{{Name: "daily", Resource: "r", Threshold: 80, StatIntervalMs: day}}); err != nil {
		t.Fatal(err)
	}
	if got := passesOf(r, clock, 60); got != 20 {
		t.Fatalf("after lowering the quota to 80 with 60 passed, %d passed, want 20", got)
	}
}

func TestAHotspotDayQuotaKeepsItsValuesWhenItChanges(t *testing.T) {
	e, clock := newTestEngine(t, 1_000_000)
	load := func(threshold float64) {
		t.Helper()
		if err := e.LoadHotspotRules([]HotspotRule{{Name: "per-user", Resource: "r", ParamKey: "user", Threshold: threshold, StatIntervalMs: day}}); err != nil {
			t.Fatal(err)
		}
	}
	load(50)
	r := e.Resource("r")
	if got := passesOf(r, clock, 30, WithParam("user", "ann")); got != 30 {
		t.Fatalf("%d of 30 passed", got)
	}
	load(40)
	if got := passesOf(r, clock, 30, WithParam("user", "ann")); got != 10 {
		t.Fatalf("ann passed %d more after the quota fell to 40, want 10", got)
	}
	if got := passesOf(r, clock, 50, WithParam("user", "bob")); got != 40 {
		t.Fatalf("bob passed %d, want 40", got)
	}
}

func TestQuotaWindowsSurviveARestart(t *testing.T) {
	flow := FlowRule{Name: "daily", Resource: "r", Threshold: 1000, StatIntervalMs: day}
	hot := HotspotRule{Name: "per-user", Resource: "h", ParamKey: "user", Threshold: 10, StatIntervalMs: 3_600_000}
	before, clock := newTestEngine(t, 1_000_000, flow)
	if err := before.LoadHotspotRules([]HotspotRule{hot}); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if !tryPass(before.Resource("r"), WithCount(2)) {
			t.Fatal("blocked under the quota")
		}
		clock.Advance(1000)
	}
	for range 7 {
		tryPass(before.Resource("h"), WithParam("user", "ann"))
	}
	saved := before.QuotaWindows()
	if len(saved) != 2 {
		t.Fatalf("saved %+v, want the flow rule's window and ann's", saved)
	}
	for _, w := range saved {
		if len(w.Spans) > maxQuotaSpans {
			t.Fatalf("%d spans saved, want at most %d", len(w.Spans), maxQuotaSpans)
		}
	}

	after, clock2 := newTestEngine(t, clock.NowMs()+30_000)
	after.RestoreQuotaWindows(saved)
	if err := after.LoadFlowRules([]FlowRule{flow}); err != nil {
		t.Fatal(err)
	}
	if err := after.LoadHotspotRules([]HotspotRule{hot}); err != nil {
		t.Fatal(err)
	}
	r, h := after.Resource("r"), after.Resource("h")
	passed := 0
	for range 1000 {
		if tryPass(r) {
			passed++
		}
	}
	// Merged spans may hold a few passes back longer; never more pass.
	if passed > 400 || passed < 390 {
		t.Fatalf("after a restart with 600 of 1000 passed, %d more passed, want 400 (a few fewer at most)", passed)
	}
	if got := passesOf(h, clock2, 5, WithParam("user", "ann")); got != 3 {
		t.Fatalf("ann passed %d more after the restart, want 3", got)
	}
	clock2.Advance(day)
	if !tryPass(r, WithCount(1000)) {
		t.Fatal("a day later, the restored passes still count")
	}
}

// TestUnclaimedQuotaWindowsAreForgotten: windows restored for a rule that
// is not loaded stay for a rule of that name until no pass in them could
// count, then the next load forgets them.
func TestUnclaimedQuotaWindowsAreForgotten(t *testing.T) {
	e, clock := newTestEngine(t, 1_000_000)
	e.RestoreQuotaWindows([]QuotaWindow{{Resource: "r", Rule: "gone", Spans: []window.Marked{{AtMs: clock.NowMs(), Passes: 5}}}})
	other := []FlowRule{{Name: "other", Resource: "o", Threshold: 10}}
	if err := e.LoadFlowRules(other); err != nil {
		t.Fatal(err)
	}
	if len(e.restored) != 1 {
		t.Fatalf("restored %v, want the window kept within the day its passes count", e.restored)
	}
	clock.Advance(MaxStatIntervalMs)
	if err := e.LoadFlowRules(other); err != nil {
		t.Fatal(err)
	}
	if len(e.restored) != 0 {
		t.Fatalf("restored %v a day later, want none", e.restored)
	}
}
