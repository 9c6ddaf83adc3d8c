package rules

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/store"
)

// TestKindFieldsHoldEveryField: the generated KindFields has a field of
// the same JSON name and type for every field of every kind's table (run
// go run ./internal/tablegen after changing a table; make check-docs
// fails until it is).
func TestKindFieldsHoldEveryField(t *testing.T) {
	index := structFields(reflect.TypeFor[KindFields]())
	types := map[engine.FieldType]reflect.Type{
		engine.FieldString: reflect.TypeFor[*string](), engine.FieldNumber: reflect.TypeFor[*float64](),
		engine.FieldInteger: reflect.TypeFor[*int64](), engine.FieldObject: reflect.TypeFor[*map[string]float64](),
		engine.FieldArray: reflect.TypeFor[*[]string](),
	}
	for _, k := range engine.Kinds {
		for _, f := range k.Fields {
			i, ok := index[f.Name]
			if !ok {
				t.Errorf("%s.%s is not a field of KindFields", k.Name, f.Name)
				continue
			}
			if got := reflect.TypeFor[KindFields]().FieldByIndex(i).Type; got != types[f.Type] {
				t.Errorf("%s.%s is a %v in KindFields, want %v", k.Name, f.Name, got, types[f.Type])
			}
		}
	}
}

// TestStoredSpecTakesNewFieldsDefaults: a rule stored before one of its
// kind's fields existed (scope) reads with that field's default.
func TestStoredSpecTakesNewFieldsDefaults(t *testing.T) {
	s := openService(t)
	var id int64
	err := s.store.InTx(t.Context(), func(tx *store.Tx) error {
		row := store.Rule{Name: "old", Kind: engine.KindFlow, Resource: "x", Enabled: true, Mode: "enforce",
			Spec: `{"metric":"qps","threshold":5,"statIntervalMs":1000,"controlBehavior":"reject","tokenCalculateStrategy":"direct","relationStrategy":"current"}`}
		err := tx.CreateRule(&row)
		id = row.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if c := ContentOf(&r); c.Scope == nil || *c.Scope != string(engine.ScopeLocal) {
		t.Errorf("scope %v, want local", c.Scope)
	}
}

// TestZeroMeansDefaultFields lists the fields whose zero (0 or "") the
// engine takes as unset and gives its default, so that a zero sent for
// them is refused rather than replaced: a field that joins the tables
// with a default joins this list, or says why not.
func TestZeroMeansDefaultFields(t *testing.T) {
	want := map[string][]string{
		engine.KindFlow: {"metric", "statIntervalMs", "controlBehavior", "tokenCalculateStrategy", "warmUpColdFactor",
			"relationStrategy", "limitApp", "scope", "clusterFallback"},
		engine.KindCircuitBreaker: {"minRequestAmount", "statIntervalMs", "probeNum"},
		engine.KindHotspot:        {"metric", "statIntervalMs", "controlBehavior", "paramsMaxCapacity"},
		engine.KindAuthority:      nil,
		engine.KindSystem:         {"strategy"},
		engine.KindAdaptiveConcurrency: {"algorithm", "initialLimit", "minLimit", "maxLimit", "tolerance", "smoothing",
			"backoffRatio"},
	}
	for _, k := range engine.Kinds {
		var got []string
		for _, f := range k.Fields {
			if wire.ZeroMeansDefault(f) {
				got = append(got, f.Name)
			}
		}
		if !slices.Equal(got, want[k.Name]) {
			t.Errorf("%s: wire.ZeroMeansDefault holds for %v, want %v", k.Name, got, want[k.Name])
		}
	}
}
