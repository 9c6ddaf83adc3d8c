package rules

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// The rule domain's own tests: each write against a real store, through
// the Service, without HTTP. The handlers' tests (server/rules_test.go)
// keep what is HTTP's: status codes, headers, bodies.

var tester = Actor{Name: "tester", Reason: "test"}

func TestCreate(t *testing.T) {
	t.Run("Success: stored, loaded, its first revision kept", func(t *testing.T) {
		s := openService(t)
		r, err := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID == 0 || r.Version != 1 || r.Name != "flow-orders" {
			t.Fatalf("created %+v, want an id, version 1 and the name flow-orders", r)
		}
		got, err := s.Get(t.Context(), r.ID)
		if err != nil || got.Spec.(engine.FlowRule).Threshold != 5 {
			t.Fatalf("Get = %+v, %v", got, err)
		}
		if loaded := s.engine.FlowRules(); len(loaded) != 1 || loaded[0].Name != "flow-orders" || loaded[0].Threshold != 5 {
			t.Fatalf("the engine holds %+v", loaded)
		}
		revs, total, err := s.Revisions(t.Context(), r.ID, store.Page{Number: 1, Size: 10})
		if err != nil || total != 1 || revs[0].Action != store.ActionCreate || revs[0].Actor != "tester" || revs[0].Reason != "test" {
			t.Fatalf("revisions %+v (%d), %v", revs, total, err)
		}
	})
	t.Run("Invalid: a taken name is a conflict, and nothing more is stored", func(t *testing.T) {
		s := openService(t)
		body := `{"kind":"flow","name":"a","resource":"orders","threshold":5}`
		if _, err := s.Create(t.Context(), decoded(t, body), tester); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(t.Context(), decoded(t, body), tester); !errors.Is(err, ErrConflict) {
			t.Fatalf("second create: %v, want ErrConflict", err)
		}
		if all, _ := s.All(t.Context()); len(all) != 1 {
			t.Fatalf("%d rules stored, want 1", len(all))
		}
	})
	t.Run("Invalid: a writer scoped to other apps is refused", func(t *testing.T) {
		s := openService(t)
		_, err := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5,"app":"shop"}`),
			Actor{Name: "scoped", Apps: []string{"billing"}})
		var forbidden *ForbiddenError
		if !errors.As(err, &forbidden) || forbidden.Fields[0].Field != "app" {
			t.Fatalf("err %v, want a ForbiddenError naming app", err)
		}
	})
}

func TestUpdate(t *testing.T) {
	raise := func(r Rule) (Rule, error) {
		f := r.Spec.(engine.FlowRule)
		f.Threshold++
		r.Spec = f
		return r, nil
	}
	t.Run("Success: the next version, loaded", func(t *testing.T) {
		s := openService(t)
		r, _ := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
		got, err := s.Update(t.Context(), r.ID, nil, raise, tester)
		if err != nil || got.Version != 2 || got.Spec.(engine.FlowRule).Threshold != 6 {
			t.Fatalf("Update = %+v, %v", got, err)
		}
		if loaded := s.engine.FlowRules(); loaded[0].Threshold != 6 {
			t.Fatalf("the engine holds %+v", loaded)
		}
	})
	t.Run("Success: an edit that changes nothing keeps the version", func(t *testing.T) {
		s := openService(t)
		r, _ := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
		same := func(current Rule) (Rule, error) { return current, nil }
		if got, err := s.Update(t.Context(), r.ID, nil, same, tester); err != nil || got.Version != 1 {
			t.Fatalf("Update = %+v, %v; want version 1", got, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		s := openService(t)
		if _, err := s.Update(t.Context(), 42, nil, raise, tester); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound", err)
		}
	})
	t.Run("Invalid: a stale version is refused", func(t *testing.T) {
		s := openService(t)
		r, _ := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
		atVersion := func(v int64) IfMatch { return func(version int64) bool { return version == v } }
		if _, err := s.Update(t.Context(), r.ID, atVersion(7), raise, tester); !errors.Is(err, ErrStale) {
			t.Fatalf("err %v, want ErrStale", err)
		}
	})
	t.Run("Invalid: the edit's error is the answer, and nothing is written", func(t *testing.T) {
		s := openService(t)
		r, _ := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
		_, err := s.Update(t.Context(), r.ID, nil, patch(t, `{"threshold":-1}`), tester)
		var invalid *ValidationError
		if !errors.As(err, &invalid) || invalid.Fields[0].Field != "threshold" {
			t.Fatalf("err %v, want a ValidationError naming threshold", err)
		}
		if got, _ := s.Get(t.Context(), r.ID); got.Version != 1 {
			t.Fatalf("version %d after a refused edit, want 1", got.Version)
		}
	})
}

func TestDelete(t *testing.T) {
	t.Run("Success: unloaded, its history kept", func(t *testing.T) {
		s := openService(t)
		r, _ := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
		if err := s.Delete(t.Context(), r.ID, nil, tester); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(t.Context(), r.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after delete: %v, want ErrNotFound", err)
		}
		if loaded := s.engine.FlowRules(); len(loaded) != 0 {
			t.Fatalf("the engine still holds %+v", loaded)
		}
		if _, total, err := s.Revisions(t.Context(), r.ID, store.Page{Number: 1, Size: 10}); err != nil || total != 2 {
			t.Fatalf("%d revisions, %v; want create and delete", total, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		s := openService(t)
		if err := s.Delete(t.Context(), 42, nil, tester); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound", err)
		}
	})
}

func TestRollback(t *testing.T) {
	t.Run("Success: every kind's own fields come back", func(t *testing.T) {
		s := openService(t)
		r, err := s.Create(t.Context(), decoded(t, `{"kind":"system","metricType":"avgRt","triggerCount":200}`), tester)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(t.Context(), r.ID, nil, patch(t, `{"triggerCount":300}`), tester); err != nil {
			t.Fatal(err)
		}
		got, err := s.Rollback(t.Context(), r.ID, 1, nil, tester)
		if err != nil || got.Version != 3 || got.Spec.(engine.SystemRule).TriggerCount != 200 {
			t.Fatalf("Rollback = %+v, %v; want version 3 with triggerCount 200", got, err)
		}
		if loaded := s.engine.SystemRules(); len(loaded) != 1 || loaded[0].TriggerCount != 200 {
			t.Fatalf("the engine holds %+v", loaded)
		}
	})
	t.Run("NotFound: no such version", func(t *testing.T) {
		s := openService(t)
		r, _ := s.Create(t.Context(), decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
		if _, err := s.Rollback(t.Context(), r.ID, 9, nil, tester); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound", err)
		}
	})
}

func TestApply(t *testing.T) {
	file := func(t *testing.T, rules ...string) []Rule {
		t.Helper()
		items := rawItems(rules...)
		want, err := DecodeFile(items)
		if err != nil {
			t.Fatal(err)
		}
		return want
	}
	t.Run("Success: a dry run plans and writes nothing", func(t *testing.T) {
		s := openService(t)
		plan, err := s.Apply(t.Context(), file(t, `{"kind":"flow","name":"a","resource":"orders","threshold":5}`), ApplyOptions{DryRun: true}, tester)
		if err != nil || len(plan.Created) != 1 || !plan.DryRun {
			t.Fatalf("plan %+v, %v", plan, err)
		}
		if all, _ := s.All(t.Context()); len(all) != 0 {
			t.Fatalf("a dry run stored %d rules", len(all))
		}
	})
	t.Run("Success: updates, keeps the unchanged, prunes the rest", func(t *testing.T) {
		s := openService(t)
		if _, err := s.Apply(t.Context(), file(t,
			`{"kind":"flow","name":"a","resource":"orders","threshold":5}`,
			`{"kind":"flow","name":"b","resource":"orders","threshold":5}`,
			`{"kind":"flow","name":"c","resource":"stock","threshold":5}`), ApplyOptions{}, tester); err != nil {
			t.Fatal(err)
		}
		plan, err := s.Apply(t.Context(), file(t,
			`{"kind":"flow","name":"a","resource":"orders","threshold":6}`,
			`{"kind":"flow","name":"b","resource":"orders","threshold":5}`), ApplyOptions{Prune: true}, tester)
		if err != nil || len(plan.Updated) != 1 || plan.Updated[0].Changes[0].Field != "threshold" ||
			len(plan.Unchanged) != 1 || len(plan.Deleted) != 1 || plan.Deleted[0].Name != "c" {
			t.Fatalf("plan %+v, %v", plan, err)
		}
		if loaded := s.engine.FlowRules(); len(loaded) != 2 {
			t.Fatalf("the engine holds %+v, want a and b", loaded)
		}
	})
	t.Run("Invalid: a prune that empties an app or the server is refused unless allowed", func(t *testing.T) {
		s := openService(t)
		if _, err := s.Apply(t.Context(), file(t,
			`{"kind":"flow","name":"a","resource":"orders","threshold":5}`,
			`{"kind":"flow","name":"s","resource":"orders","threshold":5,"app":"shop"}`), ApplyOptions{}, tester); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name string
			want []Rule
		}{
			{"an empty list empties the server", nil},
			{"a list of other apps' rules empties shop", file(t, `{"kind":"flow","name":"a","resource":"orders","threshold":5}`)},
		} {
			_, err := s.Apply(t.Context(), tt.want, ApplyOptions{Prune: true, DryRun: true}, tester)
			var invalid *ValidationError
			if !errors.As(err, &invalid) || invalid.Fields[0].Field != "prune" {
				t.Fatalf("%s: err %v, want a ValidationError naming prune", tt.name, err)
			}
		}
		plan, err := s.Apply(t.Context(), nil, ApplyOptions{Prune: true, AllowEmpty: true}, tester)
		if err != nil || len(plan.Deleted) != 2 {
			t.Fatalf("allowed: plan %+v, %v", plan, err)
		}
		// Pruning part of an app, or an app that had nothing, is fine.
		if _, err := s.Apply(t.Context(), file(t, `{"kind":"flow","name":"a","resource":"orders","threshold":5}`),
			ApplyOptions{Prune: true}, tester); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Invalid: a file with a bad rule names it and writes nothing", func(t *testing.T) {
		_, err := DecodeFile(rawItems(`{"kind":"flow","name":"a","resource":"orders","threshold":-5}`))
		var invalid *ValidationError
		if !errors.As(err, &invalid) || invalid.Fields[0].Field != "rules[0].threshold" {
			t.Fatalf("err %v, want a ValidationError naming rules[0].threshold", err)
		}
	})
}

// rawItems are rule objects as a rule file's list holds them.
func rawItems(items ...string) []json.RawMessage {
	raw := make([]json.RawMessage, len(items))
	for i, item := range items {
		raw[i] = json.RawMessage(item)
	}
	return raw
}
