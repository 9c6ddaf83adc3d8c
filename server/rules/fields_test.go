package rules

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestSwaggerTagsFollowTheFieldTables: swag reads a field's example and
// enums from struct tags only, so the tags of Content must say what the
// field tables say; a field shared by kinds (threshold, statIntervalMs)
// takes the first kind's.
func TestSwaggerTagsFollowTheFieldTables(t *testing.T) {
	tables := append(engine.Fields{}, EnvelopeFields...)
	for _, k := range Kinds {
		tables = append(tables, k.Fields...)
	}
	tagged := map[string]bool{}
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[Content]()) {
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		f, ok := tables.Lookup(name)
		if !ok {
			continue
		}
		tagged[name] = true
		if got, want := sf.Tag.Get("example"), fmt.Sprint(f.Example); got != want {
			t.Errorf("%s: example tag %q, the table's %q", name, got, want)
		}
		if got, want := sf.Tag.Get("enums"), strings.Join(f.OptionValues(), ","); got != want {
			t.Errorf("%s: enums tag %q, the table's %q", name, got, want)
		}
	}
	for _, f := range tables {
		if !tagged[f.Name] {
			t.Errorf("the field %s of the tables is not in Content", f.Name)
		}
	}
}

// TestStoredSpecTakesNewFieldsDefaults: a rule stored before one of its
// kind's fields existed (scope) reads with that field's default.
func TestStoredSpecTakesNewFieldsDefaults(t *testing.T) {
	s := openService(t)
	var id int64
	err := s.store.InTx(t.Context(), func(tx *store.Tx) error {
		row := store.Rule{Name: "old", Kind: KindFlow, Resource: "x", Enabled: true, Mode: "enforce",
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
