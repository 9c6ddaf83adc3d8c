package server

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// benchResourcesEnv sets how many resources the resource benchmarks seed:
// 1,000 unless it says otherwise (SLUICE_BENCH_RESOURCES=200000), so that
// they run in moments with -benchtime 1x.
const benchResourcesEnv = "SLUICE_BENCH_RESOURCES"

// benchLiveResources is how many of them have live traffic in the engine,
// at most.
const benchLiveResources = 1000

func benchResourceCount(b *testing.B) int {
	b.Helper()
	v := os.Getenv(benchResourcesEnv)
	if v == "" {
		return 1000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a whole number of resources", benchResourcesEnv, v)
	}
	return n
}

// benchName is the name of the i-th seeded resource: route-like, and in no
// particular order of i.
func benchName(i int) string {
	return fmt.Sprintf("GET /api/items/%07d", (i*7919)%10_000_000)
}

// adminGet reads url as the bootstrap admin with the headers given and
// returns how many bytes the body took on the wire; any status but 200
// fails the benchmark.
func adminGet(b *testing.B, url string, header map[string]string) int64 {
	b.Helper()
	req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	size, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return size
}

// benchNode is a server on a real SQLite file whose engine's clock stands
// still, so that the traffic a benchmark seeds stays the last second's.
func benchNode(b *testing.B) *testServer {
	b.Helper()
	return startServer(b, func(cfg *Config) {
		cfg.UnguardedAPI = true
		cfg.MetricsFlushInterval = time.Hour
	}, nil, servertest.EngineOptions(engine.Options{Clock: engine.NewManualClock(time.Now().UnixMilli())}), servertest.DiscardLogs())
}

// BenchmarkResourcesList reads pages of GET /resources over HTTP from a
// real SQLite file that knows SLUICE_BENCH_RESOURCES resources (1,000 by
// default) with stored traffic, 1,000 of them live in the engine, and
// reports the median and 90th percentile latency.
func BenchmarkResourcesList(b *testing.B) {
	count := benchResourceCount(b)
	n := benchNode(b)
	startMs := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
	for from := 0; from < count; from += 10_000 {
		deltas := make([]store.MinuteDelta, 0, 10_000)
		for i := from; i < min(from+10_000, count); i++ {
			deltas = append(deltas, store.MinuteDelta{Resource: benchName(i), StartMs: startMs,
				Counts: engine.Counts{Calls: engine.Calls{Pass: int64(i % 100), Complete: int64(i % 100)}}})
		}
		if err := n.Store.AddMetrics(b.Context(), deltas); err != nil {
			b.Fatal(err)
		}
	}
	for i := range min(count, benchLiveResources) {
		for range 1 + i%5 {
			if e, blk := n.Engine.Entry(benchName(i * 13 % count)); blk == nil {
				e.Exit()
			}
		}
	}
	pageSize := 50
	lastPage := (count + pageSize - 1) / pageSize
	for _, bench := range []struct {
		name  string
		query string
	}{
		{"first page", "page=1"},
		{"middle page", fmt.Sprintf("page=%d", (lastPage+1)/2)},
		{"last page", fmt.Sprintf("page=%d", lastPage)},
		{"q, first page", "q=items%2F00001"},
		{"-passQps, first page", "sort=-passQps"},
		{"-passQps, last page", fmt.Sprintf("sort=-passQps&page=%d", lastPage)},
	} {
		b.Run(bench.name, func(b *testing.B) {
			var latencies []time.Duration
			for b.Loop() {
				start := time.Now()
				adminGet(b, n.URL+"/api/v1/resources?pageSize="+strconv.Itoa(pageSize)+"&"+bench.query, nil)
				latencies = append(latencies, time.Since(start))
			}
			reportLatencies(b, latencies)
		})
	}
}

// liveNode is a server whose engine tracks SLUICE_BENCH_RESOURCES
// resources (1,000 by default), each with traffic in the last second and
// collected by the pipeline, as they are at a scrape or a stream tick.
func liveNode(b *testing.B) *testServer {
	b.Helper()
	count := benchResourceCount(b)
	n := benchNode(b)
	for i := range count {
		if e, blk := n.Engine.Entry(benchName(i)); blk == nil {
			e.Exit()
		}
	}
	if got := n.Engine.ResourceCount(); got != count {
		b.Fatalf("the engine tracks %d resources, want %d (raise its MaxResources)", got, count)
	}
	n.metrics.Collect()
	return n
}

// BenchmarkPrometheusScrape scrapes GET /metrics over HTTP while the engine
// tracks SLUICE_BENCH_RESOURCES resources and an app's instances reported
// as many: the time and the bytes on the wire of one scrape, plain and
// gzipped (as Prometheus asks for it), the fleet's series included.
func BenchmarkPrometheusScrape(b *testing.B) {
	n := liveNode(b)
	in := store.Instance{UID: "bench", App: "bench", FirstSeenMs: time.Now().UnixMilli(), LastSeenMs: time.Now().UnixMilli()}
	if err := n.Store.PutInstance(b.Context(), &in); err != nil {
		b.Fatal(err)
	}
	count := benchResourceCount(b)
	startMs := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
	for from := 0; from < count; from += 10_000 {
		deltas := make([]store.MinuteDelta, 0, 10_000)
		for i := from; i < min(from+10_000, count); i++ {
			deltas = append(deltas, store.MinuteDelta{Resource: benchName(i), StartMs: startMs,
				Counts: engine.Counts{Calls: engine.Calls{Pass: int64(i%100 + 1), Block: int64(i % 3)}}})
		}
		if _, err := n.metrics.AddInstanceMinutes(b.Context(), in.ID, in.App, deltas); err != nil {
			b.Fatal(err)
		}
	}
	for _, encoding := range []string{"identity", "gzip"} {
		b.Run(encoding, func(b *testing.B) {
			var size int64
			var latencies []time.Duration
			for b.Loop() {
				start := time.Now()
				size = adminGet(b, n.URL+"/metrics", map[string]string{"Accept-Encoding": encoding})
				latencies = append(latencies, time.Since(start))
			}
			reportLatencies(b, latencies)
			b.ReportMetric(float64(size)/(1<<20), "MiB/scrape")
		})
	}
}

// BenchmarkStreamFrame builds the live stream's frame, as its ticker does
// once a second while anyone listens, when SLUICE_BENCH_RESOURCES
// resources had traffic in the last second: the time and the bytes of one
// tick.
func BenchmarkStreamFrame(b *testing.B) {
	n := liveNode(b)
	var frame *streamFrame
	for b.Loop() {
		frame = n.stream.frame()
	}
	if len(frame.stats.Resources) != benchResourceCount(b) {
		b.Fatalf("the frame holds %d resources, want %d", len(frame.stats.Resources), benchResourceCount(b))
	}
	b.ReportMetric(float64(len(frame.all))/(1<<20), "MiB/tick")
}

// BenchmarkStreamOverHTTP reads stats events of GET /metrics/stream while
// SLUICE_BENCH_RESOURCES resources had traffic in the last second: the
// bytes of one event as a client receives it.
func BenchmarkStreamOverHTTP(b *testing.B) {
	n := liveNode(b)
	req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, n.URL+"/api/v1/metrics/stream", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReaderSize(resp.Body, 1<<20)
	var size int
	for b.Loop() {
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(data, `{"time"`) {
				size = len(data)
				break
			}
		}
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/event")
	b.ReportMetric(0, "ns/op")
}
