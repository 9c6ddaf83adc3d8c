package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// t0 is 2026-03-02 10:00 UTC, a Monday, in Unix milliseconds.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixMilli()

func minute(n int64) int64 { return t0 + n*MinuteMs }

func addMetrics(t *testing.T, s *Store, deltas ...MinuteDelta) {
	t.Helper()
	if err := s.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatalf("AddMetrics: %v", err)
	}
}

// TestAddMetricsAddsNeverOverwrites: the parts of a minute flushed one by
// one, as after a restart, add up in the minute and in the hour.
func TestAddMetricsAddsNeverOverwrites(t *testing.T) {
	s, _ := openTestStore(t)
	addMetrics(t, s,
		MinuteDelta{Resource: "orders", StartMs: minute(1), FirstSeenMs: minute(1) + 500, LastSeenMs: minute(1) + 9_000, Counts: engine.Counts{Calls: engine.Calls{Pass: 5, Block: 1, Complete: 4, Error: 1}, RtSumMs: 40, MinRtMs: 5, MaxRtMs: 20, MaxConcurrency: 3}},
		MinuteDelta{Resource: "orders", StartMs: minute(2), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
	)
	addMetrics(t, s,
		MinuteDelta{Resource: "orders", StartMs: minute(1), FirstSeenMs: minute(1) + 10_000, LastSeenMs: minute(1) + 59_000, Counts: engine.Counts{Calls: engine.Calls{Pass: 2, ShadowBlock: 7, Complete: 2}, RtSumMs: 4, MinRtMs: 1, MaxRtMs: 3, MaxConcurrency: 1}},
		MinuteDelta{Resource: "orders", StartMs: minute(2), Counts: engine.Counts{Calls: engine.Calls{Complete: 1}, RtSumMs: 30, MinRtMs: 30, MaxRtMs: 30}},
	)

	got, err := s.ResourceMetrics(t.Context(), "orders", minute(0), minute(60), MinuteMs)
	if err != nil {
		t.Fatal(err)
	}
	want := []MetricPoint{{StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 7, Block: 1, ShadowBlock: 7, Complete: 6, Error: 1}, RtSumMs: 44, MinRtMs: 1, MaxRtMs: 20, MaxConcurrency: 3}}, {StartMs: minute(2), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Complete: 1}, RtSumMs: 30, MinRtMs: 30, MaxRtMs: 30}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("minutes = %+v\nwant %+v", got, want)
	}
	hours, err := s.ResourceMetrics(t.Context(), "orders", minute(0), minute(60), HourMs)
	if err != nil {
		t.Fatal(err)
	}
	wantHour := []MetricPoint{{StartMs: t0, Counts: engine.Counts{Calls: engine.Calls{Pass: 8, Block: 1, ShadowBlock: 7, Complete: 7, Error: 1}, RtSumMs: 74, MinRtMs: 1, MaxRtMs: 30, MaxConcurrency: 3}}}
	if !reflect.DeepEqual(hours, wantHour) {
		t.Errorf("hour = %+v\nwant %+v", hours, wantHour)
	}
	r, err := s.GetMetricResource(t.Context(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstSeenMs != minute(1)+500 || r.LastSeenMs != minute(2) {
		t.Errorf("seen from %d to %d, want %d to %d", r.FirstSeenMs, r.LastSeenMs, minute(1)+500, minute(2))
	}
	if _, err := s.GetMetricResource(t.Context(), "never"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetMetricResource(never) = %v, want ErrNotFound", err)
	}
}

// TestAddMetricsManyResourcesInOneFlush writes and reads back more
// resources than one query names.
func TestAddMetricsManyResourcesInOneFlush(t *testing.T) {
	s, _ := openTestStore(t)
	var deltas []MinuteDelta
	for i := range 2*namesPerQuery + 7 {
		deltas = append(deltas, MinuteDelta{Resource: fmt.Sprintf("r%04d", i), StartMs: minute(0), Counts: engine.Counts{Calls: engine.Calls{Pass: int64(i)}}})
	}
	addMetrics(t, s, deltas...)
	addMetrics(t, s, deltas...)
	rs, err := s.MetricResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(deltas) {
		t.Fatalf("%d resources, want %d", len(rs), len(deltas))
	}
	names := make([]string, len(deltas))
	for i, d := range deltas {
		names[i] = d.Resource
	}
	got, err := s.MinuteMetrics(t.Context(), minute(0), names)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range deltas {
		if got[d.Resource].Pass != 2*int64(i) {
			t.Fatalf("%s pass = %d, want %d", d.Resource, got[d.Resource].Pass, 2*i)
		}
	}
}

// seedPattern writes a known pattern: "orders" has one pass per minute from
// 09:58 to 12:01 except 10:30-10:44, one completed call of i ms in the
// minute 10:00+i for the first hour, and a concurrency peak of the minute's
// number mod 7.
func seedPattern(t *testing.T, s *Store) {
	t.Helper()
	var deltas []MinuteDelta
	for m := int64(-2); m <= 121; m++ {
		if m >= 30 && m < 45 {
			continue
		}
		c := engine.Counts{Calls: engine.Calls{Pass: 1}, MaxConcurrency: (m + 7) % 7}
		if m >= 0 && m < 60 {
			c.Complete, c.RtSumMs, c.MinRtMs, c.MaxRtMs = 1, m, m, m
		}
		deltas = append(deltas, MinuteDelta{Resource: "orders", StartMs: minute(m), Counts: c})
	}
	addMetrics(t, s, deltas...)
}

func TestResourceMetricsSteps(t *testing.T) {
	s, _ := openTestStore(t)
	seedPattern(t, s)
	tests := []struct {
		name     string
		from, to int64
		step     int64
		want     []MetricPoint
	}{
		{
			name: "1m, rounded out to whole minutes, empty minutes absent",
			from: minute(28) + 59_999, to: minute(45) + 1, step: MinuteMs,
			want: []MetricPoint{{StartMs: minute(28), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Complete: 1}, RtSumMs: 28, MinRtMs: 28, MaxRtMs: 28, MaxConcurrency: 0}}, {StartMs: minute(29), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Complete: 1}, RtSumMs: 29, MinRtMs: 29, MaxRtMs: 29, MaxConcurrency: 1}}, {StartMs: minute(45), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Complete: 1}, RtSumMs: 45, MinRtMs: 45, MaxRtMs: 45, MaxConcurrency: 3}}},
		},
		{
			name: "to is exclusive",
			from: minute(1), to: minute(2), step: MinuteMs,
			want: []MetricPoint{{StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Complete: 1}, RtSumMs: 1, MinRtMs: 1, MaxRtMs: 1, MaxConcurrency: 1}}},
		},
		{
			name: "5m",
			from: minute(20), to: minute(40), step: 5 * MinuteMs,
			want: []MetricPoint{{StartMs: minute(20), Counts: engine.Counts{Calls: engine.Calls{Pass: 5, Complete: 5}, RtSumMs: 110, MinRtMs: 20, MaxRtMs: 24, MaxConcurrency: 6}}, {StartMs: minute(25), Counts: engine.Counts{Calls: engine.Calls{Pass: 5, Complete: 5}, RtSumMs: 135, MinRtMs: 25, MaxRtMs: 29, MaxConcurrency: 6}}},
		},
		{
			name: "15m from the middle of a step",
			from: minute(-1), to: minute(14), step: 15 * MinuteMs,
			want: []MetricPoint{{StartMs: minute(-15), Counts: engine.Counts{Calls: engine.Calls{Pass: 2}, MaxConcurrency: 6}}, {StartMs: minute(0), Counts: engine.Counts{Calls: engine.Calls{Pass: 15, Complete: 15}, RtSumMs: 105, MinRtMs: 0, MaxRtMs: 14, MaxConcurrency: 6}}},
		},
		{
			name: "1h from the hourly rollup; minutes without completions have no minimum",
			from: minute(-60), to: minute(180), step: HourMs,
			want: []MetricPoint{{StartMs: minute(-60), Counts: engine.Counts{Calls: engine.Calls{Pass: 2}, MaxConcurrency: 6}}, {StartMs: minute(0), Counts: engine.Counts{Calls: engine.Calls{Pass: 45, Complete: 45}, RtSumMs: 1770 - 555, MinRtMs: 0, MaxRtMs: 59, MaxConcurrency: 6}}, {StartMs: minute(60), Counts: engine.Counts{Calls: engine.Calls{Pass: 60}, MaxConcurrency: 6}}, {StartMs: minute(120), Counts: engine.Counts{Calls: engine.Calls{Pass: 2}, MaxConcurrency: 2}}},
		},
		{
			name: "1d, UTC midnight",
			from: minute(0), to: minute(1), step: 24 * HourMs,
			want: []MetricPoint{{StartMs: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixMilli(), Counts: engine.Counts{Calls: engine.Calls{Pass: 109, Complete: 45}, RtSumMs: 1215, MinRtMs: 0, MaxRtMs: 59, MaxConcurrency: 6}}},
		},
		{name: "nothing in range", from: minute(31), to: minute(44), step: MinuteMs, want: []MetricPoint{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ResourceMetrics(t.Context(), "orders", tt.from, tt.to, tt.step)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if got, err := s.ResourceMetrics(t.Context(), "never", minute(0), minute(60), MinuteMs); err != nil || len(got) != 0 {
		t.Errorf("unknown resource: %v, %v; want no points", got, err)
	}
	if _, err := s.ResourceMetrics(t.Context(), "orders", minute(0), minute(60), 1000); err == nil {
		t.Error("a step of a second was accepted")
	}
}

func TestTopResources(t *testing.T) {
	s, _ := openTestStore(t)
	// Three resources over 09:50-11:10, so that ranges cross whole hours.
	var deltas []MinuteDelta
	for m := int64(-10); m < 70; m++ {
		deltas = append(deltas,
			MinuteDelta{Resource: "a", StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Pass: 3, Block: 1, Complete: 3}, RtSumMs: 30, MinRtMs: 10, MaxRtMs: 10}},
			MinuteDelta{Resource: "b", StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Block: 2, Error: 1, Complete: 1}, RtSumMs: 50, MinRtMs: 50, MaxRtMs: 50}},
		)
		if m >= 65 {
			deltas = append(deltas, MinuteDelta{Resource: "c", StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Block: 100}}})
		}
	}
	addMetrics(t, s, deltas...)
	tests := []struct {
		name     string
		from, to int64
		by       TopBy
		limit    int
		want     []string
		wantPass []int64
	}{
		{name: "block, minutes and hours", from: minute(-5), to: minute(68), by: TopByBlock, limit: 10, want: []string{"c", "b", "a"}, wantPass: []int64{0, 73, 219}},
		{name: "pass, limit 1", from: minute(-5), to: minute(68), by: TopByPass, limit: 1, want: []string{"a"}, wantPass: []int64{219}},
		{name: "error", from: minute(0), to: minute(60), by: TopByError, limit: 10, want: []string{"b", "a"}, wantPass: []int64{60, 180}},
		{name: "avgRt, resources without completions last", from: minute(60), to: minute(70), by: TopByAvgRt, limit: 10, want: []string{"b", "a", "c"}, wantPass: []int64{10, 30, 0}},
		{name: "minutes only, rounded out", from: minute(66) + 1, to: minute(66) + 2, by: TopByBlock, limit: 10, want: []string{"c", "b", "a"}, wantPass: []int64{0, 1, 3}},
		{name: "nothing in range", from: minute(100), to: minute(200), by: TopByBlock, limit: 10, want: []string{}, wantPass: []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names, pass := topNamesAndPass(t, s, tt.from, tt.to, tt.by, tt.limit)
			if !reflect.DeepEqual(names, tt.want) || !reflect.DeepEqual(pass, tt.wantPass) {
				t.Errorf("top = %v with pass %v, want %v with %v", names, pass, tt.want, tt.wantPass)
			}
		})
	}
	if _, err := s.TopResources(t.Context(), minute(0), minute(1), "rt", 10); err == nil {
		t.Error("an unknown ranking was accepted")
	}
}

// TestTopResourcesFillsByName: a ranking by a count that fewer resources
// than its limit have ends with those whose count is 0, by name, with
// their figures; ties rank by name.
func TestTopResourcesFillsByName(t *testing.T) {
	s, _ := openTestStore(t)
	var deltas []MinuteDelta
	for m := range int64(3) {
		deltas = append(deltas,
			MinuteDelta{Resource: "z-blocks", StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Block: 5}}},
			MinuteDelta{Resource: "b-blocks", StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Pass: 2, Block: 5}}},
			MinuteDelta{Resource: "m-quiet", StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Pass: 3}}},
			MinuteDelta{Resource: "a-quiet", StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Pass: 4}}},
		)
	}
	addMetrics(t, s, deltas...)
	tests := []struct {
		by       TopBy
		limit    int
		want     []string
		wantPass []int64
	}{
		{by: TopByBlock, limit: 10, want: []string{"b-blocks", "z-blocks", "a-quiet", "m-quiet"}, wantPass: []int64{6, 3, 12, 9}},
		{by: TopByBlock, limit: 3, want: []string{"b-blocks", "z-blocks", "a-quiet"}, wantPass: []int64{6, 3, 12}},
		{by: TopByBlock, limit: 1, want: []string{"b-blocks"}, wantPass: []int64{6}},
		{by: TopByError, limit: 2, want: []string{"a-quiet", "b-blocks"}, wantPass: []int64{12, 6}},
	}
	for _, tt := range tests {
		names, pass := topNamesAndPass(t, s, minute(0), minute(3), tt.by, tt.limit)
		if !reflect.DeepEqual(names, tt.want) || !reflect.DeepEqual(pass, tt.wantPass) {
			t.Errorf("by %s, limit %d: %v with pass %v, want %v with %v", tt.by, tt.limit, names, pass, tt.want, tt.wantPass)
		}
	}
}

// topNamesAndPass returns the names and the passes of the ranking by of
// [fromMs, toMs), limit long.
func topNamesAndPass(t *testing.T, s *Store, fromMs, toMs int64, by TopBy, limit int) ([]string, []int64) {
	t.Helper()
	top, err := s.TopResources(t.Context(), fromMs, toMs, by, limit)
	if err != nil {
		t.Fatal(err)
	}
	names, pass := []string{}, []int64{}
	for _, r := range top {
		names = append(names, r.Resource)
		pass = append(pass, r.Pass)
	}
	return names, pass
}

// TestPruneMetrics deletes in batches smaller than what is to go, and
// queries across the cut see only what is kept, at every step alike.
func TestPruneMetrics(t *testing.T) {
	s, _ := openTestStore(t)
	seedPattern(t, s)
	addMetrics(t, s, MinuteDelta{Resource: "gone", StartMs: minute(-2), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})

	deleted, err := s.PruneMetrics(t.Context(), minute(60), 7)
	if err != nil {
		t.Fatal(err)
	}
	// Minutes 09:58-10:59 less the 15 idle ones of orders, 1 of gone;
	// the five minutes from 09:55 to 10:55 less the three idle ones of
	// orders, 09:55 of gone; the hours 09:00 and 10:00 of orders, 09:00 of
	// gone; the day of gone, which has nothing left (that of orders is
	// summed again).
	if want := int64(62-15+1) + (13 - 3 + 1) + 3 + 1; deleted != want {
		t.Errorf("deleted %d rows, want %d", deleted, want)
	}
	for _, step := range []int64{MinuteMs, 5 * MinuteMs, HourMs, 24 * HourMs} {
		points, err := s.ResourceMetrics(t.Context(), "orders", minute(-120), minute(240), step)
		if err != nil {
			t.Fatal(err)
		}
		var pass int64
		for _, p := range points {
			if p.StartMs < floorTo(minute(60), step) {
				t.Errorf("step %d: a point at %d survived the cut", step, p.StartMs)
			}
			pass += p.Pass
		}
		if pass != 62 {
			t.Errorf("step %d: %d passes kept, want the 62 after the cut", step, pass)
		}
	}
	if _, err := s.GetMetricResource(t.Context(), "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a resource last seen before the cut: %v, want ErrNotFound", err)
	}
	if _, err := s.GetMetricResource(t.Context(), "orders"); err != nil {
		t.Errorf("a resource seen after the cut: %v", err)
	}
	again, err := s.PruneMetrics(t.Context(), minute(60), 7)
	if err != nil || again != 0 {
		t.Errorf("pruning again deleted %d rows (%v), want 0", again, err)
	}
}

func TestFloorAndCeil(t *testing.T) {
	tests := []struct {
		ms, step, floor, ceil int64
	}{
		{ms: 0, step: 60, floor: 0, ceil: 0},
		{ms: 1, step: 60, floor: 0, ceil: 60},
		{ms: 60, step: 60, floor: 60, ceil: 60},
		{ms: -1, step: 60, floor: -60, ceil: 0},
	}
	for _, tt := range tests {
		if f, c := floorTo(tt.ms, tt.step), ceilTo(tt.ms, tt.step); f != tt.floor || c != tt.ceil {
			t.Errorf("floor, ceil of %d to %d = %d, %d; want %d, %d", tt.ms, tt.step, f, c, tt.floor, tt.ceil)
		}
	}
}

// TestAddMetricsAcrossChunks: a resource whose minutes of one hour fall on
// both sides of a chunk of AddMetrics adds up as in one.
func TestAddMetricsAcrossChunks(t *testing.T) {
	s, _ := openTestStore(t)
	var deltas []MinuteDelta
	for i := range addMetricsChunk - 1 {
		deltas = append(deltas, MinuteDelta{Resource: fmt.Sprintf("r%05d", i), StartMs: minute(0), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	}
	deltas = append(deltas,
		MinuteDelta{Resource: "zz", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 2}}},
		MinuteDelta{Resource: "zz", StartMs: minute(2), Counts: engine.Counts{Calls: engine.Calls{Pass: 3}}},
	)
	addMetrics(t, s, deltas...)
	hours, err := s.ResourceMetrics(t.Context(), "zz", minute(0), minute(60), HourMs)
	if err != nil {
		t.Fatal(err)
	}
	if len(hours) != 1 || hours[0].Pass != 5 {
		t.Errorf("hour of zz = %+v, want 5 passes", hours)
	}
	r, err := s.GetMetricResource(t.Context(), "zz")
	if err != nil || r.FirstSeenMs != minute(1) || r.LastSeenMs != minute(2) {
		t.Errorf("zz: %+v %v, seen from minute 1 to 2", r, err)
	}
	n, err := s.CountCatalogue(t.Context(), "")
	if err != nil || n != addMetricsChunk {
		t.Errorf("%d resources (%v), want %d", n, err, addMetricsChunk)
	}
}

// TestAddFlushIsOneWrite: a flush's minutes and heartbeats are written
// together, and a flush that fails writes neither, so that no reader takes
// its minutes for idle ones while their figures wait for the next flush.
func TestAddFlushIsOneWrite(t *testing.T) {
	s, _ := openTestStore(t)
	flush := Flush{
		Deltas: []MinuteDelta{{Resource: "orders", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 3, Block: 1}},
			BlockedBy: []engine.RuleBlocks{{Reason: engine.ReasonFlow, Rule: "r1", Blocked: 1}}}},
		HeartbeatsMs: []int64{minute(1)},
	}
	stored := func() (points, covered int) {
		t.Helper()
		rows, err := s.HistoryRows(t.Context(), HistoryQuery{Resource: "orders", FromMs: minute(0), ToMs: minute(60), StepMs: MinuteMs})
		if err != nil {
			t.Fatal(err)
		}
		return len(rows.Points), len(rows.CoveredMs)
	}
	// The blocks' daily rollup is written last of the minutes: without
	// its table, the write fails after the rest of them.
	if _, err := sqlDB(t, s).ExecContext(t.Context(), `ALTER TABLE metric_day_blocks RENAME TO gone_day_blocks`); err != nil {
		t.Fatal(err)
	}
	if err := s.AddFlush(t.Context(), flush); err == nil {
		t.Fatal("a flush without its blocks table succeeded")
	}
	if points, covered := stored(); points != 0 || covered != 0 {
		t.Fatalf("the failed flush wrote %d points and %d heartbeats, want none", points, covered)
	}
	if _, err := sqlDB(t, s).ExecContext(t.Context(), `ALTER TABLE gone_day_blocks RENAME TO metric_day_blocks`); err != nil {
		t.Fatal(err)
	}
	if err := s.AddFlush(t.Context(), flush); err != nil {
		t.Fatal(err)
	}
	if points, covered := stored(); points != 1 || covered != 1 {
		t.Errorf("the flush wrote %d points and %d heartbeats, want 1 and 1", points, covered)
	}
}
