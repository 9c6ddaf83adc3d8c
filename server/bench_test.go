package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// ruleCountsEnv lists the numbers of stored rules BenchmarkRuleCreateHTTP
// creates on top of, comma-separated ("0,1000,10000,100000"). The default is
// small, so that a -benchtime 1x run stays quick.
const ruleCountsEnv = "SLUICE_BENCH_RULES"

// BenchmarkRuleCreateHTTP creates rules over a real listener into a real
// SQLite file that already holds n rules, for each n of SLUICE_BENCH_RULES
// (default 0 and 1,000), and reports the median and 99th percentile latency
// of one create.
func BenchmarkRuleCreateHTTP(b *testing.B) {
	counts := []int{0, 1000}
	if env := os.Getenv(ruleCountsEnv); env != "" {
		counts = counts[:0]
		for _, field := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(field))
			if err != nil || n < 0 {
				b.Fatalf("%s=%q: want numbers of rules, comma-separated", ruleCountsEnv, env)
			}
			counts = append(counts, n)
		}
	}
	for _, count := range counts {
		b.Run(fmt.Sprintf("rules=%d", count), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "sluice.db")
			seedRules(b, path, count)
			n := startServer(b, nil, nil, servertest.DBPath(path), servertest.DiscardLogs())
			latencies := make([]time.Duration, 0, b.N)
			i := 0
			for b.Loop() {
				body := fmt.Sprintf(`{"kind":"flow","name":"rule-%d","resource":"resource-%d","threshold":100}`, i, i)
				i++
				start := time.Now()
				resp, err := adminPost(n.URL+"/api/v1/rules", body)
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
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// seedRules stores count flow rules, each on its own resource and with its
// create revision, in one transaction straight through the store.
func seedRules(b *testing.B, path string, count int) {
	b.Helper()
	st, err := store.Open(b.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	err = st.InTx(b.Context(), func(tx *store.Tx) error {
		for i := range count {
			row := store.Rule{
				Name: fmt.Sprintf("seeded-%d", i), Kind: engine.KindFlow, Resource: fmt.Sprintf("seeded-%d", i),
				Enabled: true, Mode: string(engine.ModeEnforce), Spec: `{"threshold":100}`,
			}
			if err := tx.CreateRule(&row); err != nil {
				return err
			}
			err := tx.AddRevision(&store.RuleRevision{RuleID: row.ID, Version: row.Version, Action: store.ActionCreate, Content: "{}", Actor: "seed"})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
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
		n := startServer(b, nil, nil, servertest.DiscardLogs())
		b.StartTimer()
		resp, err := adminPost(n.URL+"/api/v1/rules/apply", body.String())
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		b.StopTimer()
		n.Stop(b)
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
	req.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
	return http.DefaultClient.Do(req)
}
