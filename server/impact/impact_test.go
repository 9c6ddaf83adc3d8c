package impact

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/store"
)

// now is the estimates' clock: 2026-11-24 15:00 UTC.
var now = time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)

// seeded is a store whose resource "orders" had a calm day and a week of
// one call a second (busiest second 2), but for a burst at 14:05 UTC today:
// 3,000 calls in the minute, 400 of them in its busiest second.
func seeded(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	burst := time.Date(2026, 11, 24, 14, 5, 0, 0, time.UTC).UnixMilli()
	var deltas []store.MinuteDelta
	for m := now.Add(-7 * 24 * time.Hour).UnixMilli(); m < now.UnixMilli(); m += store.MinuteMs {
		c := engine.Counts{Calls: engine.Calls{Pass: 60}, BusiestSecond: 2, MaxConcurrency: 3}
		if m == burst {
			c = engine.Counts{Calls: engine.Calls{Pass: 2_900, Block: 100}, BusiestSecond: 400, MaxConcurrency: 40}
		}
		deltas = append(deltas, store.MinuteDelta{Resource: "orders", StartMs: m, Counts: c})
	}
	if err := st.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatal(err)
	}
	return st
}

func flow(r engine.FlowRule) *wire.Rule {
	return &wire.Rule{Name: "orders-limit", Kind: engine.KindFlow, Resource: "orders", Enabled: true, Spec: r}
}

// TestEstimateNamesTheBurst: on seeded history with a known burst, a rule
// of 100 per second would have blocked in that minute alone, between what
// its busiest second held over the threshold and what the minute's calls
// packed into such seconds would; a rule above the burst blocks nothing,
// one under the calm traffic blocks in every minute.
func TestEstimateNamesTheBurst(t *testing.T) {
	e := &Estimator{Source: seeded(t), NowMs: func() int64 { return now.UnixMilli() }}
	est, err := e.Estimate(t.Context(), flow(engine.FlowRule{Metric: engine.MetricQPS, Threshold: 100, StatIntervalMs: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	if len(est.Ranges) != 2 || est.Ranges[0].Range != "24h" || est.Ranges[1].Range != "7d" {
		t.Fatalf("ranges %+v, want 24h and 7d", est.Ranges)
	}
	for _, r := range est.Ranges {
		want := MinuteEstimate{Time: time.Date(2026, 11, 24, 14, 5, 0, 0, time.UTC), Calls: 3_000, BusiestSecond: 400,
			// 400 - 100 at least; 7 seconds of 400 and one of 200, each
			// blocking what it holds over 100, at most.
			BlockedLow: 300, BlockedHigh: 7*300 + 100}
		if r.MinutesBlocked != 1 || len(r.Minutes) != 1 || r.Minutes[0] != want {
			t.Errorf("%s: %d minutes blocked %+v, want the burst alone: %+v", r.Range, r.MinutesBlocked, r.Minutes, want)
		}
		if r.BlockedLow != 300 || r.BlockedHigh != 2_200 {
			t.Errorf("%s: blocked %d to %d, want 300 to 2200", r.Range, r.BlockedLow, r.BlockedHigh)
		}
	}
	if got := est.Ranges[0].MinutesSeen; got != 24*60 {
		t.Errorf("24h saw %d minutes, want %d", got, 24*60)
	}
	if got := est.Ranges[1].Calls; got != (7*24*60-1)*60+3_000 {
		t.Errorf("7d saw %d calls, want every minute's", got)
	}

	est, err = e.Estimate(t.Context(), flow(engine.FlowRule{Metric: engine.MetricQPS, Threshold: 400, StatIntervalMs: 1000}))
	if err != nil || est.Ranges[1].MinutesBlocked != 0 || est.Ranges[1].BlockedHigh != 0 {
		t.Errorf("400 per second: %+v %v, want nothing blocked", est.Ranges, err)
	}
	est, err = e.Estimate(t.Context(), flow(engine.FlowRule{Metric: engine.MetricQPS, Threshold: 1, StatIntervalMs: 1000}))
	if err != nil || est.Ranges[0].MinutesBlocked != 24*60 || est.Ranges[0].BlockedLow < 24*60 {
		t.Errorf("1 per second: %+v %v, want every minute blocked (its busiest second held 2)", est.Ranges[0], err)
	}
}

// TestEstimateOfAMinuteQuota: a quota of 1,000 calls a minute would have
// blocked the burst minute's calls over it, and nothing else.
func TestEstimateOfAMinuteQuota(t *testing.T) {
	e := &Estimator{Source: seeded(t), NowMs: func() int64 { return now.UnixMilli() }}
	est, err := e.Estimate(t.Context(), flow(engine.FlowRule{Metric: engine.MetricQPS, Threshold: 1_000, StatIntervalMs: 60_000}))
	if err != nil {
		t.Fatal(err)
	}
	r := est.Ranges[0]
	if r.MinutesBlocked != 1 || r.BlockedLow != 2_000 || r.BlockedHigh != 2_000 || r.Minutes[0].Time.Minute() != 5 {
		t.Errorf("a minute quota: %+v, want 2000 blocked at 14:05", r)
	}
	// An hour's quota of 5,000: the burst's hour goes over once the calm
	// minutes before it and the burst pass 5,000.
	est, err = e.Estimate(t.Context(), flow(engine.FlowRule{Metric: engine.MetricQPS, Threshold: 5_000, StatIntervalMs: 3_600_000}))
	if err != nil {
		t.Fatal(err)
	}
	if r := est.Ranges[0]; r.MinutesBlocked == 0 || r.Minutes[0].Time.Before(time.Date(2026, 11, 24, 14, 5, 0, 0, time.UTC)) {
		t.Errorf("an hour quota: %+v, want blocks from 14:05 on", r)
	}
}

// TestEstimateOfAConcurrencyAndAHotspotRule: a concurrency limit blocks
// where the minute's peak in flight went over it; a hotspot rule is
// bounded as if one value made every call, and says so.
func TestEstimateOfAConcurrencyAndAHotspotRule(t *testing.T) {
	e := &Estimator{Source: seeded(t), NowMs: func() int64 { return now.UnixMilli() }}
	est, err := e.Estimate(t.Context(), flow(engine.FlowRule{Metric: engine.MetricConcurrency, Threshold: 10}))
	if err != nil {
		t.Fatal(err)
	}
	if r := est.Ranges[0]; r.MinutesBlocked != 1 || r.BlockedLow != 1 || r.BlockedHigh != 3_000 {
		t.Errorf("10 in flight: %+v, want the burst minute, 1 to 3000 calls", r)
	}
	hot := &wire.Rule{Name: "per-user", Kind: engine.KindHotspot, Resource: "orders",
		Spec: engine.HotspotRule{ParamKey: "user", Metric: engine.MetricQPS, Threshold: 500, StatIntervalMs: 1000,
			SpecificItems: map[string]float64{"vip": 100}}}
	est, err = e.Estimate(t.Context(), hot)
	if err != nil {
		t.Fatal(err)
	}
	if r := est.Ranges[0]; r.MinutesBlocked != 1 || r.BlockedHigh != 2_200 || len(est.Notes) == 0 {
		t.Errorf("a hotspot rule with a value at 100: %+v %q, want the burst at most 2200, with a note", r, est.Notes)
	}
}

// TestEstimatePerEngine: a local rule passes its threshold on each engine,
// a cluster rule across them all.
func TestEstimatePerEngine(t *testing.T) {
	m := store.EngineMinute{Calls: 12_000, BusiestSecond: 150, Engines: 2}
	local := limit{threshold: 100, intervalMs: 1000}
	if low, high := local.minute(m); low != 50 || high < low {
		t.Errorf("local on 2 engines: %d to %d, want at least 50 (one second of 150)", low, high)
	}
	cluster := limit{threshold: 100, intervalMs: 1000, cluster: true}
	if low, _ := cluster.minute(m); low != 12_000-6_000 {
		t.Errorf("cluster on 2 engines: at least %d, want 6000 (a minute passes 6000 across them)", low)
	}
}
