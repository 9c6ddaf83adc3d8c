package rules

import (
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestLoadHoldsAdaptiveRules: a stored adaptive concurrency rule is in
// the engine of a service that loads the store afresh, as a server that
// starts has it.
func TestLoadHoldsAdaptiveRules(t *testing.T) {
	s := openService(t)
	body := `{"kind":"adaptiveConcurrency","name":"search-limit","resource":"search","algorithm":"aimd","maxLimit":200}`
	if _, err := s.Create(t.Context(), decoded(t, body), Actor{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	fresh := New(s.store, engine.New(engine.Options{Clock: engine.NewManualClock(0)}))
	if err := fresh.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := fresh.engine.AdaptiveConcurrencyRules()
	if len(got) != 1 || got[0].Name != "search-limit" || got[0].Algorithm != engine.AdaptiveAIMD || got[0].MaxLimit != 200 || got[0].BackoffRatio != 0.9 {
		t.Fatalf("loaded %+v", got)
	}
}
