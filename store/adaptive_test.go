package store

import (
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestAdaptiveLimitRows: a minute flushed in parts keeps the least,
// greatest and latest adaptive limit of its parts; a step of several
// minutes (grouped from five-minute rows) and an hour keep those of
// their minutes, the latest being the latest minute's that had one; a
// minute without a limit reads 0.
func TestAdaptiveLimitRows(t *testing.T) {
	s, _ := openTestStore(t)
	limits := func(least, most, last int64) engine.Counts {
		return engine.Counts{Calls: engine.Calls{Pass: 1}, AdaptiveLimitMin: least, AdaptiveLimitMax: most, AdaptiveLimitLast: last}
	}
	addMetrics(t, s,
		MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: limits(40, 60, 50)},
		MinuteDelta{Resource: "orders", StartMs: minute(2), Counts: limits(30, 35, 31)},
		MinuteDelta{Resource: "orders", StartMs: minute(12), Counts: limits(70, 80, 75)},
		MinuteDelta{Resource: "orders", StartMs: minute(13), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
	)
	addMetrics(t, s, MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: limits(20, 45, 44)})

	for _, tc := range []struct {
		stepMs int64
		want   [][3]int64
	}{
		{MinuteMs, [][3]int64{{20, 60, 44}, {30, 35, 31}, {70, 80, 75}, {0, 0, 0}}},
		{15 * MinuteMs, [][3]int64{{20, 80, 75}}},
		{HourMs, [][3]int64{{20, 80, 75}}},
	} {
		points, err := s.ResourceMetrics(t.Context(), "orders", minute(0), minute(60), tc.stepMs)
		if err != nil {
			t.Fatal(err)
		}
		var got [][3]int64
		for _, p := range points {
			got = append(got, [3]int64{p.AdaptiveLimitMin, p.AdaptiveLimitMax, p.AdaptiveLimitLast})
		}
		if len(got) != len(tc.want) || len(got) > 0 && got[len(got)-1] != tc.want[len(tc.want)-1] || got[0] != tc.want[0] {
			t.Errorf("step %d ms: least, greatest, latest %v, want %v", tc.stepMs, got, tc.want)
		}
	}
}
