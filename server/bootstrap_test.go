package server

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// TestStartUpTokensSurviveRestarts starts a server three times on one
// database: the tokens --bootstrap-token and --instance-token register
// keep their rows across a restart with the same values (ID, createdAt and
// lastUsedAt: docs/api.md, idempotent across restarts), and a new value
// replaces the old, which stops working.
func TestStartUpTokensSurviveRestarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.db")
	clock := &testClock{now: time.Date(2026, 11, 20, 14, 5, 0, 0, time.UTC)}
	const instanceToken = "restart-instance-token"
	start := func(bootstrapToken string) *authNode {
		ts := startServer(t, func(cfg *Config) {
			cfg.Now = clock.Now
			cfg.BootstrapToken, cfg.InstanceToken = bootstrapToken, instanceToken
		}, nil, servertest.DBPath(path))
		return &authNode{testServer: ts, clock: clock}
	}
	startUpTokens := func(n *authNode) map[string]store.APIToken {
		t.Helper()
		all, err := n.Store.AllTokens(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]store.APIToken{}
		for _, tok := range all {
			byName[tok.Name] = tok
		}
		if len(byName) != 2 || byName[bootstrapTokenName].ID == 0 || byName[instanceTokenName].ID == 0 {
			t.Fatalf("tokens stored: %+v, want the bootstrap and the instance token only", all)
		}
		return byName
	}
	// use asks /me with token, answered want, and the snapshot with the
	// instance token, which always works.
	use := func(n *authNode, token string, want int) {
		t.Helper()
		if status, body := n.as(t, bearer(token), http.MethodGet, "/api/v1/me", ""); status != want {
			t.Fatalf("GET /api/v1/me: %d %s, want %d", status, body, want)
		}
		if status, body := n.as(t, bearer(instanceToken), http.MethodGet, snapshotPath, ""); status != http.StatusOK {
			t.Fatalf("GET %s as the instance token: %d %s, want 200", snapshotPath, status, body)
		}
	}

	first := start(servertest.AdminToken)
	use(first, servertest.AdminToken, http.StatusOK)
	before := startUpTokens(first)
	for name, tok := range before {
		if tok.LastUsedAt == nil || !tok.LastUsedAt.Equal(clock.Now()) {
			t.Fatalf("%s token's lastUsedAt %v, want its use at %v", name, tok.LastUsedAt, clock.Now())
		}
	}
	first.Stop(t)

	clock.Advance(time.Hour)
	again := start(servertest.AdminToken)
	after := startUpTokens(again)
	for name, was := range before {
		is := after[name]
		if is.ID != was.ID || !is.CreatedAt.Equal(was.CreatedAt) || is.LastUsedAt == nil || !is.LastUsedAt.Equal(*was.LastUsedAt) {
			t.Errorf("%s token after a restart with the same value: %+v, want the row kept: %+v", name, is, was)
		}
	}
	use(again, servertest.AdminToken, http.StatusOK)
	again.Stop(t)

	const rotated = "rotated-bootstrap-token"
	third := start(rotated)
	replaced := startUpTokens(third)
	if is, was := replaced[bootstrapTokenName], before[bootstrapTokenName]; is.ID == was.ID || is.LastUsedAt != nil || !is.CreatedAt.Equal(clock.Now()) {
		t.Errorf("bootstrap token after a restart with a new value: %+v, want a new row created now", is)
	}
	if replaced[instanceTokenName].ID != before[instanceTokenName].ID {
		t.Errorf("the instance token's row changed with the bootstrap token's value")
	}
	use(third, servertest.AdminToken, http.StatusUnauthorized)
	use(third, rotated, http.StatusOK)
}
