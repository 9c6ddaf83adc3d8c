package metrics

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// t0 is 2026-03-02 10:00 UTC in Unix milliseconds.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixMilli()

// newPipeline returns a pipeline over a new SQLite file with the real
// migrations and an engine on clock. Its jobs are not started: tests
// collect and flush when they mean to.
func newPipeline(t *testing.T, clock *engine.ManualClock, engineOpts ...func(*engine.Options)) (*Pipeline, *engine.Engine, *store.Store) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	opts := engine.Options{Clock: clock}
	for _, o := range engineOpts {
		o(&opts)
	}
	eng := engine.New(opts)
	t.Cleanup(eng.Close)
	return New(Options{Engine: eng, Store: st, Logger: logger}), eng, st
}

// calls makes n calls to resource, each completed in rtMs; the first errs
// of them fail.
func calls(t *testing.T, eng *engine.Engine, resource string, n, errs int, rtMs int64) {
	t.Helper()
	for i := range n {
		e, blk := eng.Entry(resource)
		if blk != nil {
			t.Fatalf("%s blocked: %v", resource, blk)
		}
		var err error
		if i < errs {
			err = errors.New("failed")
		}
		e.Exit(engine.WithRtMs(rtMs), engine.WithError(err))
	}
}

func flush(t *testing.T, p *Pipeline) {
	t.Helper()
	if err := p.Flush(t.Context()); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// minuteRows reads resource's minute rows of the hour from t0.
func minuteRows(t *testing.T, st *store.Store, resource string) []store.MetricPoint {
	t.Helper()
	points, err := st.ResourceMetrics(t.Context(), resource, t0, t0+store.HourMs, store.MinuteMs)
	if err != nil {
		t.Fatal(err)
	}
	return points
}

// counts is a minute of passes that came in one second.
func counts(pass, complete, errs, rtSumMs, minRtMs, maxRtMs int64) engine.Counts {
	return engine.Counts{
		Calls:   engine.Calls{Pass: pass, Complete: complete, Error: errs},
		RtSumMs: rtSumMs, MinRtMs: minRtMs, MaxRtMs: maxRtMs, MaxConcurrency: 1, BusiestSecond: pass,
	}
}

// TestCountedCallsBecomeMinuteRows: what the engine counts in a minute is
// one row of that minute once flushed; a flush adds what came since the
// last one to the row, never overwrites it, and a flush with nothing new
// changes nothing.
func TestCountedCallsBecomeMinuteRows(t *testing.T) {
	clock := engine.NewManualClock(t0 + 10_000)
	p, eng, st := newPipeline(t, clock)
	calls(t, eng, "orders", 3, 1, 8)
	flush(t, p)
	want := []store.MetricPoint{{StartMs: t0, Counts: counts(3, 3, 1, 24, 8, 8)}}
	if got := minuteRows(t, st, "orders"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after one flush: %+v, want %+v", got, want)
	}
	flush(t, p)
	if got := minuteRows(t, st, "orders"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a flush with nothing new: %+v, want %+v", got, want)
	}

	clock.Advance(20_000)
	calls(t, eng, "orders", 2, 0, 2)
	clock.Advance(store.MinuteMs)
	calls(t, eng, "orders", 1, 0, 5)
	flush(t, p)
	// The busiest second of t0's minute is its first: 3 calls, then 2
	// twenty seconds on.
	first := counts(5, 5, 1, 28, 2, 8)
	first.BusiestSecond = 3
	want = []store.MetricPoint{
		{StartMs: t0, Counts: first},
		{StartMs: t0 + store.MinuteMs, Counts: counts(1, 1, 0, 5, 5, 5)},
	}
	if got := minuteRows(t, st, "orders"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a second minute: %+v, want %+v", got, want)
	}
}

// TestFailedFlushKeepsThePendingBatch: a flush that cannot write leaves
// its figures pending, and the next one writes them once.
func TestFailedFlushKeepsThePendingBatch(t *testing.T) {
	clock := engine.NewManualClock(t0 + 10_000)
	p, eng, st := newPipeline(t, clock)
	calls(t, eng, "orders", 3, 0, 1)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Flush(cancelled); err == nil {
		t.Fatal("a flush with a cancelled context succeeded")
	}
	if got := minuteRows(t, st, "orders"); len(got) != 0 {
		t.Fatalf("the failed flush wrote %+v", got)
	}
	calls(t, eng, "orders", 1, 0, 1)
	flush(t, p)
	if got := minuteRows(t, st, "orders"); len(got) != 1 || got[0].Pass != 4 {
		t.Fatalf("after the next flush: %+v, want the 4 passes once", got)
	}
}

// TestPipelineForgetsEvictedResources: once the engine has evicted a
// resource and all of its figures are stored, the pipeline holds no tally
// of it; it stays in the resource list from the store.
func TestPipelineForgetsEvictedResources(t *testing.T) {
	clock := engine.NewManualClock(t0)
	p, eng, _ := newPipeline(t, clock, func(o *engine.Options) { o.ResourceIdleTTL = time.Minute })
	calls(t, eng, "gone", 3, 0, 1)
	flush(t, p)
	clock.Advance(3 * store.MinuteMs)
	if eng.EvictIdle() != 1 || eng.Lookup("gone") != nil {
		t.Fatal("gone was not evicted")
	}
	calls(t, eng, "other", 1, 0, 1)
	flush(t, p)
	if tallies := p.seen([]string{"gone", "other"}); len(tallies) != 1 {
		t.Errorf("the pipeline holds tallies of %d resources, want only other's", len(tallies))
	}
	views, total, err := p.Resources(t.Context(), "gone", ByName, store.Page{Number: 1, Size: 50})
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 || views[0].FirstSeen == nil || !views[0].FirstSeen.Equal(time.UnixMilli(t0)) {
		t.Fatalf("list %+v (total %d), want gone first seen at t0", views, total)
	}
}

// TestResourcesSeeWhatIsNotFlushed: the resource list reads the last
// finished minute from the store and the pending batch together, and
// lists a resource no flush has written yet.
func TestResourcesSeeWhatIsNotFlushed(t *testing.T) {
	clock := engine.NewManualClock(t0 + 10_000)
	p, eng, _ := newPipeline(t, clock)
	calls(t, eng, "orders", 2, 0, 4)
	flush(t, p)
	calls(t, eng, "orders", 1, 1, 10)
	calls(t, eng, "fresh", 1, 0, 1)
	clock.Advance(store.MinuteMs)
	views, total, err := p.Resources(t.Context(), "", ByName, store.Page{Number: 1, Size: 50})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(views))
	for i, v := range views {
		names[i] = v.Name
	}
	if total != 2 || !slices.Equal(names, []string{"fresh", "orders"}) {
		t.Fatalf("list %q (total %d), want fresh and orders", names, total)
	}
	if got, want := views[1].LastMinute, counts(3, 3, 1, 18, 4, 10); got != want {
		t.Errorf("orders' last minute %+v, want %+v", got, want)
	}
}

// TestPruneCutsAtAWholeHour: retention deletes the rows before the whole
// UTC hour at or before now less retention, so every step agrees on what
// is left.
func TestPruneCutsAtAWholeHour(t *testing.T) {
	clock := engine.NewManualClock(t0 + 20*store.MinuteMs)
	p, _, st := newPipeline(t, clock)
	var deltas []store.MinuteDelta
	for _, m := range []int64{-90, -61, -60, -30, 5} {
		deltas = append(deltas, store.MinuteDelta{Resource: "orders", StartMs: t0 + m*store.MinuteMs, Counts: counts(1, 0, 0, 0, 0, 0)})
	}
	if err := st.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatal(err)
	}
	// 10:20 less 70 minutes is 09:10, cut at 09:00.
	if err := p.Prune(t.Context(), 70*time.Minute); err != nil {
		t.Fatal(err)
	}
	points, err := st.ResourceMetrics(t.Context(), "orders", t0-2*store.HourMs, t0+store.HourMs, store.MinuteMs)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int64
	for _, pt := range points {
		starts = append(starts, (pt.StartMs-t0)/store.MinuteMs)
	}
	if want := []int64{-60, -30, 5}; !slices.Equal(starts, want) {
		t.Errorf("minutes left %v, want %v", starts, want)
	}
}
