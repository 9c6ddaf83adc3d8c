package engine

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
)

func benchEngine(b *testing.B, rules ...FlowRule) *Engine {
	b.Helper()
	e := New(Options{})
	b.Cleanup(e.Close)
	if err := e.LoadFlowRules(rules); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkEntryExitPass is docs/engine.md's first figure: Entry and Exit by
// name with one QPS reject rule that lets every call pass.
func BenchmarkEntryExitPass(b *testing.B) {
	e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12})
	b.ReportAllocs()
	for b.Loop() {
		en, blk := e.Entry("orders")
		if blk != nil {
			b.Fatal(blk)
		}
		en.Exit()
	}
}

// BenchmarkEntryExitPassHandle is the same through a resource handle.
func BenchmarkEntryExitPassHandle(b *testing.B) {
	e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12})
	r := e.Resource("orders")
	b.ReportAllocs()
	for b.Loop() {
		en, blk := r.Entry()
		if blk != nil {
			b.Fatal(blk)
		}
		en.Exit()
	}
}

// BenchmarkEntryExitPassParallel runs the first figure on every core.
func BenchmarkEntryExitPassParallel(b *testing.B) {
	e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			en, blk := e.Entry("orders")
			if blk != nil {
				// Fatal may only be called from the benchmark's goroutine.
				b.Error(blk)
				return
			}
			en.Exit()
		}
	})
}

// BenchmarkEntryExitPassHandleParallel is the same through a resource
// handle: every call writes the resource's counters, one cache line that
// the cores pass between them.
func BenchmarkEntryExitPassHandleParallel(b *testing.B) {
	r := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12}).Resource("orders")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			en, blk := r.Entry()
			if blk != nil {
				b.Error(blk)
				return
			}
			en.Exit()
		}
	})
}

// BenchmarkEntryBlocked is an Entry that a threshold of 0 blocks.
func BenchmarkEntryBlocked(b *testing.B) {
	e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 0})
	b.ReportAllocs()
	for b.Loop() {
		if _, blk := e.Entry("orders"); blk == nil {
			b.Fatal("passed")
		}
	}
}

// BenchmarkEntryExitError records an error on Exit.
func BenchmarkEntryExitError(b *testing.B) {
	e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12})
	err := errors.New("boom")
	b.ReportAllocs()
	for b.Loop() {
		en, blk := e.Entry("orders")
		if blk != nil {
			b.Fatal(blk)
		}
		en.Exit(WithError(err))
	}
}

// BenchmarkReload10k loads 10,000 rules on 10,000 resources, alternating
// between two sets that differ in every threshold, so each load builds
// every rule anew.
func BenchmarkReload10k(b *testing.B) {
	e := benchEngine(b)
	sets := [2][]FlowRule{make([]FlowRule, 10_000), make([]FlowRule, 10_000)}
	for i := range 10_000 {
		name, resource := "rule-"+strconv.Itoa(i), "resource-"+strconv.Itoa(i)
		sets[0][i] = FlowRule{Name: name, Resource: resource, Threshold: 100}
		sets[1][i] = FlowRule{Name: name, Resource: resource, Threshold: 200}
	}
	i := 0
	for b.Loop() {
		if err := e.LoadFlowRules(sets[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEntryExitFlowAndBreaker is docs/engine.md's third figure: Entry and
// Exit by name with a QPS rule and a closed circuit breaker.
func BenchmarkEntryExitFlowAndBreaker(b *testing.B) {
	e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12})
	err := e.LoadCircuitBreakerRules([]CircuitBreakerRule{{
		Name: "orders-errors", Resource: "orders", Strategy: StrategyErrorRatio, Threshold: 0.5, RetryTimeoutMs: 1000,
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		en, blk := e.Entry("orders")
		if blk != nil {
			b.Fatal(blk)
		}
		en.Exit()
	}
}

// hotspotBenchEngine returns an engine with one hotspot rule on "orders"
// that limits each value of "user" and lets every call pass, with values
// user-0 … user-(n-1) tracked already.
func hotspotBenchEngine(b *testing.B, values int) *Engine {
	b.Helper()
	e := benchEngine(b)
	err := e.LoadHotspotRules([]HotspotRule{{Name: "per-user", Resource: "orders", ParamKey: "user", Threshold: MaxThreshold}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range values {
		if en, blk := e.Entry("orders", WithParam("user", "user-"+strconv.Itoa(i))); blk == nil {
			en.Exit()
		}
	}
	return e
}

// BenchmarkHotspotEntryExitHandle is docs/engine.md's hotspot figure: Entry
// and Exit by handle with one hotspot rule, the value tracked, passing.
func BenchmarkHotspotEntryExitHandle(b *testing.B) {
	r := hotspotBenchEngine(b, 1).Resource("orders")
	b.ReportAllocs()
	for b.Loop() {
		en, blk := r.Entry(WithParam("user", "user-0"))
		if blk != nil {
			b.Fatal(blk)
		}
		en.Exit()
	}
}

// BenchmarkHotspotEntryExitParallel is the same on every core, each
// goroutine on values of its own.
func BenchmarkHotspotEntryExitParallel(b *testing.B) {
	const perGoroutine = 1024
	e := hotspotBenchEngine(b, 64*perGoroutine)
	r := e.Resource("orders")
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		first := int(next.Add(1)-1) % 64 * perGoroutine
		values := make([]string, perGoroutine)
		for i := range values {
			values[i] = "user-" + strconv.Itoa(first+i)
		}
		i := 0
		for pb.Next() {
			en, blk := r.Entry(WithParam("user", values[i%perGoroutine]))
			if blk != nil {
				b.Error(blk)
				return
			}
			en.Exit()
			i++
		}
	})
}

// BenchmarkHotValues reads the top 10 of a hotspot rule whose sketch is
// full: every slice of the minute holds as many values as it can.
func BenchmarkHotValues(b *testing.B) {
	clock := NewManualClock(0)
	e := New(Options{Clock: clock})
	b.Cleanup(e.Close)
	err := e.LoadHotspotRules([]HotspotRule{{Name: "per-user", Resource: "orders", ParamKey: "user", Threshold: MaxThreshold}})
	if err != nil {
		b.Fatal(err)
	}
	r := e.Resource("orders")
	for ms := range int64(60_000) {
		clock.Set(ms)
		if en, blk := r.Entry(WithParam("user", "user-"+strconv.Itoa(int(ms%1000)))); blk == nil {
			en.Exit()
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if hot := r.HotValues(10); len(hot[0].ByPass) != 10 {
			b.Fatalf("%d values", len(hot[0].ByPass))
		}
	}
}

// BenchmarkHotSketchRecord is what the sketch adds to a call of a busy
// hotspot rule: the sampling gate, and now and then the lock.
func BenchmarkHotSketchRecord(b *testing.B) {
	s := newHotSketch()
	b.ReportAllocs()
	for total := int64(1); b.Loop(); total++ {
		s.record(0, "user-0", 1, false, passDraw(total, 0))
	}
}

// BenchmarkEntryExitAdaptive is issue #34's hot-path figure: Entry and
// Exit by handle with an adaptive concurrency rule loaded beside the same
// with a plain concurrency flow rule, in one run, on one goroutine and on
// every core. Neither blocks; the adaptive rule learns on the real clock
// as it would in service.
func BenchmarkEntryExitAdaptive(b *testing.B) {
	concurrency := func(b *testing.B) *Resource {
		return benchEngine(b, FlowRule{Name: "conc", Resource: "svc", Metric: MetricConcurrency, Threshold: 1e6}).Resource("svc")
	}
	adaptive := func(b *testing.B) *Resource {
		e := benchEngine(b)
		err := e.LoadAdaptiveConcurrencyRules([]AdaptiveConcurrencyRule{{Name: "adaptive", Resource: "svc", InitialLimit: 1e6, MaxLimit: 1e6}})
		if err != nil {
			b.Fatal(err)
		}
		return e.Resource("svc")
	}
	for _, tc := range []struct {
		name     string
		resource func(*testing.B) *Resource
	}{{"concurrency", concurrency}, {"adaptive", adaptive}} {
		b.Run(tc.name, func(b *testing.B) {
			r := tc.resource(b)
			b.ReportAllocs()
			for b.Loop() {
				en, blk := r.Entry()
				if blk != nil {
					b.Fatal(blk)
				}
				en.Exit()
			}
		})
		b.Run(tc.name+"Parallel", func(b *testing.B) {
			r := tc.resource(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					en, blk := r.Entry()
					if blk != nil {
						b.Error(blk)
						return
					}
					en.Exit()
				}
			})
		})
	}
}
