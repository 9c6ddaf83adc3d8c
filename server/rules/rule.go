package rules

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// Rule kinds.
const (
	KindFlow    = "flow"
	KindBreaker = "circuitBreaker"
)

// Content is a rule as apply accepts it and export writes it: the
// envelope every kind shares, then the fields of the rule's kind. Fields that
// do not apply to a rule (another kind's, or maxQueueingTimeMs of a reject
// rule) are left out.
type Content struct {
	Name        string `json:"name" example:"orders-qps"`
	Kind        string `json:"kind" enums:"flow,circuitBreaker" example:"flow"`
	Resource    string `json:"resource" example:"GET:/api/orders"`
	Enabled     bool   `json:"enabled" example:"true"`
	Mode        string `json:"mode" enums:"enforce,shadow" example:"enforce"`
	Description string `json:"description" example:"Black Friday cap"`
	// ExpiresAt is when the rule stops applying; absent, never.
	ExpiresAt *time.Time `json:"expiresAt,omitempty" example:"2026-12-01T00:00:00Z"`
	// Threshold is, for flow rules, the passes allowed per statIntervalMs
	// (or the calls in flight); for circuit breakers, the ratio or count
	// that opens them.
	Threshold *float64 `json:"threshold,omitempty" example:"100"`
	// StatIntervalMs is the window the threshold counts over (qps flow
	// rules and circuit breakers).
	StatIntervalMs *int64 `json:"statIntervalMs,omitempty" example:"1000"`
	FlowFields
	BreakerFields
} //@name server.RuleContent

// FlowFields are the fields of a flow rule (kind flow) besides threshold and
// statIntervalMs.
type FlowFields struct {
	Metric                 *string `json:"metric,omitempty" enums:"qps,concurrency" example:"qps"`
	ControlBehavior        *string `json:"controlBehavior,omitempty" enums:"reject,throttling" example:"reject"`
	MaxQueueingTimeMs      *int64  `json:"maxQueueingTimeMs,omitempty" example:"500"`
	TokenCalculateStrategy *string `json:"tokenCalculateStrategy,omitempty" enums:"direct,warmUp" example:"direct"`
	WarmUpPeriodSec        *int64  `json:"warmUpPeriodSec,omitempty" example:"10"`
	WarmUpColdFactor       *int64  `json:"warmUpColdFactor,omitempty" example:"3"`
	RelationStrategy       *string `json:"relationStrategy,omitempty" enums:"current,associated" example:"current"`
	RefResource            *string `json:"refResource,omitempty" example:"GET:/api/stock"`
	LimitApp               *string `json:"limitApp,omitempty" example:"default"`
	Scope                  *string `json:"scope,omitempty" enums:"local,cluster" example:"local"`
}

// BreakerFields are the fields of a circuit breaker (kind circuitBreaker)
// besides threshold and statIntervalMs.
type BreakerFields struct {
	Strategy         *string `json:"strategy,omitempty" enums:"slowRequestRatio,errorRatio,errorCount" example:"errorRatio"`
	MaxAllowedRtMs   *int64  `json:"maxAllowedRtMs,omitempty" example:"200"`
	RetryTimeoutMs   *int64  `json:"retryTimeoutMs,omitempty" example:"5000"`
	MinRequestAmount *int64  `json:"minRequestAmount,omitempty" example:"5"`
	ProbeNum         *int64  `json:"probeNum,omitempty" example:"1"`
}

// APIRule is a stored rule as the API shows it: its content, and the fields the
// server keeps.
type APIRule struct {
	ID int64 `json:"id" example:"42"`
	Content
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
	Resource    string
	Enabled     bool
	Mode        string
	Description string
	Flow        engine.FlowRule           // kind flow
	Breaker     engine.CircuitBreakerRule // kind circuitBreaker
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// engineFlow is the flow rule the engine loads.
func (r *Rule) engineFlow() engine.FlowRule {
	f := r.Flow
	f.Name, f.Resource, f.Mode = r.Name, r.Resource, engine.Mode(r.Mode)
	return f
}

// engineBreaker is the circuit breaker rule the engine loads.
func (r *Rule) engineBreaker() engine.CircuitBreakerRule {
	b := r.Breaker
	b.Name, b.Resource, b.Mode = r.Name, r.Resource, engine.Mode(r.Mode)
	return b
}

// expiresAtMs is when the rule stops applying, in Unix milliseconds, 0
// for never: its kind's engine rule keeps it, so it is stored with the
// spec.
func (r *Rule) expiresAtMs() int64 {
	if r.Kind == KindBreaker {
		return r.Breaker.ExpiresAtMs
	}
	return r.Flow.ExpiresAtMs
}

// setExpiresAtMs sets expiresAtMs.
func (r *Rule) setExpiresAtMs(ms int64) {
	if r.Kind == KindBreaker {
		r.Breaker.ExpiresAtMs = ms
	} else {
		r.Flow.ExpiresAtMs = ms
	}
}

// spec is the kind's engine rule, stored as the rule's spec.
func (r *Rule) spec() any {
	if r.Kind == KindBreaker {
		return &r.Breaker
	}
	return &r.Flow
}

func fromStore(row store.Rule) (Rule, error) {
	r := Rule{
		ID: row.ID, Name: row.Name, Kind: row.Kind, Resource: row.Resource, Enabled: row.Enabled,
		Mode: row.Mode, Description: row.Description, Version: row.Version,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
	if row.Kind != KindFlow && row.Kind != KindBreaker {
		return Rule{}, fmt.Errorf("rule %d: unknown kind %q", row.ID, row.Kind)
	}
	if err := json.Unmarshal([]byte(row.Spec), r.spec()); err != nil {
		return Rule{}, fmt.Errorf("rule %d: spec: %w", row.ID, err)
	}
	// A spec stored before one of its kind's fields existed holds that
	// field's default (the envelope has the mode).
	if r.Kind == KindFlow {
		r.Flow = r.Flow.WithDefaults()
		r.Flow.Mode = ""
	} else {
		r.Breaker = r.Breaker.WithDefaults()
		r.Breaker.Mode = ""
	}
	return r, nil
}

func (r *Rule) toStore() (store.Rule, error) {
	spec, err := json.Marshal(r.spec())
	if err != nil {
		return store.Rule{}, err
	}
	return store.Rule{
		ID: r.ID, Name: r.Name, Kind: r.Kind, Resource: r.Resource, Enabled: r.Enabled,
		Mode: r.Mode, Description: r.Description, Spec: string(spec), Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}, nil
}

// Content is the rule as apply takes it: the envelope, and the fields of
// its kind's table that apply to it (those with options always, with their
// value).
func (r *Rule) Content() Content {
	c := Content{
		Name: r.Name, Kind: r.Kind, Resource: r.Resource, Enabled: r.Enabled,
		Mode: r.Mode, Description: r.Description,
	}
	if ms := r.expiresAtMs(); ms != 0 {
		at := time.UnixMilli(ms).UTC()
		c.ExpiresAt = &at
	}
	switch r.Kind {
	case KindFlow:
		showFields(engine.FlowRuleFields, &r.Flow, &c)
	case KindBreaker:
		showFields(engine.BreakerRuleFields, &r.Breaker, &c)
	}
	return c
}

// showFields sets the fields of c that table's fields of spec, a pointer to
// an engine rule with its defaults, show: each one that applies to it, and
// each with options (a behaviour) even where it does not.
func showFields(table engine.Fields, spec any, c *Content) {
	src := reflect.ValueOf(spec).Elem()
	from := structFields(src.Type())
	dst := reflect.ValueOf(c).Elem()
	to := structFields(dst.Type())
	value := func(name string) reflect.Value { return src.FieldByIndex(from[name]) }
	for _, f := range table {
		if when := f.AppliesWhen; when != nil && f.Options == nil && value(when.Field).String() != when.Value {
			continue
		}
		field := dst.FieldByIndex(to[f.Name])
		shown := reflect.New(field.Type().Elem())
		shown.Elem().Set(value(f.Name).Convert(field.Type().Elem()))
		field.Set(shown)
	}
}

// withoutDefaults clears the fields of table in spec, a pointer to an
// engine rule, that hold their default, so that a partial update can
// switch the rule to a behaviour those defaults do not apply to (a qps
// rule's statIntervalMs of 1000 to metric concurrency).
func withoutDefaults(table engine.Fields, spec any) {
	v := reflect.ValueOf(spec).Elem()
	index := structFields(v.Type())
	for _, f := range table {
		field := v.FieldByIndex(index[f.Name])
		if f.Default != nil && fmt.Sprint(field.Interface()) == fmt.Sprint(f.Default) {
			field.SetZero()
		}
	}
}

// API is the rule as the API shows it.
func (r *Rule) API() APIRule {
	return APIRule{ID: r.ID, Content: r.Content(), Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}
