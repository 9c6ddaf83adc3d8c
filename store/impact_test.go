package store

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestEngineMinutes: every engine's calls count, each minute says how many
// engines saw them (an instance each, one for the server's own), and an
// app's minutes hold only its instances' calls.
func TestEngineMinutes(t *testing.T) {
	s, _ := openTestStore(t)
	calls := func(start, pass, block, busiest int64) MinuteDelta {
		return MinuteDelta{Resource: "orders", StartMs: start, Counts: engine.Counts{
			Calls: engine.Calls{Pass: pass, Block: block}, BusiestSecond: busiest, MaxConcurrency: max(1, block)}}
	}
	if err := s.AddMetrics(t.Context(), []MinuteDelta{calls(minute(1), 10, 2, 5)}); err != nil {
		t.Fatal(err)
	}
	shop := putInstance(t, s, "a", minute(1))
	pay := Instance{UID: "b", App: "pay", FirstSeenMs: minute(1), LastSeenMs: minute(1)}
	if err := s.PutInstance(t.Context(), &pay); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id     int64
		deltas []MinuteDelta
	}{
		{shop, []MinuteDelta{calls(minute(1), 20, 0, 8), calls(minute(2), 3, 0, 3)}},
		{pay.ID, []MinuteDelta{calls(minute(1), 5, 2, 7)}},
	} {
		if _, err := s.AddInstanceMinutes(t.Context(), r.id, r.deltas, 100); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		app  string
		want []EngineMinute
	}{
		{"", []EngineMinute{{minute(1), 39, 8, 2, 3}, {minute(2), 3, 3, 1, 1}}},
		{"shop", []EngineMinute{{minute(1), 20, 8, 1, 1}, {minute(2), 3, 3, 1, 1}}},
		{"pay", []EngineMinute{{minute(1), 7, 7, 2, 1}}},
		{"nobody", []EngineMinute{}},
	}
	for _, tt := range tests {
		got, err := s.EngineMinutes(t.Context(), "orders", tt.app, minute(0), minute(3))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("app %q: %+v, want %+v", tt.app, got, tt.want)
		}
	}
	if got, err := s.EngineMinutes(t.Context(), "orders", "", minute(2), minute(3)); err != nil || len(got) != 1 || got[0].StartMs != minute(2) {
		t.Errorf("from minute 2: %+v %v, want minute 2 alone", got, err)
	}
}
