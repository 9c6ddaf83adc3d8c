package rules

import (
	"fmt"
	"reflect"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/store"
)

// Content is a rule as apply accepts it and export writes it: the
// envelope every kind shares, then the fields of the rule's kind (their
// struct, KindFields, is generated from the kinds' tables). Fields that do
// not apply to a rule (another kind's, or maxQueueingTimeMs of a reject
// rule) are left out.
type Content struct {
	Name string `json:"name" example:"orders-qps"`
	Kind string `json:"kind" enums:"flow,circuitBreaker,hotspot,authority,system" example:"flow"`
	// Resource is what the rule guards; a system rule has none (it guards
	// every inbound call of its process).
	Resource    string `json:"resource,omitempty" example:"GET:/api/orders"`
	Enabled     bool   `json:"enabled" example:"true"`
	Mode        string `json:"mode" enums:"enforce,shadow" example:"enforce"`
	Description string `json:"description" example:"Black Friday cap"`
	// App, if set, is the only app whose instances run the rule; the
	// server's own engine does not. Absent, every engine runs it.
	App string `json:"app,omitempty" example:"checkout"`
	// ExpiresAt is when the rule stops applying; absent, never.
	ExpiresAt *time.Time `json:"expiresAt,omitempty" example:"2026-12-01T00:00:00Z"`
	// KindFields are the fields of the rule's kind that show: each one
	// that applies to it, and each behaviour that holds a value.
	KindFields
} //@name server.RuleContent

// APIRule is a stored rule as the API shows it: its content, and the fields the
// server keeps.
type APIRule struct {
	ID int64 `json:"id" example:"42"`
	Content
	// Expired is present, and true, once the rule is past its expiresAt:
	// it is stored still, but applies no more.
	Expired   bool      `json:"expired,omitempty" example:"false"`
	Version   int64     `json:"version" example:"3"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
} //@name server.Rule

// Rule is a rule of the domain, between the wire and the store: the
// envelope, and the kind's engine rule holding only the kind's own fields
// (its Name, Resource and Mode stay empty; the envelope has them).
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

// kind is the rule's kind, nil for an unknown one.
func (r *Rule) kind() *engine.Kind {
	k, _ := engine.LookupKind(r.Kind)
	return k
}

// spec returns a pointer to a copy of the rule's engine rule (a new one if
// it has none yet), for the kind's table to read and write; keep stores
// it back. Rules are copied as values, and this keeps a copy's spec its own.
func (r *Rule) spec() (k *engine.Kind, spec any, keep func()) {
	k = r.kind()
	p := reflect.New(reflect.TypeOf(k.New()).Elem())
	if r.Spec != nil {
		p.Elem().Set(reflect.ValueOf(r.Spec))
	}
	return k, p.Interface(), func() { r.Spec = p.Elem().Interface() }
}

// engineRule is a pointer to the engine rule the engine loads: the spec
// with the envelope's name, resource and mode.
func (r *Rule) engineRule() (*engine.Kind, any) {
	k, spec, _ := r.spec()
	k.Value(spec, "name").SetString(r.Name)
	k.Value(spec, "mode").SetString(r.Mode)
	if !k.NoResource {
		k.Value(spec, "resource").SetString(r.Resource)
	}
	return k, spec
}

// encodeSpec is the rule's spec as it is stored.
func (r *Rule) encodeSpec() ([]byte, error) {
	k, spec, _ := r.spec()
	return wire.EncodeSpec(k, spec)
}

// subject is what a name made up for the rule names: its resource, or a
// system rule's metric ("system-cpuusage").
func (r *Rule) subject() string {
	if k := r.kind(); k != nil && k.NoResource {
		_, spec, _ := r.spec()
		return k.Value(spec, "metricType").String()
	}
	return r.Resource
}

// expiresAtMs is when the rule stops applying, 0 for never: its kind's
// engine rule keeps it, so it is stored with the spec.
func (r *Rule) expiresAtMs() int64 {
	if r.Spec == nil {
		return 0
	}
	k, spec, _ := r.spec()
	return k.Value(spec, "expiresAtMs").Int()
}

// setExpiresAtMs sets expiresAtMs.
func (r *Rule) setExpiresAtMs(ms int64) {
	if r.kind() == nil {
		return // the kind's error says what to fix
	}
	k, spec, keep := r.spec()
	k.Value(spec, "expiresAtMs").SetInt(ms)
	keep()
}

// Expired reports whether the rule is past its expiresAt at nowMs (Unix
// milliseconds), as the engine judges it.
func (r *Rule) Expired(nowMs int64) bool {
	ms := r.expiresAtMs()
	return ms != 0 && nowMs >= ms
}

// withDefaults fills in the defaults of the kind's engine rule, whose
// envelope fields stay empty (the rule's envelope has them).
func (r *Rule) withDefaults() {
	k, spec, keep := r.spec()
	k.WithDefaults(spec)
	k.Value(spec, "mode").SetString("")
	keep()
}

// validate is the engine's validation of the rule's kind.
func (r *Rule) validate() []engine.FieldError {
	k, spec := r.engineRule()
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

func fromStore(row store.Rule) (Rule, error) {
	r := Rule{
		ID: row.ID, Name: row.Name, Kind: row.Kind, App: row.App, Resource: row.Resource, Enabled: row.Enabled,
		Mode: row.Mode, Description: row.Description, Version: row.Version,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
	k := r.kind()
	if k == nil {
		return Rule{}, fmt.Errorf("rule %d: unknown kind %q", row.ID, row.Kind)
	}
	spec := k.New()
	if err := wire.DecodeSpec(k, []byte(row.Spec), spec); err != nil {
		return Rule{}, fmt.Errorf("rule %d: spec: %w", row.ID, err)
	}
	r.Spec = reflect.ValueOf(spec).Elem().Interface()
	// A spec stored before one of its kind's fields existed holds that
	// field's default.
	r.withDefaults()
	return r, nil
}

func (r *Rule) toStore() (store.Rule, error) {
	spec, err := r.encodeSpec()
	if err != nil {
		return store.Rule{}, err
	}
	return store.Rule{
		ID: r.ID, Name: r.Name, Kind: r.Kind, App: r.App, Resource: r.Resource, Enabled: r.Enabled,
		Mode: r.Mode, Description: r.Description, Spec: string(spec), Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}, nil
}

// Content is the rule as apply takes it: the envelope, and the fields of
// its kind's table that apply to it (those with options always, with their
// value).
func (r *Rule) Content() Content {
	c := Content{
		Name: r.Name, Kind: r.Kind, App: r.App, Resource: r.Resource, Enabled: r.Enabled,
		Mode: r.Mode, Description: r.Description,
	}
	if ms := r.expiresAtMs(); ms != 0 {
		at := time.UnixMilli(ms).UTC()
		c.ExpiresAt = &at
	}
	if k := r.kind(); k != nil {
		_, spec, _ := r.spec()
		showFields(k, spec, &c)
	}
	return c
}

// showFields sets the fields of c that k's fields of spec, a pointer to
// an engine rule of k with its defaults, show: each one that applies to it, and
// each with options (a behaviour) that holds a value even where it does
// not. An object or array is shown empty rather than null.
func showFields(k *engine.Kind, spec any, c *Content) {
	dst := reflect.ValueOf(c).Elem()
	to := structFields(dst.Type())
	value := func(name string) reflect.Value { return k.Value(spec, name) }
	for _, f := range k.Fields {
		v := value(f.Name)
		if when := f.AppliesWhen; when != nil && value(when.Field).String() != when.Value && (f.Options == nil || v.IsZero()) {
			continue
		}
		field := dst.FieldByIndex(to[f.Name])
		shown := reflect.New(field.Type().Elem())
		switch {
		case v.Kind() == reflect.Map && v.IsNil():
			v = reflect.MakeMap(v.Type())
		case v.Kind() == reflect.Slice && v.IsNil():
			v = reflect.MakeSlice(v.Type(), 0, 0)
		}
		shown.Elem().Set(v.Convert(field.Type().Elem()))
		field.Set(shown)
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

// API is the rule as the API shows it at nowMs (Unix milliseconds), which
// tells whether it has expired.
func (r *Rule) API(nowMs int64) APIRule {
	return APIRule{
		ID: r.ID, Content: r.Content(), Expired: r.Expired(nowMs), Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}
