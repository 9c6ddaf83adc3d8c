package metrics

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// newInstance registers an instance in st and returns its key.
func newInstance(t *testing.T, st *store.Store, uid string) int64 {
	t.Helper()
	in := store.Instance{UID: uid, App: "shop", FirstSeenMs: t0, LastSeenMs: t0}
	if err := st.PutInstance(t.Context(), &in); err != nil {
		t.Fatal(err)
	}
	return in.ID
}

// TestInstanceMinutesAddUpWithTheEngine: an instance's minute lands in the
// same row as the engine's own figures of that minute and in its rollups;
// the same minute reported again adds nothing; the instance's history
// holds only its own figures.
func TestInstanceMinutesAddUpWithTheEngine(t *testing.T) {
	clock := engine.NewManualClock(t0 + 10_000)
	p, eng, st := newPipeline(t, clock)
	calls(t, eng, "orders", 2, 0, 10)
	flush(t, p)
	a, b := newInstance(t, st, "a"), newInstance(t, st, "b")
	report := []store.MinuteDelta{
		{Resource: "orders", StartMs: t0, Counts: counts(4, 4, 2, 8, 1, 3)},
		{Resource: "reported-only", StartMs: t0 + store.MinuteMs, Counts: counts(1, 0, 0, 0, 0, 0)},
	}
	for _, tt := range []struct {
		name      string
		instance  int64
		wantAdded int
		wantPass  int64
	}{
		{"first report", a, 2, 6},
		{"retried report", a, 0, 6},
		{"another instance", b, 2, 10},
	} {
		added, err := p.AddInstanceMinutes(t.Context(), tt.instance, "shop", report)
		if err != nil {
			t.Fatal(err)
		}
		if added != tt.wantAdded {
			t.Errorf("%s: added %d minutes, want %d", tt.name, added, tt.wantAdded)
		}
		if got := minuteRows(t, st, "orders"); len(got) != 1 || got[0].Pass != tt.wantPass {
			t.Errorf("%s: orders %+v, want one minute of %d passes", tt.name, got, tt.wantPass)
		}
		hours, err := st.ResourceMetrics(t.Context(), "orders", t0, t0+store.HourMs, store.HourMs)
		if err != nil {
			t.Fatal(err)
		}
		if len(hours) != 1 || hours[0].Pass != tt.wantPass {
			t.Errorf("%s: the hour rollup %+v, want %d passes", tt.name, hours, tt.wantPass)
		}
	}
	step, err := StepNamed("1m")
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.History(t.Context(), HistoryQuery{Resource: "orders", Step: step, FromMs: t0, ToMs: t0 + store.HourMs, Instance: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.MetricPoint{{StartMs: t0, Counts: counts(4, 4, 2, 8, 1, 3)}}; !reflect.DeepEqual(h.Points, want) {
		t.Errorf("instance a's history %+v, want %+v", h.Points, want)
	}
	// The fleet's counters hold the instances' minutes once each, the
	// engine's own not at all.
	if got := p.fleet.rows(); len(got) != 2 || got[0] != (fleetRow{fleetKey: fleetKey{"shop", "orders"}, totals: sumOf(report[0].Counts, 2)}) ||
		got[1] != (fleetRow{fleetKey: fleetKey{"shop", "reported-only"}, totals: sumOf(report[1].Counts, 2)}) {
		t.Errorf("the fleet's series %+v", got)
	}
	if got := minuteRows(t, st, "reported-only"); len(got) != 1 || got[0].Pass != 2 {
		t.Errorf("reported-only: %+v, want one minute of 2 passes", got)
	}
}

// TestInstanceLiveAddsToTheEngines: the live figures are the engine's plus
// those of the instances that reported lately; an instance's figures leave
// InstanceLiveMs after its last report.
func TestInstanceLiveAddsToTheEngines(t *testing.T) {
	clock := engine.NewManualClock(t0 + 10_000)
	p, eng, _ := newPipeline(t, clock)
	calls(t, eng, "orders", 2, 0, 10)
	own := eng.Lookup("orders").Live()
	p.SetInstanceLive("a", map[string]engine.LiveStats{
		"orders":    {PassQps: 3, CompleteQps: 2, AvgRtMs: 40, Concurrency: 1},
		"elsewhere": {BlockQps: 7},
	})
	p.SetInstanceLive("b", map[string]engine.LiveStats{"orders": {PassQps: 1}})
	live := func() map[string]engine.LiveStats {
		out := map[string]engine.LiveStats{}
		p.Live(func(name string, l engine.LiveStats) { out[name] = l })
		return out
	}
	got := live()
	wantRt := (own.AvgRtMs*own.CompleteQps + 40*2) / (own.CompleteQps + 2)
	if o := got["orders"]; o.PassQps != own.PassQps+4 || o.CompleteQps != own.CompleteQps+2 || o.AvgRtMs != wantRt || o.Concurrency != 1 {
		t.Errorf("orders %+v, want the engine's %+v plus the instances'", o, own)
	}
	if e := got["elsewhere"]; e.BlockQps != 7 {
		t.Errorf("elsewhere %+v, want instance a's 7 blocks a second", e)
	}
	if l := p.liveOf("elsewhere"); l.BlockQps != 7 {
		t.Errorf("liveOf(elsewhere) %+v, want 7 blocks a second", l)
	}
	clock.Advance(InstanceLiveMs + 1)
	got = live()
	if _, ok := got["elsewhere"]; ok {
		t.Errorf("elsewhere still live after its instance stopped reporting: %+v", got)
	}
}

// sumOf is c merged n times.
func sumOf(c engine.Counts, n int) engine.Counts {
	var sum engine.Counts
	for range n {
		sum.Merge(c)
	}
	return sum
}
