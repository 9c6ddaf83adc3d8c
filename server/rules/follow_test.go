package rules

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestEngineFollowsEveryWrite holds the engine to the stored rules after
// every kind of write, and after every write refused: the enabled flow
// rules' thresholds, by name, in the engine and in the store.
func TestEngineFollowsEveryWrite(t *testing.T) {
	s := openService(t)
	id := func(t *testing.T, name string) int64 {
		t.Helper()
		all, err := s.All(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			if r.Name == name {
				return r.ID
			}
		}
		t.Fatalf("no rule %q", name)
		return 0
	}
	create := func(body string) func(t *testing.T) error {
		return func(t *testing.T) error { _, err := s.Create(t.Context(), decoded(t, body), tester); return err }
	}
	update := func(name string, match IfMatch, body string) func(t *testing.T) error {
		return func(t *testing.T) error {
			_, err := s.Update(t.Context(), id(t, name), match, patch(t, body), tester)
			return err
		}
	}
	apply := func(opts ApplyOptions, items ...string) func(t *testing.T) error {
		return func(t *testing.T) error {
			want, err := DecodeFile(rawItems(items...))
			if err != nil {
				return err
			}
			_, err = s.Apply(t.Context(), want, opts, tester)
			return err
		}
	}
	atVersion1 := func(version int64) bool { return version == 1 }
	invalid := func(err error) bool {
		var v *ValidationError
		return errors.As(err, &v)
	}
	is := func(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }
	steps := []struct {
		name       string
		do         func(t *testing.T) error
		refused    func(error) bool // nil: the write succeeds
		wantLoaded map[string]float64
	}{
		{"create a", create(`{"name":"a","kind":"flow","resource":"ra","threshold":10}`), nil, map[string]float64{"a": 10}},
		{"create b", create(`{"name":"b","kind":"flow","resource":"rb","threshold":20}`), nil, map[string]float64{"a": 10, "b": 20}},
		{"a disabled rule is not loaded", create(`{"name":"c","kind":"flow","resource":"rc","threshold":30,"enabled":false}`), nil,
			map[string]float64{"a": 10, "b": 20}},
		{"a create with a taken name changes nothing", create(`{"name":"a","kind":"flow","resource":"rd","threshold":1}`), is(ErrConflict),
			map[string]float64{"a": 10, "b": 20}},
		{"replace a", func(t *testing.T) error {
			_, err := s.Update(t.Context(), id(t, "a"), nil, func(current Rule) (Rule, error) {
				r := decoded(t, `{"name":"a","kind":"flow","resource":"ra","threshold":15}`)
				r.ID, r.Version, r.CreatedAt = current.ID, current.Version, current.CreatedAt
				return r, nil
			}, tester)
			return err
		}, nil, map[string]float64{"a": 15, "b": 20}},
		{"a stale patch changes nothing", update("a", atVersion1, `{"threshold":1}`), is(ErrStale), map[string]float64{"a": 15, "b": 20}},
		{"an invalid patch changes nothing", update("b", nil, `{"threshold":-5}`), invalid, map[string]float64{"a": 15, "b": 20}},
		{"disable b", update("b", nil, `{"enabled":false}`), nil, map[string]float64{"a": 15}},
		{"enable c", update("c", nil, `{"enabled":true}`), nil, map[string]float64{"a": 15, "c": 30}},
		{"rename a", update("a", nil, `{"name":"a2"}`), nil, map[string]float64{"a2": 15, "c": 30}},
		{"a rename to a taken name changes nothing", update("c", nil, `{"name":"a2","threshold":31}`), is(ErrConflict),
			map[string]float64{"a2": 15, "c": 30}},
		{"a stale delete changes nothing", func(t *testing.T) error { return s.Delete(t.Context(), id(t, "c"), atVersion1, tester) }, is(ErrStale),
			map[string]float64{"a2": 15, "c": 30}},
		{"delete a2", func(t *testing.T) error { return s.Delete(t.Context(), id(t, "a2"), nil, tester) }, nil, map[string]float64{"c": 30}},
		{"roll b back to its enabled version", func(t *testing.T) error {
			_, err := s.Rollback(t.Context(), id(t, "b"), 1, nil, tester)
			return err
		}, nil, map[string]float64{"b": 20, "c": 30}},
		{"apply", apply(ApplyOptions{},
			`{"name":"b","kind":"flow","resource":"rb","threshold":21}`, `{"name":"e","kind":"flow","resource":"re","threshold":50}`), nil,
			map[string]float64{"b": 21, "c": 30, "e": 50}},
		{"a dry-run apply changes nothing", apply(ApplyOptions{DryRun: true, Prune: true},
			`{"name":"f","kind":"flow","resource":"rf","threshold":60}`), nil, map[string]float64{"b": 21, "c": 30, "e": 50}},
		{"an invalid apply changes nothing", apply(ApplyOptions{Prune: true},
			`{"name":"b","kind":"flow","resource":"rb","threshold":22}`, `{"name":"f","kind":"flow","resource":"rf","threshold":-1}`), invalid,
			map[string]float64{"b": 21, "c": 30, "e": 50}},
		{"apply with prune", apply(ApplyOptions{Prune: true},
			`{"name":"e","kind":"flow","resource":"re","threshold":51,"enabled":false}`, `{"name":"g","kind":"flow","resource":"rg","threshold":70}`), nil,
			map[string]float64{"g": 70}},
		{"import", func(t *testing.T) error {
			want, _, err := ImportSentinel(engine.KindFlow, rawItems(`{"resource":"GET:/x","threshold":80}`))
			if err != nil {
				return err
			}
			_, err = s.Apply(t.Context(), want, ApplyOptions{}, tester)
			return err
		}, nil, map[string]float64{"g": 70, "flow-get-x": 80}},
	}
	for _, tt := range steps {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(t)

			switch {
			case tt.refused == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused != nil && !tt.refused(err):
				t.Fatalf("err %v, want it refused", err)
			}
			loaded := map[string]float64{}
			for _, r := range s.engine.FlowRules() {
				loaded[r.Name] = r.Threshold
			}
			stored := map[string]float64{}
			all, err := s.All(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range all {
				if r.Enabled {
					stored[r.Name] = r.Spec.(engine.FlowRule).Threshold
				}
			}
			if !maps.Equal(loaded, tt.wantLoaded) || !maps.Equal(stored, tt.wantLoaded) {
				t.Errorf("engine %v, enabled stored %v; want %v", loaded, stored, tt.wantLoaded)
			}
		})
	}
}

// TestAppSetsAreValidated holds a write to the rules every engine that
// runs them accepts: the server's, and each app's instances', which run
// the app's own rules beside those of no app.
func TestAppSetsAreValidated(t *testing.T) {
	inflight := `{"name":%q,"kind":"hotspot","resource":"orders","paramKey":"ip","metric":"concurrency","threshold":2%s}`
	s := openService(t)
	for _, app := range []string{"billing", "shop"} {
		if _, err := s.Create(t.Context(), decoded(t, fmt.Sprintf(inflight, app+"-inflight", `,"app":"`+app+`"`)), tester); err != nil {
			t.Fatal(err)
		}
	}
	wantInvalid := func(t *testing.T, err error, app string) {
		t.Helper()
		var invalid *ValidationError
		if !errors.As(err, &invalid) || len(invalid.Fields) == 0 || invalid.Fields[0].Field != "resource" {
			t.Fatalf("err %v, want a ValidationError naming resource", err)
		}
		if !strings.Contains(invalid.Message, `"`+app+`"`) {
			t.Errorf("message %q does not name app %q, the first whose set is not valid", invalid.Message, app)
		}
	}

	t.Run("Invalid: a rule of no app joins every app's set", func(t *testing.T) {
		_, err := s.Create(t.Context(), decoded(t, fmt.Sprintf(inflight, "inflight", "")), tester)

		wantInvalid(t, err, "billing")
		if all, _ := s.All(t.Context()); len(all) != 2 {
			t.Errorf("stored %d rules, want the two app rules only", len(all))
		}
		if got := s.engine.HotspotRules(); len(got) != 0 {
			t.Errorf("the server's engine holds %+v, want none", got)
		}
	})
	t.Run("Invalid: moved to an app that has one", func(t *testing.T) {
		all, _ := s.All(t.Context())
		shop := all[slices.IndexFunc(all, func(r Rule) bool { return r.Name == "shop-inflight" })]

		_, err := s.Update(t.Context(), shop.ID, nil, patch(t, `{"app":"billing"}`), tester)

		wantInvalid(t, err, "billing")
		if stored, _ := s.Get(t.Context(), shop.ID); stored.App != "shop" {
			t.Errorf("stored app %q, want shop", stored.App)
		}
	})
}
