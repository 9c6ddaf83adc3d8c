package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// overloadService is a protected service in the process: capacity calls
// at once take baseMs each, and more share it (each takes baseMs × in
// flight ÷ capacity), so that under an arrival rate past what it
// completes its queue, and its latency, grow without bound.
type overloadService struct {
	capacity, baseMs int64
	inFlight         atomic.Int64
}

// serve takes the service's time for one call, and reports whether it
// was served before ctx ended.
func (s *overloadService) serve(ctx context.Context) bool {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	select {
	case <-time.After(time.Duration(max(s.baseMs, s.baseMs*n/s.capacity)) * time.Millisecond):
		return true
	case <-ctx.Done():
		return false
	}
}

// overloadRun is what one run measured: the served calls' latencies,
// the calls refused, those still queued when it ended, and the limit at
// the end (0 without a rule).
type overloadRun struct {
	served           []time.Duration
	refused, unended int64
	limit            int64
}

// offer sends calls to s through r at perSecond, each on its own
// goroutine (open loop: an arrival does not wait for the one before),
// for d, and measures those that end (served or refused) from
// measureAfter on.
func offer(ctx context.Context, s *overloadService, r *engine.Resource, perSecond float64, d, measureAfter time.Duration) overloadRun {
	var (
		mu      sync.Mutex
		run     overloadRun
		refused atomic.Int64
		unended atomic.Int64
		calls   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	launched := 0
	for elapsed := time.Duration(0); elapsed < d && ctx.Err() == nil; elapsed = time.Since(start) {
		<-tick.C
		for due := int(perSecond * time.Since(start).Seconds()); launched < due; launched++ {
			calls.Go(func() {
				at := time.Now()
				e, blk := r.Entry()
				if blk != nil {
					if time.Since(start) >= measureAfter {
						refused.Add(1)
					}
					return
				}
				ended := s.serve(ctx)
				took := time.Since(at)
				e.Exit(engine.WithRtMs(took.Milliseconds()))
				switch {
				case !ended:
					unended.Add(1)
				case time.Since(start) >= measureAfter:
					mu.Lock()
					run.served = append(run.served, took)
					mu.Unlock()
				}
			})
		}
	}
	// The calls still queued end unserved, counted apart: their latency
	// would be longer still.
	cancel()
	calls.Wait()
	run.refused, run.unended = refused.Load(), unended.Load()
	if st, ok := r.AdaptiveLimit(); ok {
		run.limit = st.Limit
	}
	return run
}

// adaptiveOverload is issue #34's overload figure: the p99 latency of a
// service's served calls under three times the arrivals it completes,
// with an adaptive concurrency rule enforcing (each algorithm) and
// without, beside its no-load p99 (half its capacity), in one run.
func adaptiveOverload(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("adaptive", flag.ContinueOnError)
	capacity := fs.Int64("capacity", 20, "calls the service serves at once before they queue")
	baseMs := fs.Int64("base-ms", 20, "how long a call takes within the capacity, in milliseconds")
	overload := fs.Float64("overload", 3, "arrivals as a multiple of what the service completes (capacity ÷ base)")
	duration := fs.Duration("duration", 5*time.Second, "how long each run is measured")
	warmUp := fs.Duration("warmup", 5*time.Second, "how long each run offers its load before it is measured (the rule learns meanwhile)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *capacity < 1 || *baseMs < 1 || *overload <= 0 || *duration <= 0 || *warmUp < 0 {
		return fmt.Errorf("-capacity and -base-ms must be at least 1, -overload and -duration above 0, -warmup not negative")
	}
	completes := float64(*capacity) * 1000 / float64(*baseMs)
	fmt.Printf("adaptive: a service of %d calls at once in %d ms (%.0f calls/s at best), %v measured after %v of warm-up\n",
		*capacity, *baseMs, completes, *duration, *warmUp)
	var noLoadP99 time.Duration
	for _, tc := range []struct {
		name      string
		perSecond float64
		algorithm engine.AdaptiveAlgorithm
	}{
		{"no load (half the capacity)", completes / 2, ""},
		{fmt.Sprintf("%gx overload, no rule", *overload), completes * *overload, ""},
		{fmt.Sprintf("%gx overload, gradient2", *overload), completes * *overload, engine.AdaptiveGradient2},
		{fmt.Sprintf("%gx overload, aimd", *overload), completes * *overload, engine.AdaptiveAIMD},
	} {
		e := engine.New(engine.Options{})
		if tc.algorithm != "" {
			if err := e.LoadAdaptiveConcurrencyRules([]engine.AdaptiveConcurrencyRule{{Name: "adaptive", Resource: "svc", Algorithm: tc.algorithm}}); err != nil {
				e.Close()
				return err
			}
		}
		s := &overloadService{capacity: *capacity, baseMs: *baseMs}
		run := offer(ctx, s, e.Resource("svc"), tc.perSecond, *warmUp+*duration, *warmUp)
		e.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if len(run.served) == 0 {
			fmt.Printf("  %-28s no call served\n", tc.name)
			continue
		}
		slices.Sort(run.served)
		p99 := percentile(run.served, 99)
		if noLoadP99 == 0 {
			noLoadP99 = p99
		}
		fmt.Printf("  %-28s p99 %-9v (%.1fx no load)  served %6d  refused %6d  queued at the end %6d", tc.name, p99.Round(100*time.Microsecond),
			float64(p99)/float64(noLoadP99), len(run.served), run.refused, run.unended)
		if run.limit > 0 {
			fmt.Printf("  limit at the end %d", run.limit)
		}
		fmt.Println()
	}
	return nil
}
