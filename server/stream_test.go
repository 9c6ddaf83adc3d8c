package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
)

// fastStream makes the stream tick every 20ms instead of every second.
func fastStream(s *Server) { s.stream.interval = 20 * time.Millisecond }

// openStream opens the metric stream and reads up to the end of its
// backlog event, so that the server has subscribed it.
func openStream(t *testing.T, ctx context.Context, c *http.Client, n *metricsNode, query string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, r, _ := openStreamBacklog(t, ctx, c, n, query)
	return resp, r
}

// openStreamBacklog opens the metric stream and reads its first messages:
// the retry hint and the backlog, which it returns.
func openStreamBacklog(t *testing.T, ctx context.Context, c *http.Client, n *metricsNode, query string) (*http.Response, *bufio.Reader, StreamBacklog) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.URL+"/api/v1/metrics/stream?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q; want 200 and text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(resp.Body)
	if _, err := readEvent(r); err != nil {
		t.Fatalf("reading the first message: %v", err)
	}
	ev, err := readEvent(r)
	if err != nil || ev["event"] != "backlog" {
		t.Fatalf("the second message is %v (%v), want the backlog", ev, err)
	}
	var backlog StreamBacklog
	if err := json.Unmarshal([]byte(strings.ReplaceAll(ev["data"], "null", "-1")), &backlog); err != nil {
		t.Fatalf("backlog: %v: %s", err, ev["data"])
	}
	return resp, r, backlog
}

func TestStreamOpensWithBacklog(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 5_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, fastStream)
	clock.Advance(1000) // past the second the server sampled as it started
	traffic(t, n.engine, "orders", 4, 0, 10)
	n.metrics.SampleLive()
	clock.Advance(1000)
	n.metrics.SampleLive() // orders idle: its calls are a second old
	clock.Advance(2000)    // a second goes unsampled
	traffic(t, n.engine, "orders", 2, 0, 30)
	n.metrics.SampleLive()

	for _, query := range []string{"", "resource=orders"} {
		t.Run(query, func(t *testing.T) {
			resp, _, got := openStreamBacklog(t, t.Context(), client, n, query)
			defer resp.Body.Close()
			last := time.UnixMilli(metricsT0 + 9_000).UTC()
			if got.StepMs != 1000 || !got.To.Equal(last) || !got.From.Equal(last.Add(-299*time.Second)) || len(got.Resources) != 1 {
				t.Fatalf("backlog from %v to %v, step %d, %d resources", got.From, got.To, got.StepMs, len(got.Resources))
			}
			r := got.Resources[0]
			// The last four seconds: traffic, idle, a gap (null, read here
			// as -1), traffic; avgRtMs null while nothing completed.
			tail := func(s []float64) []float64 { return s[len(s)-4:] }
			if r.Name != "orders" || !reflect.DeepEqual(tail(r.PassQps), []float64{4, 0, -1, 2}) ||
				!reflect.DeepEqual(tail(r.AvgRtMs), []float64{10, -1, -1, 30}) || len(r.BlockQps) != 300 {
				t.Errorf("orders = %s: pass %v, avgRtMs %v", r.Name, tail(r.PassQps), tail(r.AvgRtMs))
			}
		})
	}
	resp, _, got := openStreamBacklog(t, t.Context(), client, n, "resource=idle")
	defer resp.Body.Close()
	if got.Resources == nil || len(got.Resources) != 0 {
		t.Errorf("the backlog of a resource without traffic = %+v, want no resources", got.Resources)
	}
}

// readEvent reads one message: its lines up to the blank one.
func readEvent(r *bufio.Reader) (map[string]string, error) {
	fields := map[string]string{}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return fields, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return fields, nil
		}
		k, v, _ := strings.Cut(line, ": ")
		fields[k] = v
	}
}

func TestStreamSendsLiveFigures(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 5_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, fastStream)
	traffic(t, n.engine, "orders", 4, 1, 10)
	traffic(t, n.engine, "pay", 2, 0, 30)
	n.engine.Resource("idle")
	orders := StreamResource{Name: "orders", LiveStats: LiveStats{PassQps: 4, CompleteQps: 4, ErrorQps: 1, AvgRtMs: 10}}
	pay := StreamResource{Name: "pay", LiveStats: LiveStats{PassQps: 2, CompleteQps: 2, AvgRtMs: 30}}
	tests := []struct {
		query string
		want  []StreamResource
	}{
		{query: "", want: []StreamResource{orders, pay}},
		{query: "resource=pay", want: []StreamResource{pay}},
		{query: "resource=idle", want: []StreamResource{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, r := openStream(t, t.Context(), client, n, tt.query)
			defer resp.Body.Close()
			if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
				t.Errorf("Cache-Control = %q, want no-cache", cc)
			}
			ev, err := readEvent(r)
			if err != nil {
				t.Fatal(err)
			}
			if ev["event"] != "stats" {
				t.Fatalf("event %q, want stats: %v", ev["event"], ev)
			}
			var got StreamStats
			if err := json.Unmarshal([]byte(ev["data"]), &got); err != nil {
				t.Fatalf("data: %v: %s", err, ev["data"])
			}
			if got.Resources == nil {
				t.Fatalf("resources is null: %s", ev["data"])
			}
			byName := map[string]StreamResource{}
			for _, r := range got.Resources {
				byName[r.Name] = r
			}
			wantByName := map[string]StreamResource{}
			for _, r := range tt.want {
				wantByName[r.Name] = r
			}
			if !reflect.DeepEqual(byName, wantByName) || !got.Time.Equal(time.UnixMilli(metricsT0+5_000)) {
				t.Errorf("stats at %v = %+v, want %+v at %v", got.Time, got.Resources, tt.want, time.UnixMilli(metricsT0+5_000).UTC())
			}
		})
	}
}

func TestStreamSendsBreakerChanges(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, fastStream)
	n.createRule(t, map[string]any{"kind": "circuitBreaker", "name": "pay-errors", "resource": "pay",
		"strategy": "errorCount", "threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 60_000})
	resp, r := openStream(t, t.Context(), client, n, "resource=pay")
	defer resp.Body.Close()

	traffic(t, n.engine, "pay", 1, 1, 5) // the error opens the breaker
	for range 100 {
		ev, err := readEvent(r)
		if err != nil {
			t.Fatal(err)
		}
		if ev["event"] != "breaker" {
			continue
		}
		var got BreakerEvent
		if err := json.Unmarshal([]byte(ev["data"]), &got); err != nil {
			t.Fatalf("data: %v: %s", err, ev["data"])
		}
		want := BreakerEvent{Rule: "pay-errors", Resource: "pay", From: "closed", To: "open", Time: time.UnixMilli(metricsT0).UTC()}
		if got != want {
			t.Errorf("breaker event = %+v, want %+v", got, want)
		}
		return
	}
	t.Fatal("no breaker event among the first 100")
}

// streamGoroutines counts the goroutines that serve streams or feed them.
func streamGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "server.(*metricsHandler).streamStats") || strings.Contains(g, "server.(*streamHub).tick") {
			count++
		}
	}
	return count
}

// TestStreamDropsGoneClients opens 100 streams, drops them all, and checks
// that every listener and goroutine they had is gone.
func TestStreamDropsGoneClients(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, fastStream)
	traffic(t, n.engine, "orders", 1, 0, 1)
	baseline := streamGoroutines()
	tr := &http.Transport{MaxIdleConnsPerHost: -1}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}

	const streams = 100
	ctx, cancel := context.WithCancel(t.Context())
	var bodies []*http.Response
	for range streams {
		resp, _ := openStream(t, ctx, c, n, "")
		bodies = append(bodies, resp)
	}
	if got := n.stream.subscribers(); got != streams {
		t.Fatalf("%d listeners, want %d", got, streams)
	}
	if got := streamGoroutines(); got < baseline+streams {
		t.Fatalf("%d stream goroutines with %d streams open, want at least %d", got, streams, baseline+streams)
	}
	cancel()
	for _, resp := range bodies {
		resp.Body.Close()
	}
	pollUntil(t, "every listener to go", 10*time.Second, func() bool { return n.stream.subscribers() == 0 })
	pollUntil(t, "the stream goroutines to end", 10*time.Second, func() bool { return streamGoroutines() == baseline })
}

// TestShutdownEndsStreams: a stream does not hold a shutdown up.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	resp, r := openStream(t, t.Context(), client, n, "")
	defer resp.Body.Close()
	start := time.Now()
	n.Stop(t)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("shutdown with a stream open took %v", took)
	}
	if _, err := readEvent(r); err == nil {
		t.Error("the stream is still open after shutdown")
	}
}

// TestAppendStreamStats: the frame's hand-written JSON is what
// encoding/json writes, for names to escape and floats of every range.
func TestAppendStreamStats(t *testing.T) {
	t.Parallel()
	stats := StreamStats{Time: time.Date(2026, 3, 2, 10, 0, 1, 250_000_000, time.UTC), Resources: []StreamResource{}}
	if got, want := string(appendStreamStats(nil, stats)), `{"time":"2026-03-02T10:00:01.25Z","resources":[]}`; got != want {
		t.Errorf("no resources: %s, want %s", got, want)
	}
	for i, f := range []float64{0, 1, 120, 12.5, 1.0 / 3, 1e-7, 2.5e-9, 1e20, 1e21, 123456789e30, -4} {
		stats.Resources = append(stats.Resources, StreamResource{
			Name:      []string{"GET:/api/orders", `quote " back \ slash`, "tab\there", "café ☕", "<b>&"}[i%5],
			LiveStats: LiveStats{PassQps: f, BlockQps: f * 2, ShadowBlockQps: f / 3, CompleteQps: 1, ErrorQps: f, AvgRtMs: f + 0.5, Concurrency: int64(i)},
		})
	}
	var want strings.Builder
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(stats); err != nil {
		t.Fatal(err)
	}
	if got := string(appendStreamStats(nil, stats)); got != strings.TrimSuffix(want.String(), "\n") {
		t.Errorf("appendStreamStats =\n%s\nencoding/json =\n%s", got, want.String())
	}
}

func TestBreakerTransitionsStored(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, fastStream)
	n.createRule(t, map[string]any{"kind": "circuitBreaker", "name": "pay-errors", "resource": "pay",
		"strategy": "errorCount", "threshold": 1, "minRequestAmount": 1, "retryTimeoutMs": 1000})
	traffic(t, n.engine, "pay", 1, 1, 5) // closed → open
	clock.Advance(1000)
	traffic(t, n.engine, "pay", 1, 0, 5) // open → halfOpen → closed, in one millisecond

	want := []string{"closed>open", "open>halfOpen", "halfOpen>closed"}
	// The feed stores them on its own goroutine.
	var got BreakerTransitionList
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		if status := n.send(t, http.MethodGet, fmt.Sprintf("/api/v1/breakers/transitions?resource=pay&from=%d", metricsT0), "", &got); status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
		if len(got.Items) >= len(want) || time.Now().After(deadline) {
			break
		}
	}
	var steps []string
	for _, e := range got.Items {
		steps = append(steps, e.From+">"+e.To)
	}
	if !reflect.DeepEqual(steps, want) || got.Truncated || got.Items[0].Rule != "pay-errors" ||
		!got.Items[0].Time.Equal(time.UnixMilli(metricsT0)) || !got.Items[2].Time.Equal(time.UnixMilli(metricsT0+1000)) {
		t.Fatalf("transitions = %+v, want %v", got, want)
	}
	if status := n.send(t, http.MethodGet, "/api/v1/breakers/transitions?resource=orders", "", &got); status != http.StatusOK || got.Items == nil || len(got.Items) != 0 {
		t.Errorf("another resource: %d %+v, want no transitions", status, got.Items)
	}
	if status := n.send(t, http.MethodGet, "/api/v1/breakers/transitions?from=5&to=5", "", nil); status != http.StatusBadRequest {
		t.Errorf("an empty range: %d, want 400", status)
	}

	// The retention job prunes them with the metrics.
	clock.Advance(48 * time.Hour.Milliseconds())
	if err := n.metrics.Prune(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if n.send(t, http.MethodGet, fmt.Sprintf("/api/v1/breakers/transitions?from=%d", metricsT0), "", &got); len(got.Items) != 0 {
		t.Errorf("after the retention: %+v", got.Items)
	}
}
