package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

// TestReplicasShareOneDatabase runs three servers on one PostgreSQL
// database: a rule written on one is in the others' engines, a token made
// or revoked on one is honoured or refused by another, their revisions
// agree, and their metric flushes add up.
func TestReplicasShareOneDatabase(t *testing.T) {
	t.Parallel()
	db := servertest.SharedDatabase(t)
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

// TestReplicasValidateWhatTheyCommit has two replicas on one PostgreSQL
// database each write, at once, a rule that passes the checks across rules
// alone but not with the other's: a concurrency hotspot rule, or a
// concurrency flow rule with a limitApp, on one resource. Round after
// round, exactly one is written and the other refused (422), by POST or
// by an apply whose many other rules keep its transaction open long, and
// both engines end with the rules the database has. Checked against the
// rules a replica last heard of, both would pass: neither has heard of the
// other's, which has not committed, or whose announcement waits for the
// replica's own write to end. Not parallel: its applies hold long
// transactions, and beside other tests they outran the client's timeout.
func TestReplicasValidateWhatTheyCommit(t *testing.T) {
	const rounds, padding = 16, 300
	db := servertest.SharedDatabase(t)
	nodes := [2]*testServer{startServer(t, nil, nil, servertest.DBPath(db)), startServer(t, nil, nil, servertest.DBPath(db))}
	sides := [2]string{"a", "b"}
	conflicting := []func(name, resource string) string{
		func(name, resource string) string {
			return fmt.Sprintf(`{"name":%q,"kind":"hotspot","resource":%q,"paramKey":"ip","metric":"concurrency","threshold":1}`, name, resource)
		},
		func(name, resource string) string {
			return fmt.Sprintf(`{"name":%q,"kind":"flow","resource":%q,"metric":"concurrency","threshold":1,"limitApp":"checkout"}`, name, resource)
		},
	}
	type write struct {
		path, body string
		want       int
	}
	writeOf := func(round int, side, resource string) write {
		rule := conflicting[round%len(conflicting)](side+"-"+resource, resource)
		if round/len(conflicting)%2 == 0 {
			return write{rulesPath, rule, http.StatusCreated}
		}
		var file strings.Builder
		for j := range padding {
			fmt.Fprintf(&file, `{"name":"pad-%s-%d-%d","kind":"flow","resource":"pad-%s-%d-%d","threshold":100},`, side, round, j, side, round, j)
		}
		return write{rulesPath + "/apply", `{"rules":[` + file.String() + rule + `]}`, http.StatusOK}
	}

	winners := map[string]bool{}
	for round := range rounds {
		resource := fmt.Sprintf("race-%d", round)
		var writes [2]write
		var statuses [2]int
		var bodies [2][]byte
		var errs [2]error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for side, ts := range nodes {
			writes[side] = writeOf(round, sides[side], resource)
			wg.Go(func() {
				<-start
				resp, body, err := ts.request(t.Context(), http.MethodPost, writes[side].path, writes[side].body, nil)
				if err != nil {
					errs[side] = err
					return
				}
				statuses[side], bodies[side] = resp.StatusCode, body
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for side, w := range writes {
			switch {
			case errs[side] != nil:
				t.Fatalf("%s on %s: %v", w.path, sides[side], errs[side])
			case statuses[side] == w.want:
				won++
				winners[sides[side]+"-"+resource] = true
			case statuses[side] != http.StatusUnprocessableEntity:
				t.Errorf("%s on %s for %s: %d %s, want %d or 422", w.path, sides[side], resource, statuses[side], bodies[side], w.want)
			}
		}
		if won != 1 {
			t.Errorf("%s: %d of the two replicas' rules written (%d %s; %d %s), want exactly one",
				resource, won, statuses[0], bodies[0], statuses[1], bodies[1])
		}
	}

	stored := map[string]bool{}
	for _, r := range nodes[0].listRules(t, "q=race-&pageSize=500").Items {
		stored[r.Name] = true
	}
	if !maps.Equal(stored, winners) {
		t.Errorf("stored rules %v, want the winners %v", slices.Sorted(maps.Keys(stored)), slices.Sorted(maps.Keys(winners)))
	}
	loaded := func(ts *testServer) map[string]bool {
		names := map[string]bool{}
		for _, r := range ts.Server.engine.FlowRules() {
			if strings.HasPrefix(r.Resource, "race-") {
				names[r.Name] = true
			}
		}
		for _, r := range ts.Server.engine.HotspotRules() {
			names[r.Name] = true
		}
		return names
	}
	pollUntil(t, "both engines holding the stored rules", 5*time.Second, func() bool {
		return maps.Equal(loaded(nodes[0]), stored) && maps.Equal(loaded(nodes[1]), stored)
	})
}
