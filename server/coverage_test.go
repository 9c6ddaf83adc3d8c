package server

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestHistoryCoveredAcrossOutage runs a server for two minutes (traffic in
// the first, none in the second), kills it, and starts it again on the
// same file three minutes later: the history says which minutes a server
// was up in, so a client draws the idle minute as 0 and the outage as a
// gap; the running server's minute counts before any flush, and a larger
// step is covered if any of its minutes is.
func TestHistoryCoveredAcrossOutage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.db")
	clock := engine.NewManualClock(metricsT0 + 5_000)
	at := func(minutes int64) time.Time { return time.UnixMilli(metricsT0 + minutes*store.MinuteMs).UTC() }

	first := startMetricsNode(t, path, clock, nil)
	traffic(t, first.Engine, "orders", 3, 0, 5)
	first.flush(t)
	clock.Set(metricsT0 + store.MinuteMs + 5_000) // 10:01, idle
	first.flush(t)
	first.kill(t)

	clock.Set(metricsT0 + 5*store.MinuteMs + 5_000) // 10:05, after an outage
	second := startMetricsNode(t, path, clock, nil)
	traffic(t, second.Engine, "orders", 2, 0, 5)
	minutes := second.history(t, "orders", rangeQuery(metricsT0, metricsT0+7*store.MinuteMs, "1m"))
	if want := []CoveredSpan{{at(0), at(2)}, {at(5), at(6)}}; !reflect.DeepEqual(minutes.Covered, want) {
		t.Errorf("covered minutes %v, want %v", minutes.Covered, want)
	}
	second.flush(t)
	clock.Set(metricsT0 + 6*store.MinuteMs + 5_000)
	second.kill(t)
	third := startMetricsNode(t, path, clock, nil)
	minutes = third.history(t, "orders", rangeQuery(metricsT0, metricsT0+7*store.MinuteMs, "1m"))
	if want := []CoveredSpan{{at(0), at(2)}, {at(5), at(7)}}; !reflect.DeepEqual(minutes.Covered, want) {
		t.Errorf("after a restart, covered minutes %v, want %v", minutes.Covered, want)
	}
	if len(minutes.Points) != 2 || !minutes.Points[0].Time.Equal(at(0)) || !minutes.Points[1].Time.Equal(at(5)) {
		t.Errorf("points %+v, want 10:00 and 10:05", minutes.Points)
	}
	fives := third.history(t, "orders", rangeQuery(metricsT0, metricsT0+15*store.MinuteMs, "5m"))
	if want := []CoveredSpan{{at(0), at(10)}}; !reflect.DeepEqual(fives.Covered, want) {
		t.Errorf("covered 5-minute steps %v, want %v", fives.Covered, want)
	}
	before := third.history(t, "orders", rangeQuery(metricsT0-store.HourMs, metricsT0, "1m"))
	if len(before.Covered) != 0 || before.Covered == nil {
		t.Errorf("the hour before the first start is covered: %v", before.Covered)
	}
}
