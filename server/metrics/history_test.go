package metrics

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestHistoryKnowsWhatIsNotFlushed: a resource whose calls no flush has
// stored yet is known, without points; one never seen is unknown.
func TestHistoryKnowsWhatIsNotFlushed(t *testing.T) {
	clock := engine.NewManualClock(t0 + 10_000)
	p, eng, _ := newPipeline(t, clock)
	calls(t, eng, "fresh", 1, 0, 1)
	step, err := StepNamed("1m")
	if err != nil {
		t.Fatal(err)
	}
	q := HistoryQuery{Resource: "fresh", Step: step, FromMs: t0, ToMs: t0 + store.HourMs}
	if h, err := p.History(t.Context(), q); err != nil || len(h.Points) != 0 {
		t.Errorf("history of a resource not flushed: %+v, %v; want no points", h.Points, err)
	}
	q.Resource = "never"
	if _, err := p.History(t.Context(), q); !errors.As(err, new(*UnknownResourceError)) {
		t.Errorf("history of a resource never seen: %v, want an UnknownResourceError", err)
	}
}
