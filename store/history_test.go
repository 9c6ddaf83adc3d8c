package store

import (
	"errors"
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

// TestHistoryNamesItsInstanceAndCatalogue: the one read resolves the
// instance by its own id, an id no instance has being ErrNotFound, and
// says whether the catalogue holds a resource without points in range.
func TestHistoryNamesItsInstanceAndCatalogue(t *testing.T) {
	s, _ := openTestStore(t)
	addMetrics(t, s, MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	putInstance(t, s, "i-1", minute(1))
	for _, tt := range []struct {
		name, resource, instance string
		wantCatalogued           bool
	}{
		{"idle in range", "orders", "", true},
		{"idle for the instance", "orders", "i-1", true},
		{"never seen", "never", "", false},
	} {
		got, err := s.HistoryRows(t.Context(), HistoryQuery{
			Resource: tt.resource, Instance: tt.instance, FromMs: minute(60), ToMs: minute(120), StepMs: MinuteMs,
		})
		if err != nil || len(got.Points) != 0 || got.Catalogued != tt.wantCatalogued {
			t.Errorf("%s: %d points, catalogued %t (%v), want none, %t", tt.name, len(got.Points), got.Catalogued, err, tt.wantCatalogued)
		}
	}
	_, err := s.HistoryRows(t.Context(), HistoryQuery{Resource: "orders", Instance: "nobody", FromMs: minute(0), ToMs: minute(60), StepMs: MinuteMs})
	if !errors.Is(err, ErrNotFound) || err.Error() != `no instance has id "nobody": `+ErrNotFound.Error() {
		t.Errorf("an unknown instance: %v, want %q wrapping ErrNotFound", err, "no instance has id \"nobody\"")
	}
}
