package remote

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// BenchmarkReportCycle measures what a report cycle costs the service,
// the network aside: collecting the engine's minutes and encoding the
// report of 100 busy resources, in a second within a minute (live figures
// only) and at a minute's end (100 finished minutes too).
func BenchmarkReportCycle(b *testing.B) {
	for _, minuteEnds := range []bool{false, true} {
		name := "steady"
		if minuteEnds {
			name = "minuteEnd"
		}
		b.Run(name, func(b *testing.B) {
			clock := engine.NewManualClock(0)
			c, err := New(Config{ServerURL: "http://127.0.0.1:1", App: "bench", Engine: engine.Options{Clock: clock}})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			resources := make([]*engine.Resource, 100)
			for i := range resources {
				resources[i] = c.Engine().Resource(fmt.Sprintf("GET /api/items/%d", i))
			}
			traffic := func() {
				for _, res := range resources {
					if e, blk := res.Entry(); blk == nil {
						e.Exit()
					}
				}
			}
			traffic()
			r := c.reports
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if minuteEnds {
					clock.Advance(60_000)
				}
				traffic()
				b.StartTimer()
				r.cycle.Lock()
				r.collect(c.stats, false)
				batch := r.batch(maxMinutesPerReport)
				if err := c.encode(wire.Report{Instance: c.identity(), Minutes: batch, Live: r.liveFigures(c.stats)}); err != nil {
					b.Fatal(err)
				}
				r.remove(len(batch), false)
				r.cycle.Unlock()
			}
			b.ReportMetric(float64(r.body.Len()), "bytes/report")
		})
	}
}
