package server

import (
	"testing"
	"time"
)

// TestHistoryJSONIsEncodingJSONs: the history's own encoder writes what
// marshalJSON writes, byte for byte, over names that need escaping, times
// with and without fractions, every kind of float, and points with and
// without blocks by rule.
func TestHistoryJSONIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	floats := []float64{0, 1, 12.5, 1.0 / 3, 2.0 / 3 * 1e6, 1e-6, 9.99e-7, 1e-9, 1e20, 1e21, 1.5e300, 123456789.125}
	var points []MetricPoint
	for i, f := range floats {
		points = append(points, MetricPoint{
			Time:    t0.Add(time.Duration(i) * time.Minute).Add(time.Duration(i%3) * 1500 * time.Microsecond),
			Calls:   Calls{Pass: int64(i) * 1e12, Block: int64(i), ShadowBlock: -int64(i), Complete: 7, Error: 1},
			AvgRtMs: f, MinRtMs: int64(i), MaxRtMs: 1 << 62, MaxConcurrency: int64(i * 3),
			BlockedBy: []RuleBlocks{{Reason: "flow", Rule: `r"<1>` + "\u2028", Blocked: int64(i)}, {Reason: "system", Blocked: 1}}[:i%3],
		})
	}
	tests := []MetricHistory{
		{Resource: "GET:/api/orders", Step: "1m", From: t0, To: t0.Add(time.Hour), Points: []MetricPoint{}, Covered: []CoveredSpan{}},
		{Resource: `a<b>&"c"\d` + "\u2028é\x01", Step: "1d", From: t0, To: t0.Add(24 * time.Hour), Points: points,
			Covered: []CoveredSpan{{From: t0, To: t0.Add(48 * time.Hour)}, {From: t0.Add(72 * time.Hour), To: t0.Add(96 * time.Hour)}}},
	}
	for _, h := range tests {
		want, err := marshalJSON(h)
		if err != nil {
			t.Fatal(err)
		}
		got := appendHistoryJSON(nil, h)
		if string(got) != string(want) {
			t.Errorf("history of %q:\n%s\nencoding/json:\n%s", h.Resource, got, want)
		}
	}
}
