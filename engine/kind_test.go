package engine

import (
	"slices"
	"testing"
)

// TestSummariesNameTheirKindsFields: every field a kind's summary
// template names is a field of the kind, and every value it compares an
// option field with is one of its options.
func TestSummariesNameTheirKindsFields(t *testing.T) {
	for _, k := range Kinds {
		refs := k.SummaryRefs()
		if len(refs) == 0 {
			t.Errorf("%s: the summary %q names no field", k.Name, k.Summary)
		}
		for _, ref := range refs {
			f, ok := k.Fields.Lookup(ref.Field)
			switch {
			case !ok:
				t.Errorf("%s: the summary names %s, no field of the kind", k.Name, ref.Field)
			case ref.Value != "" && f.Options != nil && !slices.Contains(f.OptionValues(), ref.Value):
				t.Errorf("%s: the summary compares %s with %q, none of its options", k.Name, ref.Field, ref.Value)
			}
		}
	}
}
