package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/cluster/redistest"
	"github.com/sluicehq/sluice/server/servertest"
)

// sluiceMetricName finds the metric names a query uses.
var sluiceMetricName = regexp.MustCompile(`\bsluice_[a-z_]+\b`)

// TestGrafanaDashboardQueriesExistingMetrics scrapes a server with Redis,
// a circuit breaker and two instances of two apps reporting finished
// minutes, and finds every sluice_ metric name the shipped Grafana
// dashboard queries (deploy/grafana/sluice.json), and every one the
// alert rules use (deploy/prometheus/alerts.yml), among the scrape's
// samples; and the fleet's counters hold what the instances reported.
func TestGrafanaDashboardQueriesExistingMetrics(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	n := clusterNode(t, rds.URL(), "a")
	admin := bearer(servertest.AdminToken)
	for _, rule := range []string{
		`{"name":"pay","kind":"flow","resource":"pay","threshold":100,"scope":"cluster"}`,
		`{"name":"pay-breaker","kind":"circuitBreaker","resource":"pay","strategy":"errorRatio","threshold":0.5,"retryTimeoutMs":1000}`,
		`{"name":"closed","kind":"flow","resource":"closed","threshold":0}`,
	} {
		if status, data := n.as(t, admin, http.MethodPost, "/api/v1/rules", rule); status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", rule, status, data)
		}
	}
	// Calls on the server's own engine: a completed one, so the response
	// time histogram has samples.
	entry, blk := n.Engine.Entry("pay")
	if blk != nil {
		t.Fatal(blk)
	}
	entry.Exit()
	// And a blocked one, so the blocks by reason have samples.
	if _, blk := n.Engine.Entry("closed"); blk == nil {
		t.Fatal("a call on a resource of threshold 0 passed")
	}

	token, _ := n.newToken(t, "fleet", roleInstance, "")
	minute := time.Now().Add(-2 * time.Minute).Truncate(time.Minute).UTC().Format(time.RFC3339)
	for i, app := range []string{"shop", "billing"} {
		report := fmt.Sprintf(`{"instance":{"id":"i%d","app":%q,"hostname":"h","pid":1,"version":"t","rulesRevision":1},
			"minutes":[{"resource":"orders","time":%q,"pass":7,"block":3,"shadowBlock":1,"complete":7,"error":2,"rtSumMs":70,"minRtMs":5,"maxRtMs":20,"maxConcurrency":2,
				"blockedBy":[{"reason":"flow","rule":"orders-cap","blocked":3}]}],
			"live":[]}`, i, app, minute)
		if status, data := n.as(t, bearer(token), http.MethodPost, "/api/v1/instances/report", report); status != http.StatusNoContent {
			t.Fatalf("report of %s: %d %s", app, status, data)
		}
	}
	status, scrape := n.as(t, admin, http.MethodGet, "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d", status)
	}
	exposed := map[string]bool{}
	for line := range strings.SplitSeq(string(scrape), "\n") {
		if name, _, ok := strings.Cut(line, "{"); ok && !strings.HasPrefix(line, "#") {
			exposed[name] = true
		} else if name, _, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			exposed[name] = true
		}
	}
	for _, want := range []string{
		`sluice_fleet_passed_total{app="shop",resource="orders"} 7`,
		`sluice_fleet_blocked_total{app="billing",resource="orders"} 3`,
		`sluice_fleet_blocked_by_reason_total{app="billing",resource="orders",reason="flow"} 3`,
		`sluice_resource_blocked_by_reason_total{resource="closed",reason="flow"} 1`,
		`sluice_instances{app="shop",state="live"} 1`,
	} {
		if !strings.Contains(string(scrape), want) {
			t.Errorf("the scrape lacks %s", want)
		}
	}

	raw, err := os.ReadFile("../deploy/grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct{ List []struct{ Query any } }
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatal(err)
	}
	var queries []string
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			queries = append(queries, target.Expr)
		}
	}
	for _, v := range dashboard.Templating.List {
		if q, ok := v.Query.(string); ok {
			queries = append(queries, q)
		}
	}
	used := 0
	for _, q := range queries {
		for _, name := range sluiceMetricName.FindAllString(q, -1) {
			used++
			if !exposed[name] {
				t.Errorf("the dashboard queries %s, which the scrape does not expose (query %q)", name, q)
			}
		}
	}
	alerts, err := os.ReadFile("../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sluiceMetricName.FindAllString(string(alerts), -1) {
		if !exposed[name] {
			t.Errorf("deploy/prometheus/alerts.yml uses %s, which the scrape does not expose", name)
		}
	}
	if used < 10 {
		t.Fatalf("found %d metric names in the dashboard's queries, want its panels' (the test reads the wrong fields?)", used)
	}
}
