package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store/pgtest"
)

// sharedDatabase is a PostgreSQL database for servers that share it, as
// replicas do: the test binary's (servertest.Main) or, on SQLite, one of
// a PostgreSQL server of the test's own.
func sharedDatabase(t *testing.T) string {
	t.Helper()
	if servertest.OnPostgres() {
		return filepath.Join(t.TempDir(), "shared.db") // the same path, the same database
	}
	pg := pgtest.StartForTest(t)
	return pg.NewDatabase(t)
}

// TestReplicasShareOneDatabase runs three servers on one PostgreSQL
// database: a rule written on one is in the others' engines, a token made
// or revoked on one is honoured or refused by another, their revisions
// agree, and their metric flushes add up.
func TestReplicasShareOneDatabase(t *testing.T) {
	db := sharedDatabase(t)
	a := &authNode{testServer: startServer(t, nil, nil, servertest.DBPath(db))}
	b := &authNode{testServer: startServer(t, nil, nil, servertest.DBPath(db))}
	c := &authNode{testServer: startServer(t, nil, nil, servertest.DBPath(db))}
	admin := bearer(servertest.AdminToken)

	if status, data := a.as(t, admin, http.MethodPost, "/api/v1/rules",
		`{"name":"closed","kind":"flow","resource":"orders","threshold":0}`); status != http.StatusCreated {
		t.Fatalf("create on a: %d %s", status, data)
	}
	pollUntil(t, "the rule written on a in b's and c's engines", 5*time.Second, func() bool {
		return len(b.Engine.FlowRules()) == 1 && len(c.Engine.FlowRules()) == 1
	})
	if status, data := b.as(t, admin, http.MethodPost, "/api/v1/check", `{"resource":"orders"}`); status != http.StatusOK ||
		!strings.Contains(string(data), `"allowed":false`) {
		t.Fatalf("check on b: %d %s, want blocked by the rule written on a", status, data)
	}
	revision := func(n *authNode) string {
		resp, _ := n.DoWith(t, http.MethodGet, "/api/v1/rules/snapshot", nil, admin)
		return resp.Header.Get("ETag")
	}
	if ra, rb, rc := revision(a), revision(b), revision(c); ra != rb || rb != rc || ra == "" {
		t.Fatalf("snapshot revisions a %q, b %q, c %q: want one global revision", ra, rb, rc)
	}

	token, id := a.newToken(t, "ci", roleViewer, "")
	pollUntil(t, "the token made on a accepted by b", 5*time.Second, func() bool {
		status, _ := b.as(t, bearer(token), http.MethodGet, "/api/v1/rules", "")
		return status == http.StatusOK
	})
	if status, data := a.as(t, admin, http.MethodDelete, fmt.Sprintf("/api/v1/tokens/%d", id), ""); status != http.StatusNoContent {
		t.Fatalf("revoke on a: %d %s", status, data)
	}
	pollUntil(t, "the token revoked on a refused by b", 5*time.Second, func() bool {
		status, _ := b.as(t, bearer(token), http.MethodGet, "/api/v1/rules", "")
		return status == http.StatusUnauthorized
	})

	from := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	for i, n := range []*authNode{a, a, a, b, b, c} {
		if status, data := n.as(t, admin, http.MethodPost, "/api/v1/check", `{"resource":"shared"}`); status != http.StatusOK {
			t.Fatalf("check %d: %d %s", i, status, data)
		}
	}
	a.Stop(t) // each flushes what it counted
	b.Stop(t)
	c.Stop(t)
	d := &authNode{testServer: startServer(t, nil, nil, servertest.DBPath(db))}
	to := time.Now().UTC().Add(2 * time.Minute).Format(time.RFC3339)
	status, data := d.as(t, admin, http.MethodGet, "/api/v1/resources/shared/metrics?from="+url.QueryEscape(from)+"&to="+url.QueryEscape(to), "")
	if status != http.StatusOK {
		t.Fatalf("history: %d %s", status, data)
	}
	var history struct{ Points []struct{ Pass int64 } }
	if err := json.Unmarshal(data, &history); err != nil {
		t.Fatal(err)
	}
	var pass int64
	for _, p := range history.Points {
		pass += p.Pass
	}
	if pass != 6 {
		t.Fatalf("passes in the history = %d, want the 6 the three replicas counted (3 + 2 + 1): %s", pass, data)
	}
}
