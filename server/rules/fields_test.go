package rules

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
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
