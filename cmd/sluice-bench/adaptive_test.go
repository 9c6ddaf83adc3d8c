package main

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// TestOverloadHoldsWithTheRule: under three times the arrivals the
// service completes, briefly, an enforcing adaptive rule refuses calls
// and keeps the served calls' p99 near the service's own time, while
// without a rule calls queue; the command runs each shape.
func TestOverloadHoldsWithTheRule(t *testing.T) {
	measure := func(algorithm engine.AdaptiveAlgorithm) overloadRun {
		e := engine.New(engine.Options{})
		t.Cleanup(e.Close)
		if algorithm != "" {
			if err := e.LoadAdaptiveConcurrencyRules([]engine.AdaptiveConcurrencyRule{{Name: "a", Resource: "svc", Algorithm: algorithm}}); err != nil {
				t.Fatal(err)
			}
		}
		s := &overloadService{capacity: 10, baseMs: 20}
		return offer(t.Context(), s, e.Resource("svc"), 1500, 1500*time.Millisecond, time.Second)
	}
	without, with := measure(""), measure(engine.AdaptiveAIMD)
	if without.refused != 0 || without.unended == 0 {
		t.Errorf("without a rule: %d refused, %d queued at the end; want none and some", without.refused, without.unended)
	}
	if with.refused == 0 || with.limit == 0 || len(with.served) == 0 {
		t.Errorf("with the rule: %d refused, limit %d, %d served", with.refused, with.limit, len(with.served))
	}
	err := run(t.Context(), []string{"adaptive", "-capacity", "5", "-base-ms", "10", "-duration", "200ms", "-warmup", "100ms"})
	if err != nil {
		t.Fatal(err)
	}
}
