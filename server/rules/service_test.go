package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	t.Run("Success: an update lists each field it changes, from and to", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			stored string
			body   string
			want   map[string][2]string // field → compact JSON from, to; none: unchanged
		}{
			{
				name:   "changed and added fields",
				stored: `{"name":"orders","kind":"flow","resource":"r","threshold":10,"description":"old"}`,
				body:   `{"name":"orders","kind":"flow","resource":"r","threshold":20,"controlBehavior":"throttling","maxQueueingTimeMs":500,"description":"new","enabled":false}`,
				want: map[string][2]string{
					"threshold":         {`10`, `20`},
					"controlBehavior":   {`"reject"`, `"throttling"`},
					"maxQueueingTimeMs": {`null`, `500`},
					"description":       {`"old"`, `"new"`},
					"enabled":           {`true`, `false`},
				},
			},
			{
				name:   "a field that no longer applies",
				stored: `{"name":"orders","kind":"flow","resource":"r","threshold":10,"controlBehavior":"throttling","maxQueueingTimeMs":500}`,
				body:   `{"name":"orders","kind":"flow","resource":"r","threshold":10}`,
				want: map[string][2]string{
					"controlBehavior":   {`"throttling"`, `"reject"`},
					"maxQueueingTimeMs": {`500`, `null`},
				},
			},
			{
				name:   "metric concurrency drops the interval",
				stored: `{"name":"orders","kind":"flow","resource":"r","threshold":10}`,
				body:   `{"name":"orders","kind":"flow","resource":"r","threshold":10,"metric":"concurrency"}`,
				want: map[string][2]string{
					"metric":         {`"qps"`, `"concurrency"`},
					"statIntervalMs": {`1000`, `null`},
				},
			},
			{
				name:   "resource and mode",
				stored: `{"name":"orders","kind":"flow","resource":"r","threshold":10}`,
				body:   `{"name":"orders","kind":"flow","resource":"s","threshold":10,"mode":"shadow"}`,
				want: map[string][2]string{
					"resource": {`"r"`, `"s"`},
					"mode":     {`"enforce"`, `"shadow"`},
				},
			},
			{
				name:   "defaults written out are no change",
				stored: `{"name":"orders","kind":"flow","resource":"r","threshold":10}`,
				body: `{"name":"orders","kind":"flow","resource":"r","threshold":10,"enabled":true,"mode":"enforce","metric":"qps","statIntervalMs":1000,` +
					`"controlBehavior":"reject","tokenCalculateStrategy":"direct","relationStrategy":"current","maxQueueingTimeMs":0,"refResource":""}`,
			},
			{
				name:   "a hotspot rule's specific items",
				stored: `{"name":"orders","kind":"hotspot","resource":"r","paramKey":"user","threshold":1,"specificItems":{"a":1}}`,
				body:   `{"name":"orders","kind":"hotspot","resource":"r","paramKey":"user","threshold":1,"specificItems":{"b":0,"a":2}}`,
				want:   map[string][2]string{"specificItems": {`{"a":1}`, `{"a":2,"b":0}`}},
			},
			{
				name:   "a hotspot rule's defaults written out are no change",
				stored: `{"name":"orders","kind":"hotspot","resource":"r","paramKey":"user","threshold":1}`,
				body: `{"name":"orders","kind":"hotspot","resource":"r","paramKey":"user","threshold":1,"metric":"qps","statIntervalMs":1000,` +
					`"controlBehavior":"reject","burstCount":0,"maxQueueingTimeMs":0,"specificItems":{},"paramsMaxCapacity":100000}`,
			},
			{
				name:   "an authority rule's origins and strategy",
				stored: `{"name":"orders","kind":"authority","resource":"r","strategy":"allow","origins":["a"]}`,
				body:   `{"name":"orders","kind":"authority","resource":"r","strategy":"deny","origins":["a","b"]}`,
				want: map[string][2]string{
					"strategy": {`"allow"`, `"deny"`},
					"origins":  {`["a"]`, `["a","b"]`},
				},
			},
		} {
			t.Run(tt.name, func(t *testing.T) {
				s := openService(t)
				r, err := s.Create(t.Context(), decoded(t, tt.stored), tester)
				if err != nil {
					t.Fatal(err)
				}

				plan, err := s.Apply(t.Context(), file(t, tt.body), ApplyOptions{}, tester)

				if err != nil {
					t.Fatal(err)
				}
				stored, err := s.Get(t.Context(), r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(tt.want) == 0 {
					if len(plan.Unchanged) != 1 || len(plan.Updated) != 0 || stored.Version != 1 {
						t.Fatalf("plan %+v, version %d; want orders unchanged at version 1", plan, stored.Version)
					}
					return
				}
				if len(plan.Updated) != 1 || len(plan.Unchanged)+len(plan.Created)+len(plan.Deleted) != 0 {
					t.Fatalf("plan %+v, want orders updated alone", plan)
				}
				u := plan.Updated[0]
				if u.Name != "orders" || u.Kind != stored.Kind || u.Resource != stored.Resource {
					t.Errorf("updated item = %s %s %s, want orders %s %s", u.Name, u.Kind, u.Resource, stored.Kind, stored.Resource)
				}
				if got := fieldChanges(t, u); !maps.Equal(got, tt.want) {
					t.Errorf("changes = %v\nwant      %v", got, tt.want)
				}
				if stored.Version != 2 {
					t.Errorf("version = %d, want 2", stored.Version)
				}
			})
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
	t.Run("Invalid: a file of more rules than MaxApplyRules is refused whole, naming rules", func(t *testing.T) {
		items := make([]string, MaxApplyRules+1)
		for i := range items {
			items[i] = fmt.Sprintf(`{"name":"r%d","kind":"flow","resource":"x","threshold":1}`, i)
		}
		_, err := DecodeFile(rawItems(items...))
		var invalid *ValidationError
		if !errors.As(err, &invalid) || len(invalid.Fields) != 1 || invalid.Fields[0].Field != "rules" {
			t.Fatalf("err %v, want a ValidationError naming rules alone", err)
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

// fieldChanges is an update's changes as field → [from, to], compact JSON.
func fieldChanges(t *testing.T, u PlanUpdate) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Errorf("%s of %s is not JSON: %q", u.Name, raw, raw)
		}
		return b.String()
	}
	for _, c := range u.Changes {
		if _, dup := out[c.Field]; dup {
			t.Errorf("%s: field %s is changed twice", u.Name, c.Field)
		}
		out[c.Field] = [2]string{compact(c.From), compact(c.To)}
	}
	return out
}

// rawItems are rule objects as a rule file's list holds them.
func rawItems(items ...string) []json.RawMessage {
	raw := make([]json.RawMessage, len(items))
	for i, item := range items {
		raw[i] = json.RawMessage(item)
	}
	return raw
}
