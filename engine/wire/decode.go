package wire

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/engine"
)

// DecodeMode says which write a rule body is for; each treats absent
// fields its own way.
type DecodeMode int

const (
	// ForCreate: POST /rules. Absent fields take defaults; a name is made
	// up if none is given.
	ForCreate DecodeMode = iota
	// ForReplace: PUT. Absent fields take defaults, but the name is kept.
	ForReplace
	// ForPatch: PATCH. Absent fields keep their value.
	ForPatch
	// ForApply: apply and import. Like create, but the name is required.
	ForApply
)

// readOnlyFields may be sent back as GET returned them; they are ignored
// (id and kind are checked against the stored rule).
var readOnlyFields = []string{"version", "createdAt", "updatedAt", "expired"}

// fieldKinds names the kinds each field belongs to ("flow,
// circuitBreaker"), to tell a field of another kind from an unknown one.
var fieldKinds = func() map[string]string {
	kinds := map[string]string{}
	for _, kind := range engine.Kinds {
		for _, f := range kind.Fields {
			if kinds[f.Name] != "" {
				kinds[f.Name] += ", "
			}
			kinds[f.Name] += kind.Name
		}
	}
	return kinds
}()

// DecodeFields reads the fields table, of kind k, from o into spec, a pointer to one
// of k's engine rules. With required, a required field that is absent is
// reported; a field with options, or one that applies only with another
// field's value, is not, as the engine's validation says what it needs.
// It returns the fields sent with their type's zero value (0 or "") that
// the engine would take as unset (ZeroMeansDefault): only the decoder can
// tell them from fields left out.
func DecodeFields(o *Object, k *engine.Kind, table engine.Fields, spec any, required bool) []engine.Field {
	var zeros []engine.Field
	for _, f := range table {
		dst := k.Value(spec, f.Name)
		// A bad value leaves the field as it was, like a typed decoder.
		before := len(*o.Errs)
		switch f.Type {
		case engine.FieldString:
			var s string
			if o.Str(f.Name, &s) && len(*o.Errs) == before {
				dst.SetString(s)
			}
		case engine.FieldNumber:
			var n float64
			if o.Number(f.Name, &n) && len(*o.Errs) == before {
				dst.SetFloat(n)
			}
		case engine.FieldInteger:
			var n int64
			if o.Integer(f.Name, &n) && len(*o.Errs) == before {
				dst.SetInt(n)
			}
		case engine.FieldObject:
			if m, ok := numberObject(o, f.Name); ok {
				dst.Set(reflect.ValueOf(m))
			}
		case engine.FieldArray:
			if list, ok := stringArray(o, f.Name); ok {
				dst.Set(reflect.ValueOf(list))
			}
		}
		if len(*o.Errs) == before && o.Has(f.Name) && dst.IsZero() && ZeroMeansDefault(f) {
			zeros = append(zeros, f)
		}
	}
	// In reverse, so that a breaker's missing retryTimeoutMs is reported
	// before its threshold, as it always was. Without required (PATCH),
	// an absent field keeps its value, but a null one is no value at all.
	for _, f := range slices.Backward(table) {
		if !f.Required || f.Options != nil || f.AppliesWhen != nil {
			continue
		}
		if v, present := o.Value(f.Name); v == nil && (required || present) {
			o.Fail(f.Name, "is required")
		}
	}
	return zeros
}

// ZeroMeansDefault reports whether the engine gives f its default when
// f holds its type's zero value, 0 or "", which is not one of f's own
// values: a behaviour's name, or a number below f's least. Sent, such a
// zero is out of range, not a request for the default.
func ZeroMeansDefault(f engine.Field) bool {
	switch f.Type {
	case engine.FieldString:
		return f.Options != nil && !f.Required || f.Default != nil && f.Default != ""
	case engine.FieldNumber, engine.FieldInteger:
		return f.Default != nil && f.Min != nil && *f.Min > 0
	}
	return false
}

// refuseZeros reports each of zeros, the fields of the rule's kind that
// the rule object o sent as 0 or "" (DecodeFields), that applies to r:
// there the engine would silently take the zero as unset. A field that
// does not apply may carry a zero (docs/api.md, "Strict decoding").
func refuseZeros(o *Object, r Rule, zeros []engine.Field) {
	if len(zeros) == 0 {
		return
	}
	r.WithDefaults() // a copy: to judge what applies as the rule will be
	k, spec, _ := r.EditSpec()
	for _, f := range zeros {
		if k.Applies(spec, f) {
			o.Fail(f.Name, zeroMessage(f))
		}
	}
}

// zeroMessage says why a zero sent for f, a field of ZeroMeansDefault, is
// refused, and how to ask for the default.
func zeroMessage(f engine.Field) string {
	var msg string
	switch {
	case f.Options != nil:
		msg = "must be one of " + strings.Join(f.OptionValues(), ", ")
	case f.Type == engine.FieldString:
		msg = "must not be empty"
	case f.Max != nil:
		msg = fmt.Sprintf("must be between %s and %s", formatNumber(*f.Min), formatNumber(*f.Max))
	default:
		msg = "must be at least " + formatNumber(*f.Min)
	}
	if f.Default == nil {
		return msg + "; leave it out for the default"
	}
	return fmt.Sprintf("%s; leave it out for the default, %v", msg, f.Default)
}

// formatNumber writes a bound as a plain number: 600000, not 6e+05.
func formatNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// numberObject reads the field name, an object of numbers such as
// specificItems, if it is present (null is empty); a value that is not a
// number is reported with its key.
func numberObject(o *Object, name string) (map[string]float64, bool) {
	v, present := o.Value(name)
	if v == nil {
		return map[string]float64{}, present
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil || raw == nil {
		o.Fail(name, "must be an object of value: number")
		return nil, false
	}
	m := make(map[string]float64, len(raw))
	bad := false
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		var n float64
		if err := json.Unmarshal(raw[key], &n); err != nil {
			o.Fail(name, fmt.Sprintf("the value of %q must be a number", key))
			bad = true
			continue
		}
		m[key] = n
	}
	return m, !bad
}

// stringArray reads the field name, an array of strings such as origins,
// if it is present (null is empty); an item that is not a string is
// reported by its index.
func stringArray(o *Object, name string) ([]string, bool) {
	v, present := o.Value(name)
	if v == nil {
		return nil, present
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil || raw == nil {
		o.Fail(name, "must be an array of strings")
		return nil, false
	}
	list := make([]string, len(raw))
	bad := false
	for i, item := range raw {
		if json.Unmarshal(item, &list[i]) == nil {
			continue
		}
		o.Fail(fmt.Sprintf("%s[%d]", name, i), "must be a string")
		bad = true
	}
	return list, !bad
}

// DecodeRule reads the rule object o onto base: the stored rule for PUT
// and PATCH (its ID and kind fixed), zero otherwise. Bad fields are added to
// o's errors; the rule is not validated yet (see ValidateRule).
func DecodeRule(o *Object, base Rule, mode DecodeMode) Rule {
	keep := mode == ForPatch
	r := base
	if !keep {
		r = Rule{ID: base.ID, Kind: base.Kind, Version: base.Version, CreatedAt: base.CreatedAt, Enabled: true}
	}
	var id int64
	if o.Integer("id", &id) && (mode == ForReplace || mode == ForPatch) && id != base.ID {
		o.Fail("id", fmt.Sprintf("is %d in the path; a rule's id cannot change", base.ID))
	}
	for _, name := range readOnlyFields {
		o.Value(name)
	}
	var kind string
	o.Str("kind", &kind)
	switch {
	case base.Kind != "":
		if kind != "" && kind != base.Kind {
			o.Fail("kind", fmt.Sprintf("is %s; a rule's kind cannot change", base.Kind))
		}
	case kind == "":
		o.Fail("kind", "is required; one of "+engine.KindNames())
	case func() bool { _, ok := engine.LookupKind(kind); return !ok }():
		o.Fail("kind", "must be one of "+engine.KindNames())
	default:
		r.Kind = kind
	}

	o.Str("name", &r.Name)
	if r.Name == "" && (mode == ForReplace || mode == ForPatch) {
		r.Name = base.Name
	}
	if mode == ForApply && r.Name == "" {
		o.Fail("name", "is required: apply matches rules by name")
	}
	o.Str("app", &r.App)
	o.Str("resource", &r.Resource)
	o.Bool("enabled", &r.Enabled, true)
	if v, _ := o.Value("mode"); string(v) == `""` {
		mode, _ := EnvelopeFields.Lookup("mode")
		o.Fail("mode", zeroMessage(mode))
	}
	o.Str("mode", &r.Mode)
	if r.Mode == "" {
		r.Mode = string(engine.ModeEnforce)
	}
	o.Str("description", &r.Description)
	var expiresAt string
	if o.Str("expiresAt", &expiresAt) {
		r.SetExpiresAtMs(0) // null or "": never
		if expiresAt != "" {
			if at, err := time.Parse(time.RFC3339, expiresAt); err != nil {
				o.Fail("expiresAt", "must be an RFC 3339 time, such as 2026-12-01T00:00:00Z")
			} else {
				r.SetExpiresAtMs(at.UnixMilli())
			}
		}
	}

	if k := r.RuleKind(); k != nil {
		_, spec, set := r.EditSpec()
		if keep {
			withoutDefaults(k, spec)
		}
		zeros := DecodeFields(o, k, k.Fields, spec, !keep)
		set()
		refuseZeros(o, r, zeros)
	} else {
		// Without a valid kind, its fields cannot be judged; the kind's
		// error says what to fix.
		for name := range fieldKinds {
			o.Value(name)
		}
	}
	o.Rest(func(name string) string {
		if kinds := fieldKinds[name]; kinds != "" {
			return fmt.Sprintf("does not apply to kind %s (it is a field of %s)", r.Kind, kinds)
		}
		return ""
	})
	return r
}

// descriptionLen is the most characters a description may have.
func descriptionLen() int {
	f, _ := EnvelopeFields.Lookup("description")
	return f.MaxLength
}

// ValidateRule checks a decoded rule with the engine's own validation and
// fills in its defaults. Errors are named with path ("" or "rules[3].") and,
// when label is set, their message names the rule.
func ValidateRule(r *Rule, path, label string, errs *[]engine.FieldError) {
	add := func(field, message string) {
		if field == "expiresAtMs" { // the engine's name of expiresAt
			field, message = "expiresAt", "must be after 1970-01-01T00:00:00Z"
		}
		if label != "" {
			message = fmt.Sprintf("rule %q: %s", label, message)
		}
		*errs = append(*errs, engine.FieldError{Field: path + field, Message: message})
	}
	if r.App != "" && !AppPattern.MatchString(r.App) {
		add("app", "must match "+AppPattern.String()+": lower-case letters, digits, \".\", \"_\" and \"-\", at most 64, starting and ending with a letter or digit")
	}
	if limit := descriptionLen(); utf8.RuneCountInString(r.Description) > limit || !utf8.ValidString(r.Description) {
		add("description", fmt.Sprintf("must be valid UTF-8 of at most %d characters", limit))
	}
	if r.RuleKind() != nil {
		// A field the decoder refused (or an item of it) kept its zero
		// value: the engine's verdict on that says nothing more.
		named := map[string]bool{}
		for _, fe := range *errs {
			named[fe.Field] = true
			if rest, ok := strings.CutPrefix(fe.Field, path); ok {
				if i := strings.IndexAny(rest, "[."); i > 0 {
					named[path+rest[:i]] = true
				}
			}
		}
		for _, fe := range r.validate() {
			if !named[path+fe.Field] {
				add(fe.Field, fe.Message)
			}
		}
		r.WithDefaults()
	} else {
		// The kind is missing or unknown (and reported): check the
		// envelope fields still, with a flow rule whose own fields are
		// all defaults.
		envelope := engine.FlowRule{Name: r.Name, Resource: r.Resource, Mode: engine.Mode(r.Mode)}
		for _, fe := range envelope.Validate() {
			add(fe.Field, fe.Message)
		}
	}
}

// withoutDefaults clears the fields of k in spec, a pointer to an
// engine rule, that hold their default, so that a partial update can
// switch the rule to a behaviour those defaults do not apply to (a qps
// rule's statIntervalMs of 1000 to metric concurrency).
func withoutDefaults(k *engine.Kind, spec any) {
	for _, f := range k.Fields {
		field := k.Value(spec, f.Name)
		if f.Default != nil && fmt.Sprint(field.Interface()) == fmt.Sprint(f.Default) {
			field.SetZero()
		}
	}
}
