package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// Rule is a rule as the REST API, rule files and the snapshot carry it:
// the envelope every rule has, and its kind's engine rule holding only the
// kind's own fields (their Name, Resource and Mode stay empty; the
// envelope has them). DecodeRule reads one; the server stores and lists
// them.
type Rule struct {
	ID          int64
	Name        string
	Kind        string
	App         string // the app whose instances alone run it; "" for every engine
	Resource    string
	Enabled     bool
	Mode        string
	Description string
	// Spec is the kind's engine rule, a value (an engine.FlowRule for
	// kind flow), so that a copy of the Rule is a copy of it; nil until
	// the kind is known.
	Spec      any
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RuleKind is the rule's kind, nil for an unknown one.
func (r *Rule) RuleKind() *engine.Kind {
	k, _ := engine.LookupKind(r.Kind)
	return k
}

// EditSpec returns a pointer to a copy of the rule's engine rule (a new one if
// it has none yet), for the kind's table to read and write; keep stores
// it back. Rules are copied as values, and this keeps a copy's spec its own.
func (r *Rule) EditSpec() (k *engine.Kind, spec any, keep func()) {
	k = r.RuleKind()
	p := reflect.New(reflect.TypeOf(k.New()).Elem())
	if r.Spec != nil {
		p.Elem().Set(reflect.ValueOf(r.Spec))
	}
	return k, p.Interface(), func() { r.Spec = p.Elem().Interface() }
}

// EngineRule is a pointer to the engine rule the engine loads: the spec
// with the envelope's name, resource and mode.
func (r *Rule) EngineRule() (*engine.Kind, any) {
	k, spec, _ := r.EditSpec()
	k.Value(spec, "name").SetString(r.Name)
	k.Value(spec, "mode").SetString(r.Mode)
	if !k.NoResource {
		k.Value(spec, "resource").SetString(r.Resource)
	}
	return k, spec
}

// Subject is what a name made up for the rule names: its resource, or a
// system rule's metric ("system-cpuusage").
func (r *Rule) Subject() string {
	if k := r.RuleKind(); k != nil && k.NoResource {
		_, spec, _ := r.EditSpec()
		return k.Value(spec, subjectField).String()
	}
	return r.Resource
}

// subjectField is the field a name made up for a rule without a resource
// names.
const subjectField = "metricType"

// Stored is what a write keeps of a rule and shows of it.
type Stored struct {
	// Kind is the rule's kind, and Spec a pointer to a copy of its engine
	// rule, for the kind's table to read.
	Kind *engine.Kind
	Spec any
	// SpecJSON is the spec as the server stores it (EncodeSpec).
	SpecJSON []byte
	// Subject is what a name made up for the rule names (Subject).
	Subject string
}

// Stored returns what a write of r, of a known kind, keeps and shows of
// it, from one reading of its spec: a write needs them all, and each
// reading copies the spec.
func (r *Rule) Stored() (Stored, error) {
	k, spec, _ := r.EditSpec()
	specJSON, err := EncodeSpec(k, spec)
	st := Stored{Kind: k, Spec: spec, SpecJSON: specJSON, Subject: r.Resource}
	if k.NoResource {
		st.Subject = k.Value(spec, subjectField).String()
	}
	return st, err
}

// ExpiresAtMs is when the rule stops applying, 0 for never: its kind's
// engine rule keeps it, so it is stored with the spec.
func (r *Rule) ExpiresAtMs() int64 {
	if r.Spec == nil {
		return 0
	}
	k, spec, _ := r.EditSpec()
	return k.Value(spec, "expiresAtMs").Int()
}

// SetExpiresAtMs sets ExpiresAtMs.
func (r *Rule) SetExpiresAtMs(ms int64) {
	if r.RuleKind() == nil {
		return // the kind's error says what to fix
	}
	k, spec, keep := r.EditSpec()
	k.Value(spec, "expiresAtMs").SetInt(ms)
	keep()
}

// Expired reports whether the rule is past its expiresAt at nowMs (Unix
// milliseconds), as the engine judges it.
func (r *Rule) Expired(nowMs int64) bool {
	ms := r.ExpiresAtMs()
	return ms != 0 && nowMs >= ms
}

// WithDefaults fills in the defaults of the kind's engine rule, whose
// envelope fields stay empty (the rule's envelope has them).
func (r *Rule) WithDefaults() {
	k, spec, keep := r.EditSpec()
	k.WithDefaults(spec)
	k.Value(spec, "mode").SetString("")
	keep()
}

// validate is the engine's validation of the rule's kind.
func (r *Rule) validate() []engine.FieldError {
	k, spec := r.EngineRule()
	if r.Name == "" {
		// A rule created without a name is given one before it is
		// stored; a cluster rule needs one, which it will have.
		k.Value(spec, "name").SetString("unnamed")
	}
	errs := k.Validate(spec)
	if k.NoResource && r.Resource != "" {
		errs = append(errs, engine.FieldError{Field: "resource",
			Message: "must be absent: a system rule guards every inbound call of its process"})
	}
	return errs
}

// RunsAt tells whether an engine of app runs r at nowMs: r is
// enabled, unexpired, and without an app or of app.
func (r *Rule) RunsAt(app string, nowMs int64) bool {
	expiresAtMs := r.ExpiresAtMs()
	return r.Enabled && r.RunsIn(app) && (expiresAtMs == 0 || nowMs < expiresAtMs)
}

// RunsIn tells whether the engine of app runs r, enabled: a rule without
// an app runs everywhere, one with an app only in that app's instances.
// The server's own engine is of app "", so it runs only the rules without
// one.
func (r *Rule) RunsIn(app string) bool { return r.App == "" || r.App == app }

// Enforce adds r to the rules of its kind in set, unless it is disabled.
func (r *Rule) Enforce(set *engine.ResourceRules) {
	if r.Enabled {
		k, spec := r.EngineRule()
		k.Add(set, spec)
	}
}

// specExpiresAtMs is the field of a stored spec besides its kind's table:
// when the rule expires (the API's expiresAt, in Unix milliseconds).
const specExpiresAtMs = "expiresAtMs"

// EncodeSpec writes rule, a pointer to one of k's engine rules, as the
// server stores it: a JSON object of its kind's fields and expiresAtMs,
// each that holds a value other than its type's zero, in table order. The
// rule's name, resource and mode are not written: the server keeps them
// beside the spec.
func EncodeSpec(k *engine.Kind, rule any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	write := func(name string, v reflect.Value) error {
		if v.IsZero() {
			return nil
		}
		value, err := json.Marshal(v.Interface())
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
		return nil
	}
	for _, f := range k.Fields {
		if err := write(f.Name, k.Value(rule, f.Name)); err != nil {
			return nil, err
		}
	}
	if err := write(specExpiresAtMs, k.Value(rule, specExpiresAtMs)); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeSpec reads a spec EncodeSpec wrote, or an older one, into rule, a
// pointer to one of k's engine rules. Keys the kind has no field for are
// skipped: a spec stored by an older version may hold them (its name,
// resource and mode, always empty).
func DecodeSpec(k *engine.Kind, data []byte, rule any) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	for _, f := range k.Fields {
		if raw, ok := fields[f.Name]; ok {
			if err := decodeField(k.Value(rule, f.Name), raw); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
	}
	if raw, ok := fields[specExpiresAtMs]; ok {
		if err := decodeField(k.Value(rule, specExpiresAtMs), raw); err != nil {
			return fmt.Errorf("%s: %w", specExpiresAtMs, err)
		}
	}
	return nil
}

// decodeField reads raw, a stored JSON value, into dst; null leaves dst as
// it is.
func decodeField(dst reflect.Value, raw json.RawMessage) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	v := reflect.New(dst.Type())
	if err := json.Unmarshal(raw, v.Interface()); err != nil {
		return err
	}
	dst.Set(v.Elem())
	return nil
}
