package server

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkRuleCreateHTTP creates rules over a real listener into a real
// SQLite file and reports the median latency of one create.
func BenchmarkRuleCreateHTTP(b *testing.B) {
	n := startNode(b, filepath.Join(b.TempDir(), "sluice.db"))
	latencies := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		body := fmt.Sprintf(`{"kind":"flow","name":"rule-%d","resource":"resource-%d","threshold":100}`, i, i)
		i++
		start := time.Now()
		resp, err := adminPost(n.baseURL+"/api/v1/rules", body)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		latencies = append(latencies, time.Since(start))
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
}

// BenchmarkApply1000 applies a file of 1,000 new rules into an empty
// database: one transaction, 1,000 rows and revisions, one engine load.
func BenchmarkApply1000(b *testing.B) {
	var body strings.Builder
	body.WriteString(`{"rules":[`)
	for i := range 1000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"name":"rule-%d","kind":"flow","resource":"resource-%d","threshold":%d}`, i, i, i+1)
	}
	body.WriteString(`]}`)
	for b.Loop() {
		b.StopTimer()
		n := startNode(b, filepath.Join(b.TempDir(), "sluice.db"))
		b.StartTimer()
		resp, err := adminPost(n.baseURL+"/api/v1/rules/apply", body.String())
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		b.StopTimer()
		n.stop()
		b.StartTimer()
	}
}

// adminPost posts a JSON body as the bootstrap admin.
func adminPost(url, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	return http.DefaultClient.Do(req)
}
