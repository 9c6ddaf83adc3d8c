// Command accuracy measures, on the wall clock, how closely Sluice and
// sentinel-golang hold a rule of 100 passes per second, one engine after the
// other in the same process. These are ENGINE.md's accuracy figures:
//
//   - reject: a QPS reject rule (threshold 100, statIntervalMs 1000) hammered
//     by two goroutines. Every pass is timestamped with time.Now() to the
//     microsecond; the report gives the most passes in any real 1-second
//     window (sliding over the timestamps), the passes in the first second,
//     and the mean per second.
//   - throttling: a throttling rule (threshold 100, maxQueueingTimeMs 500)
//     called by two goroutines that sleep the wait they are given (both
//     engines sleep inside Entry); the report gives the mean spacing between
//     consecutive passes and the smallest spacing.
//
// Usage, from engine/benchmarks:
//
//	go run ./accuracy [-duration 5s]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/benchmarks"
)

const (
	// callers is how many goroutines call Entry at once.
	callers = 2
	// threshold is the rules' passes per statInterval.
	threshold = 100
	// statIntervalMs is the rules' statistic interval.
	statIntervalMs = 1000
	// maxQueueingTimeMs is the longest wait the throttling rules hand out.
	maxQueueingTimeMs = 500
	// second is one second in microseconds, the unit of the timestamps.
	second = int64(time.Second / time.Microsecond)
)

func main() {
	duration := flag.Duration("duration", 5*time.Second, "how long each engine is hammered per rule")
	flag.Parse()
	if *duration < time.Second {
		fmt.Fprintln(os.Stderr, "accuracy: -duration must be at least 1s")
		os.Exit(2)
	}
	if err := run(*duration); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}

// run measures both engines for d on each rule and prints the two tables.
func run(d time.Duration) error {
	dir, err := os.MkdirTemp("", "sluice-accuracy-sentinel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := benchmarks.InitSentinel(dir); err != nil {
		return fmt.Errorf("init sentinel-golang: %w", err)
	}

	fmt.Printf("%d goroutines, %v per engine and rule, GOMAXPROCS %d\n\n", callers, d, runtime.GOMAXPROCS(0))

	sluiceReject, err := sluiceRun(engine.FlowRule{
		Name: "accuracy-reject", Resource: "accuracy-reject", Threshold: threshold,
		StatIntervalMs: statIntervalMs, ControlBehavior: engine.BehaviorReject,
	}, d)
	if err != nil {
		return err
	}
	sentinelReject, err := sentinelRun(&flow.Rule{
		Resource: "accuracy-reject", TokenCalculateStrategy: flow.Direct, ControlBehavior: flow.Reject,
		Threshold: threshold, StatIntervalInMs: statIntervalMs,
	}, d)
	if err != nil {
		return err
	}
	sluiceThrottle, err := sluiceRun(engine.FlowRule{
		Name: "accuracy-throttling", Resource: "accuracy-throttling", Threshold: threshold,
		StatIntervalMs: statIntervalMs, ControlBehavior: engine.BehaviorThrottling, MaxQueueingTimeMs: maxQueueingTimeMs,
	}, d)
	if err != nil {
		return err
	}
	sentinelThrottle, err := sentinelRun(&flow.Rule{
		Resource: "accuracy-throttling", TokenCalculateStrategy: flow.Direct, ControlBehavior: flow.Throttling,
		Threshold: threshold, StatIntervalInMs: statIntervalMs, MaxQueueingTimeMs: maxQueueingTimeMs,
	}, d)
	if err != nil {
		return err
	}

	fmt.Printf("reject: threshold %d per %d ms\n", threshold, statIntervalMs)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "engine\tpasses\tmax in any 1 s\tfirst second\tmean per second\t")
	for _, r := range []struct {
		name   string
		passes []int64
	}{{"sluice", sluiceReject}, {"sentinel", sentinelReject}} {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.1f\t\n", r.name, len(r.passes), maxInWindow(r.passes, second),
			countBefore(r.passes, second), float64(len(r.passes))/d.Seconds())
	}
	if err := w.Flush(); err != nil {
		return err
	}

	fmt.Printf("\nthrottling: threshold %d per %d ms, maxQueueingTimeMs %d\n", threshold, statIntervalMs, maxQueueingTimeMs)
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "engine\tpasses\tmean spacing\tsmallest spacing\t")
	for _, r := range []struct {
		name   string
		passes []int64
	}{{"sluice", sluiceThrottle}, {"sentinel", sentinelThrottle}} {
		mean, smallest := spacing(r.passes)
		fmt.Fprintf(w, "%s\t%d\t%.3f ms\t%.3f ms\t\n", r.name, len(r.passes), mean, smallest)
	}
	return w.Flush()
}

// sluiceRun loads rule into a new Sluice engine and hammers Entry by name
// on its resource for d; it returns the passes' times (see hammer).
func sluiceRun(rule engine.FlowRule, d time.Duration) ([]int64, error) {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	if err := eng.LoadFlowRules([]engine.FlowRule{rule}); err != nil {
		return nil, err
	}
	return hammer(func() bool {
		en, blk := eng.Entry(rule.Resource)
		if blk != nil {
			return false
		}
		en.Exit()
		return true
	}, d), nil
}

// sentinelRun makes rule sentinel-golang's only flow rule and hammers
// api.Entry on its resource, as inbound traffic, for d; it returns the
// passes' times (see hammer).
func sentinelRun(rule *flow.Rule, d time.Duration) ([]int64, error) {
	if _, err := flow.LoadRules([]*flow.Rule{rule}); err != nil {
		return nil, err
	}
	inbound := api.WithTrafficType(base.Inbound)
	return hammer(func() bool {
		en, blk := api.Entry(rule.Resource, inbound)
		if blk != nil {
			return false
		}
		en.Exit()
		return true
	}, d), nil
}

// hammer calls try (one call to an engine, ended at once; true if it
// passed) from callers goroutines without pause for d and returns the time
// of every pass, in microseconds since the start, sorted.
func hammer(try func() bool, d time.Duration) []int64 {
	start := time.Now()
	var (
		mu     sync.Mutex
		passes []int64
		wg     sync.WaitGroup
	)
	for range callers {
		wg.Go(func() {
			var mine []int64
			for time.Since(start) < d {
				if try() {
					mine = append(mine, time.Since(start).Microseconds())
				}
			}
			mu.Lock()
			passes = append(passes, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(passes)
	return passes
}

// maxInWindow returns the most timestamps of sorted that fit in any
// half-open window [t, t+width), sliding the window over every timestamp.
func maxInWindow(sorted []int64, width int64) int {
	most, first := 0, 0
	for last, t := range sorted {
		for t-sorted[first] >= width {
			first++
		}
		most = max(most, last-first+1)
	}
	return most
}

// countBefore returns how many timestamps of sorted are below limit.
func countBefore(sorted []int64, limit int64) int {
	n, _ := slices.BinarySearch(sorted, limit)
	return n
}

// spacing returns the mean and the smallest gap between consecutive
// timestamps of sorted, in milliseconds; zeros if there are fewer than two.
func spacing(sorted []int64) (mean, smallest float64) {
	if len(sorted) < 2 {
		return 0, 0
	}
	least := sorted[1] - sorted[0]
	for i := 2; i < len(sorted); i++ {
		least = min(least, sorted[i]-sorted[i-1])
	}
	mean = float64(sorted[len(sorted)-1]-sorted[0]) / float64(len(sorted)-1) / 1000
	return mean, float64(least) / 1000
}
