package engine

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestStressEntryDuringReload runs Entry/Exit from many goroutines while rule
// sets are reloaded and time moves (run it with -race). Afterwards nothing is
// left in flight and every call is counted exactly once, as a pass or a
// block.
func TestStressEntryDuringReload(t *testing.T) {
	e, clock := newTestEngine(t, 0)
	resources := []string{"orders", "pay", "read", "write"}
	ruleSets := [][]FlowRule{
		{
			{Name: "orders-qps", Resource: "orders", Threshold: 50},
			{Name: "pay-paced", Resource: "pay", Threshold: 200, ControlBehavior: BehaviorThrottling, MaxQueueingTimeMs: 20},
			{Name: "write-assoc", Resource: "write", Threshold: 30, RelationStrategy: RelationAssociated, RefResource: "read"},
		},
		{
			{Name: "orders-conc", Resource: "orders", Metric: MetricConcurrency, Threshold: 3},
			{Name: "pay-warm", Resource: "pay", Threshold: 100, TokenCalculateStrategy: StrategyWarmUp, WarmUpPeriodSec: 2},
			{Name: "read-2s", Resource: "read", Threshold: 80, StatIntervalMs: 2000},
			{Name: "write-shadow", Resource: "write", Threshold: 1, Mode: ModeShadow},
		},
		{},
	}
	const workers, callsPerWorker = 8, 20_000
	var attempts atomic.Int64
	stop := make(chan struct{})
	var background sync.WaitGroup
	background.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := e.LoadFlowRules(ruleSets[i%len(ruleSets)]); err != nil {
				t.Error(err)
				return
			}
			if clock.NowMs() < 100_000 {
				clock.Advance(7)
			}
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			boom := errors.New("boom")
			for i := range callsPerWorker {
				name := resources[(w+i)%len(resources)]
				attempts.Add(1)
				en, blk := e.Entry(name, WithNoWait(), WithCount(1+int64(i%2)))
				if blk != nil {
					attempts.Add(int64(i % 2)) // a blocked batch of 2 counts 2
					continue
				}
				attempts.Add(int64(i % 2))
				if i%5 == 0 {
					en.Exit(WithError(boom))
				} else {
					en.Exit()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	background.Wait()

	var passed, blocked, completed int64
	for _, m := range e.CollectMinutes() {
		passed, blocked, completed = passed+m.Pass, blocked+m.Block, completed+m.Complete
	}
	if passed+blocked != attempts.Load() {
		t.Errorf("counted %d passes and %d blocks, want %d calls in all", passed, blocked, attempts.Load())
	}
	if completed != passed {
		t.Errorf("%d passes but %d completions", passed, completed)
	}
	for _, name := range resources {
		if c := e.Resource(name).Concurrency(); c != 0 {
			t.Errorf("%s: %d in flight after every Exit", name, c)
		}
	}
}
