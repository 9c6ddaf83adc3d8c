package window

import (
	"sync"
	"testing"
)

func newTally() *Tally {
	t := &Tally{}
	t.Init()
	return t
}

// count records n events of ev at nowMs, as a resource does.
func (t *Tally) count(nowMs int64, ev Event, n int64) {
	t.Open(nowMs)
	t.Add(ev, n)
}

func TestTallySumsTheLastSecond(t *testing.T) {
	tests := []struct {
		name  string
		nowMs int64
		want  int64
	}{
		{"before any span", 9_999, 0},
		{"the first span", 10_050, 1},
		{"the whole ring", 10_999, 10},
		{"the oldest span gone", 11_000, 9},
		{"the spans from 10_500", 11_450, 5},
		{"all gone", 11_900, 0},
	}
	tally := newTally()
	for k := range int64(10) {
		tally.count(10_000+k*100, Pass, 1)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tally.SumAll(tt.nowMs)[Pass]; got != tt.want {
				t.Fatalf("SumAll(%d) = %d, want %d", tt.nowMs, got, tt.want)
			}
		})
	}
}

func TestTallySkippedSpansHoldNothing(t *testing.T) {
	tally := newTally()
	tally.count(1_000, Pass, 3)
	tally.count(1_450, Block, 2) // spans 1_100 … 1_300 skipped
	tally.count(5_000, Pass, 1)  // the whole ring skipped
	tally.count(5_300, Pass, 4)
	for i := range tally.Len() {
		s := tally.At(i)
		want := int64(0)
		switch s.StartMs() {
		case 5_000:
			want = 1
		case 5_300:
			want = 4
		}
		if s.StartMs() < 4_400 || s.StartMs() > 5_300 || s.Get(Pass) != want || s.Get(Block) != 0 {
			t.Errorf("At(%d) = span %d with %d passes, %d blocks; want a span in 4400…5300 with %d passes",
				i, s.StartMs(), s.Get(Pass), s.Get(Block), want)
		}
	}
	if got := tally.SumAll(5_350); got[Pass] != 5 || got[Block] != 0 {
		t.Fatalf("SumAll = %v, want 5 passes and no block", got)
	}
}

// TestTallyCountsClaimedPasses: passes added to the claimed counter after
// Open count in the span of their time, as those given to Add do.
func TestTallyCountsClaimedPasses(t *testing.T) {
	tally := &Tally{}
	tally.Init()
	claimed := tally.Claimed()
	tally.Open(1_000)
	claimed.Add(2)
	tally.Open(1_150)
	claimed.Add(3)
	tally.count(1_160, Pass, 1)
	if got := tally.At(slotOf(1_000, SpanMs, Spans)).Get(Pass); got != 2 {
		t.Errorf("span 1000 = %d passes, want 2", got)
	}
	if got := tally.At(slotOf(1_100, SpanMs, Spans)).Get(Pass); got != 4 {
		t.Errorf("span 1100 = %d passes, want 4", got)
	}
	if got := tally.SumAll(1_150)[Pass]; got != 6 {
		t.Errorf("SumAll = %d, want 6", got)
	}
	if got := tally.Collect(nil); len(got) != 1 || got[0].Counts[Pass] != 6 {
		t.Errorf("Collect = %+v, want 6 passes", got)
	}
}

// TestTallyKeepsShadowBlocksOnceCounted: shadow blocks, kept apart from
// the first one on, sum and collect as the other events do.
func TestTallyKeepsShadowBlocksOnceCounted(t *testing.T) {
	tally := newTally()
	tally.count(1_000, Pass, 1)
	if tally.shadow.Load() != nil || tally.SumAll(1_000)[ShadowBlock] != 0 {
		t.Fatal("shadow blocks kept before any was counted")
	}
	tally.count(1_100, ShadowBlock, 2)
	tally.count(1_250, ShadowBlock, 1)
	for _, tt := range []struct{ startMs, want int64 }{{1_000, 0}, {1_100, 2}, {1_200, 1}} {
		if got := tally.At(slotOf(tt.startMs, SpanMs, Spans)).Get(ShadowBlock); got != tt.want {
			t.Errorf("span %d: %d shadow blocks, want %d", tt.startMs, got, tt.want)
		}
	}
	if got := tally.SumAll(1_250); got[ShadowBlock] != 3 || got[Pass] != 1 {
		t.Errorf("SumAll = %v, want 3 shadow blocks and 1 pass", got)
	}
	if got := tally.SumAll(2_150)[ShadowBlock]; got != 1 {
		t.Errorf("SumAll a second on = %d, want the 1 of span 1200", got)
	}
	if got := tally.Collect(nil); len(got) != 1 || got[0].Counts[ShadowBlock] != 3 || got[0].Counts[Pass] != 1 {
		t.Fatalf("Collect = %+v, want 3 shadow blocks and 1 pass", got)
	}
	tally.count(MinuteMs+5, ShadowBlock, 4)
	if got := tally.Collect(nil); len(got) != 1 || got[0].StartMs != MinuteMs || got[0].Counts[ShadowBlock] != 4 {
		t.Fatalf("Collect in the next minute = %+v, want 4 shadow blocks at %d", got, MinuteMs)
	}
}

// TestTallyMarksPast32Bits: a span's mark keeps the low 32 bits of the
// totals; a second's counts stay exact when the totals cross 2^32 in it,
// and a second whose response times sum past 2^32 ms (RtSum, kept whole)
// reads whole, as do the minute's counts.
func TestTallyMarksPast32Bits(t *testing.T) {
	const bigRtMs = 3_600_000 // an hour each: 1,200 of them pass 2^32 ms
	tally := newTally()
	tally.count(0, Pass, 1<<32-3)
	tally.count(0, Block, 1<<33-1)
	tally.count(0, ShadowBlock, 1<<32-1)
	tally.count(5_000, Pass, 1)
	tally.count(5_100, Pass, 5) // the total crosses 2^32 here
	tally.count(5_200, Block, 7)
	tally.Open(5_250)
	tally.AddComplete(1_200, bigRtMs, 0, 1_200)
	tally.count(5_300, ShadowBlock, 2)
	for _, tt := range []struct {
		nowMs int64
		ev    Event
		want  int64
	}{
		{5_999, Pass, 6},
		{6_050, Pass, 5},
		{6_150, Block, 7},
		{6_150, RtSum, 1_200 * bigRtMs},
		{6_150, Complete, 1_200},
		{6_250, ShadowBlock, 2},
	} {
		if got := tally.SumAll(tt.nowMs)[tt.ev]; got != tt.want {
			t.Errorf("SumAll(%d)[%d] = %d, want %d", tt.nowMs, tt.ev, got, tt.want)
		}
	}
	if s := tally.At(slotOf(5_100, SpanMs, Spans)); s.Get(Pass) != 5 {
		t.Errorf("span 5100: %d passes, want 5", s.Get(Pass))
	}
	got := tally.Collect(nil)
	if len(got) != 1 || got[0].Counts[Pass] != 1<<32+3 || got[0].Counts[RtSum] != 1_200*bigRtMs || got[0].Counts[ShadowBlock] != 1<<32+1 {
		t.Fatalf("Collect = %+v, want every count whole", got)
	}
}

// TestTallyExtremesKeep32Bits: a minute's extremes are exact up to 2^32-2
// and count as that past it.
func TestTallyExtremesKeep32Bits(t *testing.T) {
	const most = 1<<32 - 2
	tally := newTally()
	tally.Open(1_000)
	x := tally.Extremes(1_000)
	x.ObserveRt(most)
	x.ObserveRt(1 << 40)
	x.ObserveConcurrency(1 << 33)
	tally.AddComplete(2, 7, 0, 2)
	got := tally.Collect(nil)
	if len(got) != 1 || got[0].MinRtMs != most || got[0].MaxRtMs != most || got[0].MaxConcurrency != most {
		t.Fatalf("Collect = %+v, want the extremes at %d", got, int64(most))
	}
	tally.Open(MinuteMs)
	tally.Extremes(MinuteMs).ObserveRt(0)
	tally.AddComplete(1, 0, 0, 1)
	if got := tally.Collect(nil); len(got) != 1 || got[0].MinRtMs != 0 || got[0].MaxRtMs != 0 {
		t.Fatalf("Collect = %+v, want a response time of 0 kept", got)
	}
}

func TestTallyClockSteppingBackLosesNothing(t *testing.T) {
	tally := newTally()
	tally.count(5_000, Pass, 4)
	tally.count(4_000, Pass, 1) // back a second: counted in the newest span
	tally.count(4_950, Pass, 2)
	if got := tally.SumAll(5_000)[Pass]; got != 7 {
		t.Fatalf("SumAll = %d, want 7", got)
	}
	if s := tally.At(slotOf(5_000, SpanMs, Spans)); s.StartMs() != 5_000 || s.Get(Pass) != 7 {
		t.Fatalf("newest span = %d with %d passes, want 5000 with 7", s.StartMs(), s.Get(Pass))
	}
}

func TestTallyCollectsMinutes(t *testing.T) {
	const minute1, minute2 = MinuteMs, 2 * MinuteMs
	tally := newTally()
	if got := tally.Collect(nil); len(got) != 0 {
		t.Fatalf("collection of nothing = %+v", got)
	}
	tally.Open(minute1 + 10)
	x := tally.Extremes(minute1 + 10)
	tally.AddComplete(2, 30, 1, 2)
	x.ObserveRt(30)
	tally.Open(minute1 + 20)
	x = tally.Extremes(minute1 + 20)
	tally.AddComplete(1, 5, 0, 1)
	x.ObserveRt(5)
	x.ObserveConcurrency(3)
	tally.count(minute1+59_999, Pass, 2)
	want := Minute{StartMs: minute1, MinRtMs: 5, MaxRtMs: 30, MaxConcurrency: 3, BusiestSecond: 2}
	want.Counts[Complete], want.Counts[RtSum], want.Counts[Error], want.Counts[Pass] = 3, 65, 1, 2
	if got := tally.Collect(nil); len(got) != 1 || got[0] != want {
		t.Fatalf("first collection = %+v, want [%+v]", got, want)
	}
	if got := tally.Collect(nil); len(got) != 0 {
		t.Fatalf("collection without new calls = %+v, want nothing", got)
	}

	// A call late in minute 1 after its collection, then minute 2: the
	// older minute has what came before minute 2 began.
	tally.count(minute1+59_999, Block, 1)
	tally.Open(minute2 + 5)
	x = tally.Extremes(minute2 + 5)
	tally.AddComplete(1, 0, 0, 1)
	x.ObserveRt(0)
	got := tally.Collect(nil)
	older := Minute{StartMs: minute1, MinRtMs: 5, MaxRtMs: 30, MaxConcurrency: 3, BusiestSecond: 3}
	older.Counts[Block] = 1
	// Its busiest second began in minute 1: a second counts in the minute
	// it ends in.
	newer := Minute{StartMs: minute2, BusiestSecond: 3}
	newer.Counts[Complete] = 1
	if len(got) != 2 || got[0] != older || got[1] != newer {
		t.Fatalf("collection across minutes = %+v, want [%+v %+v]", got, older, newer)
	}

	// Minute 4 takes minute 2's slot; minute 3 saw nothing.
	tally.count(4*MinuteMs, Pass, 5)
	got = tally.Collect(nil)
	if len(got) != 1 || got[0].StartMs != 4*MinuteMs || got[0].Counts[Pass] != 5 || got[0].Counts[Complete] != 0 {
		t.Fatalf("minute 4 = %+v, want 5 passes at %d", got, 4*MinuteMs)
	}
	if start, ok := tally.NewestMinuteMs(); !ok || start != 4*MinuteMs {
		t.Fatalf("NewestMinuteMs = %d, %v; want %d", start, ok, 4*MinuteMs)
	}
}

// TestTallyKeepsTheBusiestSecond: a minute's busiest second is any ten
// spans in a row, not a calendar second, and one that ends in a minute
// counts there even when it began in the one before.
func TestTallyKeepsTheBusiestSecond(t *testing.T) {
	const minute1, minute2 = MinuteMs, 2 * MinuteMs
	tally := newTally()
	tally.count(minute1, Pass, 50)
	tally.count(minute1+500, Block, 30)
	tally.count(minute1+1_200, Pass, 20)
	if got := tally.Collect(nil); len(got) != 1 || got[0].BusiestSecond != 80 {
		t.Fatalf("collection = %+v, want the busiest second at 80 (50 passed, 30 blocked)", got)
	}
	tally.count(minute2-50, Pass, 10)
	if got := tally.Collect(nil); len(got) != 1 || got[0].BusiestSecond != 80 {
		t.Fatalf("collection after a quiet minute's end = %+v, want the busiest second still 80", got)
	}
	tally.count(minute2+50, Pass, 70)
	got := tally.Collect(nil)
	if len(got) != 1 || got[0].StartMs != minute2 || got[0].BusiestSecond != 80 {
		t.Fatalf("collection of minute 2 = %+v, want its busiest second at 80 (10 at the end of minute 1, 70 at its start)", got)
	}
	tally.count(minute2+30_000, Pass, 1)
	got = tally.Collect(nil)
	if len(got) != 1 || got[0].BusiestSecond != 80 {
		t.Fatalf("collection after a lone call = %+v, want the busiest second kept at 80", got)
	}
}

// TestTallyConcurrentWritersAndCollector has writers move through several
// minutes together, racing to start every span (and half of them to keep
// the first shadow block), while a collector takes what they counted:
// every count is collected exactly once.
func TestTallyConcurrentWritersAndCollector(t *testing.T) {
	tally := newTally()
	const writers, steps, stepMs = 8, 3_000, 97 // about 5 minutes
	var wg sync.WaitGroup
	for w := range writers {
		ev := []Event{Pass, ShadowBlock}[w%2]
		wg.Go(func() {
			for i := range int64(steps) {
				tally.count(i*stepMs, ev, 1)
			}
		})
	}
	collected := collectWhile(tally, &wg)
	var passes, shadowBlocks int64
	for _, m := range collected {
		passes, shadowBlocks = passes+m.Counts[Pass], shadowBlocks+m.Counts[ShadowBlock]
	}
	if want := int64(writers / 2 * steps); passes != want || shadowBlocks != want {
		t.Fatalf("collected %d passes and %d shadow blocks, want %d each", passes, shadowBlocks, want)
	}
}

func TestFloorToAndSlotOf(t *testing.T) {
	tests := []struct {
		ms, unit int64
		n        int
		floor    int64
		slot     int
	}{
		{0, 100, 10, 0, 0},
		{99, 100, 10, 0, 0},
		{1_050, 100, 10, 1_000, 0},
		{1_150, 100, 10, 1_100, 1},
		{-1, 100, 10, -100, 9},
		{-100, 100, 10, -100, 9},
		{-101, 100, 10, -200, 8},
		{119_999, MinuteMs, 2, MinuteMs, 1},
	}
	for _, tt := range tests {
		if got := floorTo(tt.ms, tt.unit); got != tt.floor {
			t.Errorf("floorTo(%d, %d) = %d, want %d", tt.ms, tt.unit, got, tt.floor)
		}
		if got := slotOf(tt.ms, tt.unit, tt.n); got != tt.slot {
			t.Errorf("slotOf(%d, %d, %d) = %d, want %d", tt.ms, tt.unit, tt.n, got, tt.slot)
		}
	}
}

// collectWhile collects t's finished minutes over and over until the
// writers are done, then once more, and returns every minute collected.
func collectWhile(t *Tally, writers *sync.WaitGroup) []Minute {
	var collected []Minute
	done := make(chan struct{})
	var collector sync.WaitGroup
	collector.Go(func() {
		for {
			select {
			case <-done:
				collected = t.Collect(collected)
				return
			default:
				collected = t.Collect(collected)
			}
		}
	})
	writers.Wait()
	close(done)
	collector.Wait()
	return collected
}

// TestTallyInFlightNeverBelowTheCalls: while writers count what moves
// the passes or the completions without moving the calls in flight
// (outcomes reported with no call, passes that never enter flight, calls
// that pass and complete), a call that reserves its place, alone in
// flight, always finds itself in flight, and InFlight never finds fewer
// than none: a concurrency limit read so is never passed.
func TestTallyInFlightNeverBelowTheCalls(t *testing.T) {
	for _, striped := range []bool{false, true} {
		var tally Tally
		tally.Init()
		tally.Open(0)
		if striped {
			tally.stripe()
		}
		stop := make(chan struct{})
		var writers sync.WaitGroup
		for w := range 3 {
			writers.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					switch w {
					case 0:
						tally.AddComplete(2, 0, 0, 0)
					case 1:
						tally.claimed.Add(1)
						tally.AddInFlight(-1)
					default:
						tally.Add(Pass, 1)
						tally.AddComplete(1, 0, 0, 1)
					}
				}
			})
		}
		for range 200_000 {
			if n := tally.ReserveInFlight(1); n < 1 {
				t.Fatalf("striped %v: a reservation alone in flight read %d in flight", striped, n)
			}
			tally.AddInFlight(-1)
			if n := tally.InFlight(); n < 0 {
				t.Fatalf("striped %v: %d in flight", striped, n)
			}
		}
		close(stop)
		writers.Wait()
		if n := tally.InFlight(); n != 0 {
			t.Errorf("striped %v: %d in flight once every call left, want 0", striped, n)
		}
	}
}
