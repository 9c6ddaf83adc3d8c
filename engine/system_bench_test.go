package engine

import "testing"

// BenchmarkInboundEntryExit measures what inbound calls and system rules
// add to Entry+Exit by handle with one QPS rule that lets every call
// pass: a call not marked inbound (as every call was before system
// rules), an inbound call with no system rule loaded, and inbound calls
// with system rules of the counted and the sampled figures.
func BenchmarkInboundEntryExit(b *testing.B) {
	cases := []struct {
		name    string
		inbound bool
		rules   []SystemRule
	}{
		{"not inbound", false, nil},
		{"inbound, no system rule", true, nil},
		{"not inbound, system rules", false, []SystemRule{{MetricType: SystemConcurrency, TriggerCount: 1e12}}},
		{"inbound, concurrency rule", true, []SystemRule{{MetricType: SystemConcurrency, TriggerCount: 1e12}}},
		{"inbound, inboundQps rule", true, []SystemRule{{MetricType: SystemInboundQPS, TriggerCount: 1e12}}},
		{"inbound, cpuUsage rule", true, []SystemRule{{MetricType: SystemCPUUsage, TriggerCount: 1}}},
		{"inbound, every metric", true, []SystemRule{
			{MetricType: SystemLoad, TriggerCount: 1e12},
			{MetricType: SystemCPUUsage, TriggerCount: 1},
			{MetricType: SystemAvgRt, TriggerCount: 1e12},
			{MetricType: SystemConcurrency, TriggerCount: 1e12},
			{MetricType: SystemInboundQPS, TriggerCount: 1e12},
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12})
			if err := e.LoadSystemRules(c.rules); err != nil {
				b.Fatal(err)
			}
			r := e.Resource("orders")
			var opts []EntryOption
			if c.inbound {
				opts = append(opts, WithInbound())
			}
			b.ReportAllocs()
			for b.Loop() {
				en, blk := r.Entry(opts...)
				if blk != nil {
					b.Fatal(blk)
				}
				en.Exit()
			}
		})
	}
}

// BenchmarkInboundEntryExitParallel is the inbound call with a
// concurrency system rule on every core: the inbound statistics are
// shared by every call of the engine.
func BenchmarkInboundEntryExitParallel(b *testing.B) {
	e := benchEngine(b, FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 1e12})
	if err := e.LoadSystemRules([]SystemRule{{MetricType: SystemConcurrency, TriggerCount: 1e12}}); err != nil {
		b.Fatal(err)
	}
	r := e.Resource("orders")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			en, blk := r.Entry(WithInbound())
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
}
