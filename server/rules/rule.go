package rules

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
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
	Name string `json:"name" example:"orders-qps" validate:"optional"`
	Kind string `json:"kind" enums:"flow,circuitBreaker,hotspot,authority,system,adaptiveConcurrency" example:"flow"`
	// Resource is what the rule guards; a system rule has none (it guards
	// every inbound call of its process).
	Resource    string `json:"resource,omitempty" example:"GET:/api/orders"`
	Enabled     bool   `json:"enabled" example:"true" validate:"optional"`
	Mode        string `json:"mode" enums:"enforce,shadow" example:"enforce" validate:"optional"`
	Description string `json:"description" example:"Black Friday cap" validate:"optional"`
	// App, if set, is the only app whose instances run the rule; the
	// server's own engine does not. Absent, every engine runs it.
	App string `json:"app,omitempty" example:"checkout"`
	// ExpiresAt is when the rule stops applying; absent, never.
	ExpiresAt *time.Time `json:"expiresAt,omitempty" example:"2026-12-01T00:00:00Z" format:"date-time"`
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
	CreatedAt time.Time `json:"createdAt" format:"date-time"`
	UpdatedAt time.Time `json:"updatedAt" format:"date-time"`
} //@name server.Rule

// Rule is a rule of the domain, between the wire and the store.
type Rule = wire.Rule

func fromStore(row store.Rule) (Rule, error) {
	r := Rule{
		ID: row.ID, Name: row.Name, Kind: row.Kind, App: row.App, Resource: row.Resource, Enabled: row.Enabled,
		Mode: row.Mode, Description: row.Description, Version: row.Version,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
	k := r.RuleKind()
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
	r.WithDefaults()
	return r, nil
}

// toStore is the row the store keeps of r.
func toStore(r *Rule) (store.Rule, error) {
	st, err := r.Stored()
	return rowOf(r, st.SpecJSON), err
}

// formsOf is r in the two forms a write of it hands on, from st, what it
// stores of r: the row the store keeps, and its content as its event
// shows it.
func formsOf(r *Rule, st wire.Stored) (store.Rule, Content) {
	return rowOf(r, st.SpecJSON), contentOf(r, st.Kind, st.Spec)
}

// rowOf is the row of r, whose spec is stored as specJSON.
func rowOf(r *Rule, specJSON []byte) store.Rule {
	return store.Rule{
		ID: r.ID, Name: r.Name, Kind: r.Kind, App: r.App, Resource: r.Resource, Enabled: r.Enabled,
		Mode: r.Mode, Description: r.Description, Spec: string(specJSON), Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// ContentOf is the rule as apply takes it: the envelope, and the fields of
// its kind's table that apply to it (those with options always, with their
// value).
func ContentOf(r *Rule) Content {
	k := r.RuleKind()
	if k == nil {
		return Content{
			Name: r.Name, Kind: r.Kind, App: r.App, Resource: r.Resource, Enabled: r.Enabled,
			Mode: r.Mode, Description: r.Description,
		}
	}
	_, spec, _ := r.EditSpec()
	return contentOf(r, k, spec)
}

// contentOf is ContentOf of r, whose spec is a pointer to an engine rule
// of k.
func contentOf(r *Rule, k *engine.Kind, spec any) Content {
	c := Content{
		Name: r.Name, Kind: r.Kind, App: r.App, Resource: r.Resource, Enabled: r.Enabled,
		Mode: r.Mode, Description: r.Description,
	}
	if ms := k.Value(spec, "expiresAtMs").Int(); ms != 0 {
		at := time.UnixMilli(ms).UTC()
		c.ExpiresAt = &at
	}
	showFields(k, spec, &c)
	return c
}

// showFields sets the fields of c that k's fields of spec, a pointer to
// an engine rule of k with its defaults, show: each one that applies to it, and
// each with options (a behaviour) that holds a value even where it does
// not. An object or array is shown empty rather than null; an empty
// string without a default (replaces) is not shown.
func showFields(k *engine.Kind, spec any, c *Content) {
	dst := reflect.ValueOf(c).Elem()
	to := structFields(dst.Type())
	value := func(name string) reflect.Value { return k.Value(spec, name) }
	for _, f := range k.Fields {
		v := value(f.Name)
		if when := f.AppliesWhen; when != nil && value(when.Field).String() != when.Value && (f.Options == nil || v.IsZero()) {
			continue
		}
		if v.Kind() == reflect.String && v.IsZero() && f.Default == nil {
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

// APIOf is the rule as the API shows it at nowMs (Unix milliseconds), which
// tells whether it has expired.
func APIOf(r *Rule, nowMs int64) APIRule {
	return APIRule{
		ID: r.ID, Content: ContentOf(r), Expired: r.Expired(nowMs), Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// structFields maps the JSON names of a struct's fields to their index.
var structFields = func() func(reflect.Type) map[string][]int {
	var mu sync.Mutex
	byType := map[reflect.Type]map[string][]int{}
	return func(t reflect.Type) map[string][]int {
		mu.Lock()
		defer mu.Unlock()
		if index, ok := byType[t]; ok {
			return index
		}
		index := map[string][]int{}
		for _, sf := range reflect.VisibleFields(t) {
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			index[name] = sf.Index
		}
		byType[t] = index
		return index
	}
}()

// slugName is the name given to a rule created without one:
// <kind>-<slug of resource>, lower case, every run of characters other than
// a-z and 0-9 turned into one '-', cut to leave room for suffix ("-2" when
// the plain name is taken).
func slugName(kind, resource, suffix string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(resource) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		} else {
			dash = true
		}
	}
	slug := b.String()
	if slug == "" {
		slug = "rule"
	}
	prefix := strings.ToLower(kind) + "-"
	if room := maxRuleNameLen - len(prefix) - len(suffix); len(slug) > room {
		slug = strings.TrimRight(slug[:room], "-")
	}
	return prefix + slug + suffix
}

const maxRuleNameLen = 128

// uniqueName returns the first of slugName's names, plain then -2, -3, …,
// for which taken is false.
func uniqueName(kind, resource string, taken func(string) (bool, error)) (string, error) {
	for n := 1; ; n++ {
		suffix := ""
		if n > 1 {
			suffix = fmt.Sprintf("-%d", n)
		}
		name := slugName(kind, resource, suffix)
		t, err := taken(name)
		if err != nil || !t {
			return name, err
		}
	}
}
