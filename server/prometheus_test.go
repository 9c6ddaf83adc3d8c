package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluicehq/sluice/engine"
)

// TestPrometheusExpositionParses: the hand-written families and the
// registry's parse as one text exposition, plain or gzipped, with any
// resource name as a label value.
func TestPrometheusExpositionParses(t *testing.T) {
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
			if rt.GetType() != dto.MetricType_SUMMARY || len(rt.GetMetric()) != len(names) {
				t.Fatalf("response time family %v", rt)
			}
			for _, m := range rt.GetMetric() {
				if s := m.GetSummary(); s.GetSampleSum() != 0.25*float64(s.GetSampleCount()) {
					t.Errorf("%s: sum %v of %d calls of 250 ms", label(m, "resource"), s.GetSampleSum(), s.GetSampleCount())
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
