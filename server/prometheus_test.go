package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/server/servertest"
)

// TestPrometheusExpositionParses: the hand-written families and the
// registry's parse as one text exposition, plain or gzipped, with any
// resource name as a label value.
func TestPrometheusExpositionParses(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	names := []string{"orders", `quote " and back \ slash`, "new\nline", "café ☕"}
	for i, name := range names {
		traffic(t, n.engine, name, i+1, 0, 250)
	}
	for _, encoding := range []string{"identity", "gzip"} {
		t.Run(encoding, func(t *testing.T) {
			resp, body := n.call(t, http.MethodGet, "/metrics", nil, reqHeader{"Accept-Encoding": encoding})
			mustStatus(t, resp, body, http.StatusOK)
			if got := resp.Header.Get("Content-Type"); got != "text/plain; version=0.0.4; charset=utf-8" {
				t.Errorf("Content-Type %q", got)
			}
			if encoding == "gzip" {
				if resp.Header.Get("Content-Encoding") != "gzip" {
					t.Fatal("no Content-Encoding: gzip")
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			parser := expfmt.NewTextParser(model.LegacyValidation)
			families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("the exposition does not parse: %v\n%s", err, body)
			}
			passed := map[string]float64{}
			for _, m := range families["sluice_resource_passed_total"].GetMetric() {
				passed[label(m, "resource")] = m.GetCounter().GetValue()
			}
			for i, name := range names {
				if passed[name] != float64(i+1) {
					t.Errorf("passed_total of %q = %v, want %d (all: %v)", name, passed[name], i+1, passed)
				}
			}
			rt := families["sluice_resource_response_time_seconds"]
			if rt.GetType() != dto.MetricType_HISTOGRAM || len(rt.GetMetric()) != len(names) {
				t.Fatalf("response time family %v", rt)
			}
			for _, m := range rt.GetMetric() {
				if h := m.GetHistogram(); h.GetSampleSum() != 0.25*float64(h.GetSampleCount()) {
					t.Errorf("%s: sum %v of %d calls of 250 ms", label(m, "resource"), h.GetSampleSum(), h.GetSampleCount())
				}
			}
			for _, family := range []string{"sluice_resource_concurrency", "sluice_resources_tracked", "sluice_resource_overflow_total", "go_goroutines"} {
				if families[family] == nil {
					t.Errorf("no family %s", family)
				}
			}
			if strings.Count(string(body), "# TYPE sluice_resource_passed_total ") != 1 {
				t.Error("the passed family is not written once")
			}
		})
	}
}

// label returns the value of m's label called name.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestPrometheusResponseTimeHistogram: the response time is a histogram
// family that the Prometheus text parser reads as one, with the buckets
// of docs/api.md's ms range in seconds, cumulative, +Inf holding every call;
// its count and sum are exact (the completed counter's), and each
// collection's calls are counted in the bucket of their mean, as the help
// says (the engine keeps no per-call distribution).
func TestPrometheusResponseTimeHistogram(t *testing.T) {
	t.Parallel()
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), engine.NewManualClock(metricsT0), nil)
	bounds := []float64{0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, math.Inf(1)}
	steps := []struct {
		name  string
		rtsMs []int64 // the calls of one collection
		// wantNew is the calls each bucket (by upper bound) gains.
		wantNew map[float64]uint64
	}{
		{name: "1 ms is in le 0.001", rtsMs: []int64{1, 1, 1}, wantNew: map[float64]uint64{0.001: 3}},
		{name: "0 ms too", rtsMs: []int64{0}, wantNew: map[float64]uint64{0.001: 1}},
		{name: "30 ms in le 0.05", rtsMs: []int64{30, 30}, wantNew: map[float64]uint64{0.05: 2}},
		{name: "past 10 s only in +Inf", rtsMs: []int64{20000}, wantNew: map[float64]uint64{math.Inf(1): 1}},
		{name: "one collection counts at its mean", rtsMs: []int64{10, 290}, wantNew: map[float64]uint64{0.25: 2}},
	}
	perBucket := map[float64]uint64{}
	var calls, sumMs int64
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			for _, rt := range step.rtsMs {
				traffic(t, n.engine, "orders", 1, 0, rt)
				calls++
				sumMs += rt
			}
			for le, c := range step.wantNew {
				perBucket[le] += c
			}

			resp, body := n.call(t, http.MethodGet, "/metrics", nil, nil)

			mustStatus(t, resp, body, http.StatusOK)
			parser := expfmt.NewTextParser(model.LegacyValidation)
			families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("the exposition does not parse: %v", err)
			}
			family := families["sluice_resource_response_time_seconds"]
			if family.GetType() != dto.MetricType_HISTOGRAM || len(family.GetMetric()) != 1 {
				t.Fatalf("response time family %v, want one histogram", family)
			}
			h := family.GetMetric()[0].GetHistogram()
			completed := families["sluice_resource_completed_total"].GetMetric()[0].GetCounter().GetValue()
			if h.GetSampleCount() != uint64(calls) || float64(h.GetSampleCount()) != completed {
				t.Errorf("count %d, want %d calls, as completed_total (%v)", h.GetSampleCount(), calls, completed)
			}
			if want := float64(sumMs) / 1000; math.Abs(h.GetSampleSum()-want) > 1e-9 {
				t.Errorf("sum %v s, want %v", h.GetSampleSum(), want)
			}
			buckets := h.GetBucket()
			if len(buckets) != len(bounds) {
				t.Fatalf("%d buckets, want %d: %v", len(buckets), len(bounds), buckets)
			}
			var want uint64
			for i, b := range buckets {
				want += perBucket[bounds[i]]
				if b.GetUpperBound() != bounds[i] || b.GetCumulativeCount() != want {
					t.Errorf("bucket %d: le %v holds %d, want le %v holding %d", i, b.GetUpperBound(), b.GetCumulativeCount(), bounds[i], want)
				}
			}
			if want != h.GetSampleCount() {
				t.Errorf("+Inf holds %d, the count is %d", want, h.GetSampleCount())
			}
		})
	}
}

// TestHeadOfAStreamLeavesTheConnectionClean: HEAD of a route that streams
// its body answers the headers alone, and the next request on the same
// connection is answered as it should be; a streamed body left unsent put
// the end of a chunked body ("\r\n") on the connection.
func TestHeadOfAStreamLeavesTheConnectionClean(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	for _, tc := range []struct{ path, contentType string }{
		{"/metrics", metrics.ExpositionContentType},
		{"/api/v1/metrics/stream", "text/event-stream"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", n.Addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			header := "Host: sluice.test\r\nAuthorization: Bearer " + servertest.AdminToken + "\r\n"
			if _, err := io.WriteString(conn, "HEAD "+tc.path+" HTTP/1.1\r\n"+header+"\r\nGET /api/v1/health HTTP/1.1\r\n"+header+"\r\n"); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(conn)
			for _, method := range []string{http.MethodHead, http.MethodGet} {
				resp, err := http.ReadResponse(r, &http.Request{Method: method})
				if err != nil {
					t.Fatalf("the %s answer: %v", method, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("the %s answer: %d %v %s", method, resp.StatusCode, err, body)
				}
				if method == http.MethodHead && resp.Header.Get("Content-Type") != tc.contentType {
					t.Errorf("HEAD Content-Type %q, want GET's %q", resp.Header.Get("Content-Type"), tc.contentType)
				}
			}
		})
	}
}
