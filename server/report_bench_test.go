package server

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/store"
)

// BenchmarkDecodeReport decodes an instance's report as engine/remote
// sends it, of 50 resources: each second's (live rows only) and a
// minute's end (live rows and the minute's rows). A fleet's reports are
// mostly the first; decoding was most of a report's CPU on the server.
func BenchmarkDecodeReport(b *testing.B) {
	nowMs := metricsT0 + 10_000
	at := time.UnixMilli(metricsT0 - store.MinuteMs).UTC()
	var minutes []wire.ReportMinute
	var live []wire.ReportLive
	for r := range 50 {
		name := fmt.Sprintf("orders-api-%d", r)
		m := wire.ReportMinute{Resource: name, Time: at}
		m.Pass, m.Block, m.Complete, m.RtSumMs, m.MinRtMs, m.MaxRtMs, m.MaxConcurrency = 6000, 12, 6000, 42000, 1, 90, 14
		minutes = append(minutes, m)
		l := wire.ReportLive{Resource: name}
		l.PassQps, l.CompleteQps, l.AvgRtMs, l.Concurrency = 100, 100, 7.25, 3
		live = append(live, l)
	}
	instance := wire.ReportInstance{ID: "host-1:4242:9f3c", App: "shop", Hostname: "host-1", PID: 4242, Version: "1.4.0", RulesRevision: 17}
	for _, bench := range []struct {
		name   string
		report wire.Report
	}{
		{"second", wire.Report{Instance: instance, Live: live}},
		{"minute", wire.Report{Instance: instance, Minutes: minutes, Live: live}},
	} {
		body, err := json.Marshal(bench.report)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bench.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, got, _, err := decodeReport(body, 0, nowMs); err != nil || len(got) != 50 {
					b.Fatalf("decoded %d live rows: %v", len(got), err)
				}
			}
		})
	}
}
