package engine

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestRacingCallsNeverShareTheLastRoom: callers racing on a frozen clock
// let exactly the threshold through. Deciding on the pass count and then
// adding to it let two calls both take the last room of a window (11 of
// 10 within a few hundred rounds); each call now claims its passes on the
// count its rules decided on.
func TestRacingCallsNeverShareTheLastRoom(t *testing.T) {
	for _, rule := range []FlowRule{
		{Resource: "r", Threshold: 10},
		{Resource: "r", Threshold: 150}, // a log that counts passes in groups
		{Resource: "r", Threshold: 10, TokenCalculateStrategy: StrategyWarmUp, WarmUpPeriodSec: 10},
	} {
		for round := range 300 {
			clock := NewManualClock(1_000_000)
			e := New(Options{Clock: clock})
			if err := e.LoadFlowRules([]FlowRule{rule}); err != nil {
				t.Fatal(err)
			}
			want := int64(rule.Threshold)
			if rule.TokenCalculateStrategy == StrategyWarmUp {
				want = int64(e.Resource("r").rules.Load().flow[0].warmUp().allowed(clock.NowMs()))
			}
			res := e.Resource("r")
			var passed atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 8 {
				wg.Go(func() {
					<-start
					for range 2 * int(rule.Threshold) / 8 {
						if en, blk := res.Entry(); blk == nil {
							passed.Add(1)
							en.Exit()
						}
					}
				})
			}
			close(start)
			wg.Wait()
			e.Close()
			if got := passed.Load(); got != want {
				t.Fatalf("threshold %v (%s), round %d: %d passes on a frozen clock, want %d",
					rule.Threshold, rule.TokenCalculateStrategy, round, got, want)
			}
		}
	}
}
