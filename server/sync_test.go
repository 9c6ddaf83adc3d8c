package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/servertest"
)

// send makes one JSON request and decodes a 2xx answer into out.
func (ts *testServer) send(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	resp, data := ts.Do(t, method, path, strings.NewReader(body))
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// engineFlowNames summarises the engine's rules as name=threshold, sorted.
func engineFlowNames(e *engine.Engine) []string {
	var out []string
	for _, r := range e.FlowRules() {
		out = append(out, fmt.Sprintf("%s=%g", r.Name, r.Threshold))
	}
	slices.Sort(out)
	return out
}

// storedRules summarises the enabled stored rules the same way.
func storedRules(t *testing.T, n *testServer) []string {
	t.Helper()
	var list RuleList
	if status := n.send(t, http.MethodGet, "/api/v1/rules?enabled=true&pageSize=500", "", &list); status != http.StatusOK {
		t.Fatalf("list: %d", status)
	}
	var out []string
	for _, r := range list.Items {
		out = append(out, fmt.Sprintf("%s=%g", r.Name, *r.Threshold))
	}
	slices.Sort(out)
	return out
}

func assertAgree(t *testing.T, n *testServer, want []string) {
	t.Helper()
	inEngine, inStore := engineFlowNames(n.engine), storedRules(t, n)
	if !slices.Equal(inEngine, want) || !slices.Equal(inStore, want) {
		t.Fatalf("engine %v, store %v; want both %v", inEngine, inStore, want)
	}
}

// TestRestartKeepsRulesVersionsAndIDs: create, update, delete, restart on
// the same file: rules, versions, revisions and IDs are intact, the engine
// is loaded before the first request, and IDs are never reused.
func TestRestartKeepsRulesVersionsAndIDs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.db")
	first := startServer(t, nil, nil, servertest.DBPath(path))
	var a, b, c rules.APIRule
	first.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"a","resource":"orders","threshold":10}`, &a)
	first.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"b","resource":"pay","threshold":20}`, &b)
	first.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"c","resource":"ship","threshold":30}`, &c)
	if status := first.send(t, http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", a.ID), `{"threshold":11}`, &a); status != http.StatusOK {
		t.Fatalf("patch: %d", status)
	}
	if status := first.send(t, http.MethodDelete, fmt.Sprintf("/api/v1/rules/%d", c.ID), "", nil); status != http.StatusNoContent {
		t.Fatalf("delete: %d", status)
	}
	if status := first.send(t, http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", b.ID), `{"enabled":false}`, &b); status != http.StatusOK {
		t.Fatalf("disable: %d", status)
	}
	assertAgree(t, first, []string{"a=11"})
	first.Stop(t)

	second := startServer(t, nil, nil, servertest.DBPath(path))
	assertAgree(t, second, []string{"a=11"})
	var got rules.APIRule
	second.send(t, http.MethodGet, fmt.Sprintf("/api/v1/rules/%d", a.ID), "", &got)
	if got.Version != 2 || *got.Threshold != 11 || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("rule a after restart = %+v, want version 2, threshold 11, same createdAt", got)
	}
	var revs RevisionList
	second.send(t, http.MethodGet, fmt.Sprintf("/api/v1/rules/%d/revisions", c.ID), "", &revs)
	if revs.Total != 2 || revs.Items[0].Action != "delete" || revs.Items[1].Action != "create" {
		t.Fatalf("deleted rule's history after restart = %+v", revs)
	}
	var d rules.APIRule
	second.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"d","resource":"x","threshold":1}`, &d)
	if d.ID <= c.ID {
		t.Fatalf("new rule got id %d; the deleted rule had %d: ids must never be reused", d.ID, c.ID)
	}
	assertAgree(t, second, []string{"a=11", "d=1"})
}

// TestFailedWritesChangeNothing: a write that fails, in validation, in the
// store or on the engine's check of the whole set, leaves both the
// database and the engine as they were.
func TestFailedWritesChangeNothing(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	var a rules.APIRule
	n.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"a","resource":"orders","threshold":10}`, &a)
	n.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"b","resource":"pay","threshold":20}`, nil)
	want := []string{"a=10", "b=20"}

	failures := []struct {
		name, method, path, body string
		status                   int
	}{
		{"invalid create", http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"x","threshold":-1}`, 422},
		{"name taken", http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"a","resource":"x","threshold":1}`, 409},
		{"rename onto a taken name", http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", a.ID), `{"name":"b","threshold":99}`, 409},
		{"invalid patch", http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", a.ID), `{"threshold":99,"statIntervalMs":5}`, 422},
		{"apply failing on its last rule", http.MethodPost, "/api/v1/rules/apply?prune=true",
			`{"rules":[{"name":"a","kind":"flow","resource":"orders","threshold":99},{"name":"z","kind":"flow","resource":"z","threshold":"x"}]}`, 422},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			if status := n.send(t, f.method, f.path, f.body, nil); status != f.status {
				t.Fatalf("status %d, want %d", status, f.status)
			}
			assertAgree(t, n, want)
		})
	}
}

// TestIncrementalWritesMatchAFullLoad makes random writes of every kind
// (create, update, move to another resource, rename, disable, delete,
// rollback, apply with and without prune, dry runs) and checks after each
// that the engine holds, resource by resource, what a start-up on the same
// file would load. The rule domain's tests check its indexes the same way.
func TestIncrementalWritesMatchAFullLoad(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	resource := func() string { return pick("r0", "r1", "r2", "r3") }
	name := func() string { return pick("n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7") }
	ruleBody := func(name string) string {
		switch rng.IntN(4) {
		case 0:
			return fmt.Sprintf(`{"kind":"circuitBreaker","name":%q,"resource":%q,"strategy":"errorCount","threshold":%d,"retryTimeoutMs":1000}`,
				name, resource(), 1+rng.IntN(3))
		case 1:
			return fmt.Sprintf(`{"kind":"flow","name":%q,"resource":%q,"threshold":%d,"statIntervalMs":2000,"relationStrategy":"associated","refResource":%q}`,
				name, resource(), rng.IntN(3), resource())
		}
		return fmt.Sprintf(`{"kind":"flow","name":%q,"resource":%q,"threshold":%d,"enabled":%t}`, name, resource(), rng.IntN(3), rng.IntN(4) > 0)
	}
	succeeded := 0
	for step := range 200 {
		var list RuleList
		n.send(t, http.MethodGet, "/api/v1/rules?pageSize=500", "", &list)
		var method, path, body string
		switch op := rng.IntN(10); {
		case op < 3 || len(list.Items) == 0:
			method, path, body = http.MethodPost, "/api/v1/rules", ruleBody(name())
		case op < 8:
			r := list.Items[rng.IntN(len(list.Items))]
			path = fmt.Sprintf("/api/v1/rules/%d", r.ID)
			switch rng.IntN(6) {
			case 0:
				method = http.MethodDelete
			case 1:
				method, path = http.MethodPost, fmt.Sprintf("%s/rollback?toVersion=%d", path, 1+rng.IntN(int(r.Version)))
			default:
				method = http.MethodPatch
				body = pick(
					fmt.Sprintf(`{"resource":%q}`, resource()),
					fmt.Sprintf(`{"threshold":%d}`, 1+rng.IntN(2)),
					fmt.Sprintf(`{"enabled":%t}`, rng.IntN(2) == 0),
					fmt.Sprintf(`{"name":%q}`, name()),
				)
			}
		default:
			var rules []string
			for _, wanted := range rng.Perm(8)[:rng.IntN(4)] {
				rules = append(rules, ruleBody(fmt.Sprintf("n%d", wanted)))
			}
			method, body = http.MethodPost, `{"rules":[`+strings.Join(rules, ",")+`]}`
			path = fmt.Sprintf("/api/v1/rules/apply?prune=%t&dryRun=%t", rng.IntN(3) == 0, rng.IntN(4) == 0)
		}
		status := n.send(t, method, path, body, nil)
		if status/100 == 2 {
			succeeded++
		} else if status != http.StatusConflict && status != http.StatusNotFound && status != http.StatusUnprocessableEntity {
			t.Fatalf("step %d: %s %s %s: status %d", step, method, path, body, status)
		}

		freshEngine := engine.New(engine.Options{Clock: engine.NewManualClock(0)})
		if err := rules.New(n.store, freshEngine).Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"flow", "breakers"} {
			got, want := loadedByResource(n.engine, kind), loadedByResource(freshEngine, kind)
			if !maps.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("step %d: after %s %s %s (%d) the engine's %s rules are %v, a full load's %v", step, method, path, body, status, kind, got, want)
			}
		}
	}
	if succeeded < 100 {
		t.Fatalf("only %d of 200 random writes succeeded", succeeded)
	}
}

// loadedByResource lists the names of an engine's flow or circuit breaker
// rules (kind "flow" or "breakers") by resource, in the order they apply.
func loadedByResource(e *engine.Engine, kind string) map[string][]string {
	out := map[string][]string{}
	if kind == "flow" {
		for _, r := range e.FlowRules() {
			out[r.Resource] = append(out[r.Resource], fmt.Sprintf("%s=%g>%s", r.Name, r.Threshold, r.RefResource))
		}
		return out
	}
	for _, r := range e.CircuitBreakerRules() {
		out[r.Resource] = append(out[r.Resource], fmt.Sprintf("%s=%g", r.Name, r.Threshold))
	}
	return out
}

// TestWriteLeavesOtherResourcesAlone: writes on other resources, one by one
// or in an apply, keep an open circuit breaker open and a rule's counted
// passes counted.
func TestWriteLeavesOtherResourcesAlone(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	n.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"circuitBreaker","name":"pay-errors","resource":"pay","strategy":"errorCount","threshold":1,"minRequestAmount":1,"retryTimeoutMs":3600000}`, nil)
	n.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"ship-qps","resource":"ship","threshold":2,"statIntervalMs":600000}`, nil)
	pay, ship := n.engine.Resource("pay"), n.engine.Resource("ship")
	if e, blk := pay.Entry(); blk == nil {
		e.Exit(engine.WithError(errors.New("boom")))
	}
	for range 2 {
		if e, blk := ship.Entry(); blk == nil {
			e.Exit()
		}
	}
	var orders rules.APIRule
	n.send(t, http.MethodPost, "/api/v1/rules", `{"kind":"flow","name":"orders-qps","resource":"orders","threshold":5}`, &orders)
	n.send(t, http.MethodPatch, fmt.Sprintf("/api/v1/rules/%d", orders.ID), `{"resource":"orders-v2"}`, nil)
	n.send(t, http.MethodPost, "/api/v1/rules/apply?prune=false", `{"rules":[{"name":"orders-qps","kind":"flow","resource":"orders","threshold":6},{"name":"new","kind":"flow","resource":"new","threshold":1}]}`, nil)
	n.send(t, http.MethodDelete, fmt.Sprintf("/api/v1/rules/%d", orders.ID), "", nil)
	if _, blk := pay.Entry(); blk == nil || blk.Reason() != engine.ReasonCircuitBreaker {
		t.Fatalf("pay after writes elsewhere: %v, want its breaker still open", blk)
	}
	if _, blk := ship.Entry(); blk == nil || blk.Rule() != "ship-qps" {
		t.Fatalf("ship after writes elsewhere: %v, want its 2 passes in 10 minutes still counted", blk)
	}
}

// TestEngineRefusalRollsBackTheWrite: a write the engine refuses on the
// rules that stay (a 65th circuit breaker on one resource) is 422 and
// leaves the store and the engine as they were.
func TestEngineRefusalRollsBackTheWrite(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	breaker := func(name, resource string) string {
		return fmt.Sprintf(`{"name":%q,"kind":"circuitBreaker","resource":%q,"strategy":"errorCount","threshold":1,"retryTimeoutMs":1000}`, name, resource)
	}
	var rules []string
	for i := range 64 {
		rules = append(rules, breaker(fmt.Sprintf("pay-%d", i), "pay"))
	}
	if status := n.send(t, http.MethodPost, "/api/v1/rules/apply", `{"rules":[`+strings.Join(rules, ",")+`]}`, nil); status != http.StatusOK {
		t.Fatalf("apply 64 breakers: %d", status)
	}
	resp, body := n.Do(t, http.MethodPost, "/api/v1/rules", strings.NewReader(breaker("pay-64", "pay")))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), "has more than 64 circuit breakers") {
		t.Fatalf("65th breaker: %d %s, want 422 naming the limit", resp.StatusCode, body)
	}
	if rows, _ := n.Store.AllRules(t.Context()); len(rows) != 64 {
		t.Fatalf("%d rules stored, want 64", len(rows))
	}
	if got := n.engine.CircuitBreakerRules(); len(got) != 64 {
		t.Fatalf("%d breakers loaded, want 64", len(got))
	}
	if status := n.send(t, http.MethodPost, "/api/v1/rules", breaker("ship-0", "ship"), nil); status != http.StatusCreated {
		t.Fatalf("a breaker on another resource: %d", status)
	}
}
