package store

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestHistory: one read answers a history's points, with their blocks by
// rule, and the steps a server was up in; with an instance, only what it
// reported, without blocks, covered still by the servers' heartbeats.
func TestHistory(t *testing.T) {
	s, _ := openTestStore(t)
	flow := engine.RuleBlocks{Reason: engine.ReasonFlow, Rule: "r1", Blocked: 2}
	addMetrics(t, s, MinuteDelta{Resource: "orders", StartMs: minute(1),
		Counts: engine.Counts{Calls: engine.Calls{Pass: 3, Block: 2}}, BlockedBy: []engine.RuleBlocks{flow}})
	id := putInstance(t, s, "i-1", minute(1))
	if _, err := s.AddInstanceMinutes(t.Context(), id, []MinuteDelta{
		{Resource: "orders", StartMs: minute(7), Counts: engine.Counts{Calls: engine.Calls{Pass: 5}}},
	}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.AddHeartbeats(t.Context(), []int64{minute(1), minute(2), minute(12)}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		instance string
		want     []MetricPoint
	}{
		{"the sum", "", []MetricPoint{
			{StartMs: minute(0), Counts: engine.Counts{Calls: engine.Calls{Pass: 3, Block: 2}}, BlockedBy: []engine.RuleBlocks{flow}},
			{StartMs: minute(5), Counts: engine.Counts{Calls: engine.Calls{Pass: 5}}},
		}},
		{"one instance", "i-1", []MetricPoint{{StartMs: minute(5), Counts: engine.Counts{Calls: engine.Calls{Pass: 5}}}}},
	}
	for _, tt := range tests {
		got, err := s.HistoryRows(t.Context(), HistoryQuery{
			Resource: "orders", Instance: tt.instance, FromMs: minute(0), ToMs: minute(15), StepMs: 5 * MinuteMs,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Points, tt.want) {
			t.Errorf("%s: points %+v, want %+v", tt.name, got.Points, tt.want)
		}
		if want := []int64{minute(0), minute(10)}; !slices.Equal(got.CoveredMs, want) {
			t.Errorf("%s: covered %v, want %v", tt.name, got.CoveredMs, want)
		}
	}
}
