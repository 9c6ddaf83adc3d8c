package store

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// groupReport is instance i's report of one minute of n resources, each
// with pass calls.
func groupReport(n int, startMs, pass int64) []MinuteDelta {
	out := make([]MinuteDelta, n)
	for r := range out {
		out[r] = MinuteDelta{
			Resource: fmt.Sprintf("group-%d", r), StartMs: startMs,
			Counts: engine.Counts{Calls: engine.Calls{Pass: pass, Complete: pass}, RtSumMs: 2 * pass, MinRtMs: 1, MaxRtMs: 3, MaxConcurrency: 2},
		}
	}
	return out
}

// BenchmarkReportBurst is a fleet's minute-end burst: instances × 50
// resources reporting their minute at once, each its own call, as the
// server's handlers make them. It reports the calls' p50 and p99 and the
// reports per second.
func BenchmarkReportBurst(b *testing.B) {
	for _, instances := range []int{500, 2000} {
		b.Run(fmt.Sprint(instances), func(b *testing.B) {
			s := openBenchStore(b)
			ids := make([]int64, instances)
			for i := range ids {
				in := Instance{UID: fmt.Sprintf("i-%d", i), App: "bench", FirstSeenMs: minute(0), LastSeenMs: minute(0)}
				if err := s.PutInstance(b.Context(), &in); err != nil {
					b.Fatal(err)
				}
				ids[i] = in.ID
			}
			var took []time.Duration
			var mu sync.Mutex
			m := int64(0)
			for b.Loop() {
				m++
				report := groupReport(50, minute(m), 3000)
				var wg sync.WaitGroup
				for _, id := range ids {
					wg.Go(func() {
						start := time.Now()
						_, err := s.AddInstanceMinutes(b.Context(), id, report, 100_000)
						d := time.Since(start)
						if err != nil {
							b.Error(err)
						}
						mu.Lock()
						took = append(took, d)
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(len(took))/b.Elapsed().Seconds(), "reports/s")
		})
	}
}

// BenchmarkReportSpread is a fleet's minute reports as they come with
// the minute spread (docs/performance.md, "Spread minutes"): one at a
// time, each its own group commit, of 50 resources that the minute's
// first report stored. An op is one report.
func BenchmarkReportSpread(b *testing.B) {
	s := openBenchStore(b)
	ids := make([]int64, 2000)
	for i := range ids {
		in := Instance{UID: fmt.Sprintf("i-%d", i), App: "bench", FirstSeenMs: minute(0), LastSeenMs: minute(0)}
		if err := s.PutInstance(b.Context(), &in); err != nil {
			b.Fatal(err)
		}
		ids[i] = in.ID
	}
	i, m := 0, int64(1)
	report := groupReport(50, minute(m), 3000)
	for b.Loop() {
		if i == len(ids) {
			i, m = 0, m+1
			report = groupReport(50, minute(m), 3000)
		}
		if _, err := s.AddInstanceMinutes(b.Context(), ids[i], report, 100_000); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// openBenchStore is openTestStore for a benchmark.
func openBenchStore(b *testing.B) *Store {
	b.Helper()
	url := b.TempDir() + "/sluice.db"
	if testPostgres != nil {
		url = testPostgres.NewDatabase(b)
	}
	s, err := Open(b.Context(), url, discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkPutInstances is a group commit of 1,000 known instances
// rewriting their records, as a fleet's do every few seconds.
func BenchmarkPutInstances(b *testing.B) {
	s := openBenchStore(b)
	group := make([]*Instance, 1000)
	for i := range group {
		group[i] = &Instance{UID: fmt.Sprintf("host-%d:4242:9f3c", i), App: "shop", Hostname: "host", PID: 4242, Version: "1.4.0", FirstSeenMs: minute(0), LastSeenMs: minute(0)}
	}
	if err := s.putInstances(b.Context(), group); err != nil {
		b.Fatal(err)
	}
	seenMs := minute(0)
	for b.Loop() {
		seenMs += 5000
		for _, in := range group {
			in.LastSeenMs = seenMs
		}
		if err := s.putInstances(b.Context(), group); err != nil {
			b.Fatal(err)
		}
	}
}
