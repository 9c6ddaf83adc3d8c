package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/cluster/redistest"
)

// TestClusterRule creates a cluster rule through the form on a server
// with Redis: the form offers the fallback fields only for scope cluster,
// the rule list says "cluster", and, Redis killed, "fallback: local" on
// the rule list and the resource page.
func TestClusterRule(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	n := startNode(t, nodeConfig{redisURL: rds.URL()})
	tb := newTab(t, n.url)
	tb.login()

	tb.visit("/rules/new", "New rule")
	tb.waitFor("no fallback field for a local rule", `document.querySelector('#rule-flow-clusterFallback').closest('.field').hidden`)
	tb.fill("#rule-name", "payments-global")
	tb.fill("#rule-resource", "POST:/api/pay")
	tb.fill("#rule-flow-threshold", "1000")
	tb.fill("#rule-flow-scope", "cluster")
	tb.waitFor("the fallback fields shown for a cluster rule", `!document.querySelector('#rule-flow-clusterFallback').closest('.field').hidden`)
	tb.fill("#rule-flow-clusterFallback", "local")
	tb.fill("#rule-flow-clusterFallbackThreshold", "300")
	tb.click("#rule-save")
	tb.waitText("main h1", "Rules")
	tb.waitText(`tr[data-rule="payments-global"] [data-scope="cluster"]`, "cluster")
	rule := n.rule(t, 1)
	if *rule.Scope != "cluster" || *rule.ClusterFallback != "local" || *rule.ClusterFallbackThreshold != 300 {
		t.Fatalf("stored rule: scope %v, fallback %v %v", *rule.Scope, *rule.ClusterFallback, *rule.ClusterFallbackThreshold)
	}
	if status, body := n.call(t, http.MethodGet, "/cluster", nil); status != http.StatusOK || !strings.Contains(string(body), `"state":"cluster"`) {
		t.Fatalf("GET /cluster = %d %s", status, body)
	}

	rds.Kill()
	deadline := time.Now().Add(waitTimeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for ; ; <-tick.C {
		if _, body := n.call(t, http.MethodGet, "/cluster", nil); strings.Contains(string(body), `"state":"fallback"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not fall back within %v of Redis killed", waitTimeout)
		}
	}
	tb.visit("/resources/POST%3A%2Fapi%2Fpay", "POST:/api/pay")
	tb.waitText(`tr[data-rule="payments-global"] [data-fallback="local"]`, "fallback: local")
	tb.visit("/rules", "Rules")
	tb.waitText(`tr[data-rule="payments-global"] [data-fallback="local"]`, "fallback: local")
	tb.checkAccessibility("a cluster rule falling back")
}
