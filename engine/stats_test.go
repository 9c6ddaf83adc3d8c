package engine

import (
	"errors"
	"reflect"
	"testing"
)

func TestCollectMinutes(t *testing.T) {
	const minute0 = 1_700_000_040_000 // a minute boundary
	e, clock := newTestEngine(t, minute0, FlowRule{Name: "cap", Resource: "orders", Threshold: 5, Mode: ModeEnforce})
	orders := e.Resource("orders")
	call := func(rtMs int64, err error) {
		if en, blk := orders.Entry(); blk == nil {
			clock.Advance(rtMs)
			en.Exit(WithError(err))
		}
	}
	clock.Set(minute0 + 1_000)
	call(10, nil)
	call(30, errors.New("boom"))
	clock.Set(minute0 + 2_000)
	for range 6 {
		call(0, nil) // 4 pass (the first call is a second old: 5 in the second), 2 blocked
	}
	first := e.CollectMinutes()
	want := MinuteStat{Resource: "orders", StartMs: minute0, Counts: Counts{Calls: Calls{Pass: 6, Block: 2, Complete: 6, Error: 1}, RtSumMs: 40, MinRtMs: 0, MaxRtMs: 30, MaxConcurrency: 1,
		// The six calls at 2 s; the two at 1 s are more than a second before.
		BusiestSecond: 6},
		BlockedBy: []RuleBlocks{{Reason: ReasonFlow, Rule: "cap", Blocked: 2}}}
	if len(first) != 1 || !reflect.DeepEqual(first[0], want) {
		t.Fatalf("first collection = %+v, want [%+v]", first, want)
	}
	if again := e.CollectMinutes(); len(again) != 0 {
		t.Fatalf("collection without new traffic = %+v, want nothing", again)
	}

	// More traffic in the same minute is a delta; the extremes are the
	// minute's so far.
	clock.Set(minute0 + 30_000)
	call(50, nil)
	delta := e.CollectMinutes()
	want = MinuteStat{Resource: "orders", StartMs: minute0, Counts: Counts{Calls: Calls{Pass: 1, Complete: 1}, RtSumMs: 50, MinRtMs: 0, MaxRtMs: 50, MaxConcurrency: 1, BusiestSecond: 6}}
	if len(delta) != 1 || !reflect.DeepEqual(delta[0], want) {
		t.Fatalf("delta = %+v, want [%+v]", delta, want)
	}

	// Traffic late in a minute, collected after it ended: finished.
	clock.Set(minute0 + 59_990)
	call(20, nil) // exits at +60_010: completes in the next minute
	clock.Set(minute0 + 61_000)
	got := e.CollectMinutes()
	if len(got) != 2 {
		t.Fatalf("collection across a minute edge = %+v, want two minutes", got)
	}
	byStart := map[int64]MinuteStat{got[0].StartMs: got[0], got[1].StartMs: got[1]}
	old, cur := byStart[minute0], byStart[minute0+60_000]
	if !old.Finished || old.Pass != 1 || old.Complete != 0 {
		t.Fatalf("finished minute = %+v, want finished with 1 pass", old)
	}
	if cur.Finished || cur.Complete != 1 || cur.RtSumMs != 20 || cur.Pass != 0 {
		t.Fatalf("current minute = %+v, want 1 complete of 20 ms, not finished", cur)
	}
}

// TestCollectMinutesAcrossReuse: a minute slot reused for a later minute
// starts its collection from zero.
func TestCollectMinutesAcrossReuse(t *testing.T) {
	e, clock := newTestEngine(t, 0)
	r := e.Resource("orders")
	tryPass(r)
	if got := e.CollectMinutes(); len(got) != 1 || got[0].Pass != 1 {
		t.Fatalf("minute 0 = %+v", got)
	}
	clock.Set(2 * 60_000) // the same slot as minute 0
	tryPass(r)
	tryPass(r)
	got := e.CollectMinutes()
	if len(got) != 1 || got[0].StartMs != 120_000 || got[0].Pass != 2 {
		t.Fatalf("minute 2 = %+v, want 2 passes at 120000", got)
	}
}

// TestLiveIsTheLastSecond, with passes counted by the statistics alone
// and with passes claimed on the count a rule's pass log reads.
func TestLiveIsTheLastSecond(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rules []FlowRule
	}{
		{"no rule", nil},
		{"a QPS rule", []FlowRule{{Resource: "orders", Threshold: 1e6}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, clock := newTestEngine(t, 10_000, tt.rules...)
			r := e.Resource("orders")
			for i := range 20 {
				clock.Set(10_000 + int64(i)*100)
				tryPass(r)
			}
			// At 11_950 the window holds the buckets 11_000 … 11_900: 10 calls.
			clock.Set(11_950)
			if got := r.Live().PassQps; got != 10 {
				t.Fatalf("pass qps %v, want 10", got)
			}
			if got := e.CollectMinutes(); len(got) != 1 || got[0].Pass != 20 || got[0].Complete != 20 {
				t.Fatalf("minutes = %+v, want 20 passes and completions", got)
			}
			clock.Set(20_000)
			if got := r.Live(); got != (LiveStats{}) {
				t.Fatalf("live after idling = %+v, want zero", got)
			}
		})
	}
}

func TestResources(t *testing.T) {
	e, clock := newTestEngine(t, 5_000, FlowRule{Resource: "ruled", Threshold: 1})
	clock.Set(6_000)
	e.Entry("called")
	names := map[string]int64{}
	for _, r := range e.Resources() {
		names[r.Name()] = r.FirstSeenMs()
	}
	if len(names) != 2 || names["ruled"] != 5_000 || names["called"] != 6_000 {
		t.Fatalf("resources = %v, want ruled@5000 and called@6000", names)
	}
	if e.Lookup("called") == nil || e.Lookup("never") != nil {
		t.Fatal("Lookup found an unknown resource or missed a known one")
	}
	if len(e.Resources()) != 2 {
		t.Fatal("Lookup created a resource")
	}
}

func TestCountsMerge(t *testing.T) {
	tests := []struct {
		name      string
		into, add Counts
		want      Counts
	}{
		{
			name: "counts add, extremes merge",
			into: Counts{Calls: Calls{Pass: 1, Block: 2, ShadowBlock: 3, Complete: 1, Error: 1}, RtSumMs: 10, MinRtMs: 10, MaxRtMs: 10, MaxConcurrency: 4},
			add:  Counts{Calls: Calls{Pass: 10, Block: 20, ShadowBlock: 30, Complete: 2, Error: 0}, RtSumMs: 5, MinRtMs: 2, MaxRtMs: 3, MaxConcurrency: 2},
			want: Counts{Calls: Calls{Pass: 11, Block: 22, ShadowBlock: 33, Complete: 3, Error: 1}, RtSumMs: 15, MinRtMs: 2, MaxRtMs: 10, MaxConcurrency: 4},
		},
		{
			name: "a minimum without completions is ignored",
			into: Counts{Calls: Calls{Complete: 2}, RtSumMs: 10, MinRtMs: 4, MaxRtMs: 6},
			add:  Counts{Calls: Calls{Pass: 1}, MinRtMs: 0},
			want: Counts{Calls: Calls{Pass: 1, Complete: 2}, RtSumMs: 10, MinRtMs: 4, MaxRtMs: 6},
		},
		{
			name: "the first minimum is taken whatever it is",
			into: Counts{Calls: Calls{Pass: 3}},
			add:  Counts{Calls: Calls{Complete: 1}, RtSumMs: 9, MinRtMs: 9, MaxRtMs: 9},
			want: Counts{Calls: Calls{Pass: 3, Complete: 1}, RtSumMs: 9, MinRtMs: 9, MaxRtMs: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.into
			got.Merge(tt.add)
			if got != tt.want {
				t.Errorf("Merge = %+v, want %+v", got, tt.want)
			}
		})
	}
}
