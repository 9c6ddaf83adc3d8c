package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// node is one run of the server process on a database file.
type node struct {
	*testServer
	engine *engine.Engine
	stop   func()
}

// startNode runs a server on the SQLite file at path, as the binary does.
func startNode(t testing.TB, path string) *node {
	t.Helper()
	return startNodeWith(t, path, nil)
}

// startNodeWith is startNode with configure changing the Config first.
func startNodeWith(t testing.TB, path string, configure func(*Config)) *node {
	t.Helper()
	st, err := store.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{})
	cfg := Config{Engine: eng, Store: st, BootstrapToken: adminToken, PasswordCost: bcrypt.MinCost}
	if configure != nil {
		configure(&cfg)
	}
	srv, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	n := &node{testServer: &testServer{Server: srv, store: st, baseURL: "http://" + ln.Addr().String()}, engine: eng}
	stopped := false
	n.stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := errors.Join(srv.Shutdown(ctx), <-served, st.Close()); err != nil {
			t.Error(err)
		}
		eng.Close()
	}
	t.Cleanup(n.stop)
	return n
}

// send makes one JSON request and decodes a 2xx answer into out.
func (n *node) send(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	resp, data := n.do(t, method, path, strings.NewReader(body))
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
func storedRules(t *testing.T, n *node) []string {
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

func assertAgree(t *testing.T, n *node, want []string) {
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
	path := filepath.Join(t.TempDir(), "sluice.db")
	first := startNode(t, path)
	var a, b, c Rule
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
	first.stop()

	second := startNode(t, path)
	assertAgree(t, second, []string{"a=11"})
	var got Rule
	second.send(t, http.MethodGet, fmt.Sprintf("/api/v1/rules/%d", a.ID), "", &got)
	if got.Version != 2 || *got.Threshold != 11 || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("rule a after restart = %+v, want version 2, threshold 11, same createdAt", got)
	}
	var revs RevisionList
	second.send(t, http.MethodGet, fmt.Sprintf("/api/v1/rules/%d/revisions", c.ID), "", &revs)
	if revs.Total != 2 || revs.Items[0].Action != "delete" || revs.Items[1].Action != "create" {
		t.Fatalf("deleted rule's history after restart = %+v", revs)
	}
	var d Rule
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
	n := startNode(t, filepath.Join(t.TempDir(), "sluice.db"))
	var a Rule
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

	t.Run("engine refuses the set", func(t *testing.T) {
		// A row the API would never write: the transaction's final check
		// with the engine must roll it back.
		err := n.rules.write(t.Context(), false, func(tx *ruleTx) error {
			row := store.Rule{Name: "bad", Kind: kindFlow, Resource: "x", Enabled: true, Mode: "enforce", Spec: `{"threshold":-5}`}
			if err := tx.CreateRule(&row); err != nil {
				return err
			}
			r, err := ruleFromStore(row)
			tx.saved(&r)
			return err
		})
		var invalid *engine.ValidationError
		if !errors.As(err, &invalid) {
			t.Fatalf("write = %v, want the engine's validation error", err)
		}
		assertAgree(t, n, want)
		if rows, _ := n.store.AllRules(t.Context()); len(rows) != 2 {
			t.Fatalf("%d rows stored, want 2", len(rows))
		}
	})
}
