package rules

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestSwaggerTagsFollowTheFieldTables: swag reads a field's example and
// enums from struct tags only, so the tags of Content must say what the
// field tables say; a field shared by kinds (threshold, strategy) takes
// the first kind's example, and the options of every kind that has it, in
// the order of the kinds. An object's example is written key:value, an
// array's comma-separated.
func TestSwaggerTagsFollowTheFieldTables(t *testing.T) {
	tables := append(engine.Fields{}, EnvelopeFields...)
	for _, k := range engine.Kinds {
		tables = append(tables, k.Fields...)
	}
	enums := map[string][]string{}
	for _, f := range tables {
		for _, v := range f.OptionValues() {
			if !slices.Contains(enums[f.Name], v) {
				enums[f.Name] = append(enums[f.Name], v)
			}
		}
	}
	tagged := map[string]bool{}
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[Content]()) {
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		f, ok := tables.Lookup(name)
		if !ok {
			continue
		}
		tagged[name] = true
		if got, want := sf.Tag.Get("example"), swagExample(f.Example); got != want {
			t.Errorf("%s: example tag %q, the table's %q", name, got, want)
		}
		if got, want := sf.Tag.Get("enums"), strings.Join(enums[name], ","); got != want {
			t.Errorf("%s: enums tag %q, the tables' %q", name, got, want)
		}
	}
	for _, f := range tables {
		if !tagged[f.Name] {
			t.Errorf("the field %s of the tables is not in Content", f.Name)
		}
	}
}

// swagExample is v as a swag example tag writes it.
func swagExample(v any) string {
	switch v := v.(type) {
	case map[string]float64:
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			pairs = append(pairs, fmt.Sprintf("%s:%v", k, v[k]))
		}
		return strings.Join(pairs, ",")
	case []string:
		return strings.Join(v, ",")
	}
	return fmt.Sprint(v)
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
	if c := r.Content(); c.Scope == nil || *c.Scope != string(engine.ScopeLocal) {
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
	}
	for _, k := range engine.Kinds {
		var got []string
		for _, f := range k.Fields {
			if zeroMeansDefault(f) {
				got = append(got, f.Name)
			}
		}
		if !slices.Equal(got, want[k.Name]) {
			t.Errorf("%s: zeroMeansDefault holds for %v, want %v", k.Name, got, want[k.Name])
		}
	}
}
