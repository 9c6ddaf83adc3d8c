package remote_test

import (
	"testing"
)

// adaptiveRule is an adaptive concurrency rule as GET /rules shows it.
const adaptiveRule = `{"id": 2, "name": "search-limit", "kind": "adaptiveConcurrency", "resource": "search", "enabled": true,
	"mode": "enforce", "description": "", "algorithm": "gradient2", "initialLimit": 1, "minLimit": 1, "maxLimit": 50,
	"tolerance": 1.1, "smoothing": 0.2, "version": 1, "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-01T00:00:00Z"}`

// TestSnapshotCarriesAdaptiveRules: an instance enforces the adaptive
// concurrency rule of its snapshot, and a revision without it leaves the
// resource with none.
func TestSnapshotCarriesAdaptiveRules(t *testing.T) {
	srv := startTestServer(t, adaptiveRule)
	c, _ := startClient(t, srv.URL(), nil)
	waitReady(t, c)
	e := c.Engine()
	held, blk := e.Entry("search")
	if blk != nil {
		t.Fatalf("first call blocked: %v", blk)
	}
	if _, blk := e.Entry("search"); blk == nil || blk.Rule() != "search-limit" || blk.Limit() != 1 {
		t.Fatalf("second call in flight: %v, want blocked by search-limit at 1", blk)
	}
	held.Exit()
	srv.setRules(flowRule("pay-qps", "pay", 1))
	eventually(t, "revision 2 is in force", func() bool { return c.State().Revision == 2 })
	if rules := e.AdaptiveConcurrencyRules(); len(rules) != 0 {
		t.Fatalf("the engine still holds %+v", rules)
	}
}
