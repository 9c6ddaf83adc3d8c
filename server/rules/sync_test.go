package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// TestMain runs the domain's tests on SQLite files, and on PostgreSQL in
// make test's second pass (servertest.TestDBEnv).
func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }

// openService runs the rule domain on a fresh database.
func openService(t testing.TB) *Service {
	t.Helper()
	st := servertest.OpenStore(t, filepath.Join(t.TempDir(), "sluice.db"))
	s := New(st, engine.New(engine.Options{Clock: engine.NewManualClock(0)}))
	if err := s.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// decoded is the rule body decodes to, for Create.
func decoded(t testing.TB, body string) Rule {
	t.Helper()
	var errs []engine.FieldError
	o, err := codec.ParseBody([]byte(body), &errs)
	if err != nil {
		t.Fatal(err)
	}
	r := wire.DecodeRule(o, Rule{}, wire.ForCreate)
	if wire.ValidateRule(&r, "", "", &errs); len(errs) > 0 {
		t.Fatalf("%s: %v", body, errs)
	}
	return r
}

// patch is the edit of Update that patches the rule with body.
func patch(t *testing.T, body string) Edit {
	t.Helper()
	var errs []engine.FieldError
	o, err := codec.ParseBody([]byte(body), &errs)
	if err != nil {
		t.Fatal(err)
	}
	return func(current Rule) (Rule, error) {
		r := wire.DecodeRule(o, current, wire.ForPatch)
		if wire.ValidateRule(&r, "", "", o.Errs); len(*o.Errs) > 0 {
			return Rule{}, InvalidRule(*o.Errs)
		}
		return r, nil
	}
}

// TestEngineRefusalRollsTheWriteBack: a row the decoder would never let
// through, refused by the engine's check at the end of the transaction,
// is neither stored nor loaded, and the refusal is a ValidationError.
func TestEngineRefusalRollsTheWriteBack(t *testing.T) {
	s := openService(t)
	if _, err := s.Create(t.Context(), decoded(t, `{"kind":"flow","name":"a","resource":"orders","threshold":10}`), Actor{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	err := s.write(t.Context(), false, func(tx *Tx) error {
		row := store.Rule{Name: "bad", Kind: engine.KindFlow, Resource: "x", Enabled: true, Mode: "enforce", Spec: `{"threshold":-5}`}
		if err := tx.CreateRule(&row); err != nil {
			return err
		}
		r, err := fromStore(row)
		tx.saved(&r)
		return err
	})
	if _, ok := errors.AsType[*ValidationError](err); !ok {
		t.Fatalf("write = %v, want a ValidationError", err)
	}
	if rows, _ := s.store.AllRules(t.Context()); len(rows) != 1 {
		t.Fatalf("%d rows stored, want 1", len(rows))
	}
	if got := s.engine.FlowRules(); len(got) != 1 || got[0].Name != "a" {
		t.Fatalf("engine holds %v, want rule a only", got)
	}
}

// TestIndexesMatchAFullLoad makes random writes of every kind, with and
// without an app, through the domain and checks after each that its
// indexes, and the rules its engine holds, are those a fresh Load of the
// same file builds.
func TestIndexesMatchAFullLoad(t *testing.T) {
	s := openService(t)
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	resource := func() string { return pick("r0", "r1", "r2", "r3") }
	app := func() string { return pick("null", "null", `"a"`, `"b"`) }
	name := func() string { return pick("n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7") }
	ruleBody := func(name string) string {
		if rng.IntN(4) == 0 {
			return fmt.Sprintf(`{"kind":"circuitBreaker","name":%q,"app":%s,"resource":%q,"strategy":"errorCount","threshold":%d,"retryTimeoutMs":1000}`,
				name, app(), resource(), 1+rng.IntN(3))
		}
		return fmt.Sprintf(`{"kind":"flow","name":%q,"app":%s,"resource":%q,"threshold":%d,"enabled":%t}`, name, app(), resource(), rng.IntN(3), rng.IntN(4) > 0)
	}
	who := Actor{Name: "test"}
	succeeded := 0
	for step := range 150 {
		all, err := s.All(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		switch op := rng.IntN(10); {
		case op < 3 || len(all) == 0:
			_, err = s.Create(t.Context(), decoded(t, ruleBody(name())), who)
		case op < 8:
			r := all[rng.IntN(len(all))]
			switch rng.IntN(4) {
			case 0:
				err = s.Delete(t.Context(), r.ID, nil, who)
			case 1:
				_, err = s.Rollback(t.Context(), r.ID, 1+rng.Int64N(r.Version), nil, who)
			default:
				_, err = s.Update(t.Context(), r.ID, nil, patch(t, pick(
					fmt.Sprintf(`{"resource":%q}`, resource()),
					fmt.Sprintf(`{"name":%q}`, name()),
					fmt.Sprintf(`{"enabled":%t}`, rng.IntN(2) == 0),
					fmt.Sprintf(`{"app":%s}`, app()),
				)), who)
			}
		default:
			var items []json.RawMessage
			for _, wanted := range rng.Perm(8)[:rng.IntN(4)] {
				items = append(items, json.RawMessage(ruleBody(fmt.Sprintf("n%d", wanted))))
			}
			var want []Rule
			if want, err = DecodeFile(items); err == nil {
				_, err = s.Apply(t.Context(), want, ApplyOptions{DryRun: rng.IntN(4) == 0, Prune: rng.IntN(3) == 0, AllowEmpty: true}, who)
			}
		}
		if err == nil {
			succeeded++
		} else if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
			if _, invalid := errors.AsType[*ValidationError](err); !invalid {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		fresh := New(s.store, engine.New(engine.Options{Clock: engine.NewManualClock(0)}))
		if err := fresh.Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		indexed := maps.Equal(s.named, fresh.named) && maps.EqualFunc(s.onResource, fresh.onResource, slices.Equal) &&
			len(s.rules) == len(fresh.rules)
		s.mu.Unlock()
		if !indexed {
			t.Fatalf("step %d: the write path's indexes differ from a full load's", step)
		}
		if got, want := loadedNames(s.engine), loadedNames(fresh.engine); !slices.Equal(got, want) {
			t.Fatalf("step %d: the engine holds %v after the writes, %v after a full load", step, got, want)
		}
	}
	if succeeded < 75 {
		t.Fatalf("only %d of 150 random writes succeeded", succeeded)
	}
}

// loadedNames lists the names of the flow and circuit breaker rules e
// holds, sorted.
func loadedNames(e *engine.Engine) []string {
	var names []string
	for _, r := range e.FlowRules() {
		names = append(names, r.Name)
	}
	for _, r := range e.CircuitBreakerRules() {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}

// TestLoadSkipsRulesOfAnApp: a start-up Load puts into the server's engine
// the enabled rules without an app, never those of one.
func TestLoadSkipsRulesOfAnApp(t *testing.T) {
	s := openService(t)
	for _, body := range []string{
		`{"kind":"flow","name":"everywhere","resource":"orders","threshold":1}`,
		`{"kind":"flow","name":"shop-only","app":"shop","resource":"orders","threshold":1}`,
		`{"kind":"circuitBreaker","name":"shop-breaker","app":"shop","resource":"pay","strategy":"errorCount","threshold":3,"retryTimeoutMs":1000}`,
	} {
		if _, err := s.Create(t.Context(), decoded(t, body), Actor{Name: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	fresh := New(s.store, engine.New(engine.Options{Clock: engine.NewManualClock(0)}))
	if err := fresh.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := loadedNames(fresh.engine); !slices.Equal(got, []string{"everywhere"}) {
		t.Errorf("loaded %v, want everywhere only", got)
	}
	snap, err := fresh.Snapshot(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Rules) != 3 {
		t.Errorf("shop's snapshot holds %d rules, want 3", len(snap.Rules))
	}
}
