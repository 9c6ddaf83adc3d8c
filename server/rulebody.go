package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// Rule kinds.
const (
	kindFlow    = "flow"
	kindBreaker = "circuitBreaker"
)

// knownKinds lists the kinds a rule may have, for error messages.
const knownKinds = "flow, circuitBreaker"

const maxDescriptionLen = 1024

// RuleContent is a rule as apply accepts it and export writes it: the
// envelope every kind shares, then the fields of the rule's kind. Fields that
// do not apply to a rule (another kind's, or maxQueueingTimeMs of a reject
// rule) are left out.
type RuleContent struct {
	Name        string `json:"name" example:"orders-qps"`
	Kind        string `json:"kind" enums:"flow,circuitBreaker" example:"flow"`
	Resource    string `json:"resource" example:"GET:/api/orders"`
	Enabled     bool   `json:"enabled" example:"true"`
	Mode        string `json:"mode" enums:"enforce,shadow" example:"enforce"`
	Description string `json:"description" example:"Black Friday cap"`
	// Threshold is, for flow rules, the passes allowed per statIntervalMs
	// (or the calls in flight); for circuit breakers, the ratio or count
	// that opens them.
	Threshold *float64 `json:"threshold,omitempty" example:"100"`
	// StatIntervalMs is the window the threshold counts over (qps flow
	// rules and circuit breakers).
	StatIntervalMs *int64 `json:"statIntervalMs,omitempty" example:"1000"`
	FlowFields
	BreakerFields
}

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

// Rule is a stored rule as the API shows it: its content, and the fields the
// server keeps.
type Rule struct {
	ID int64 `json:"id" example:"42"`
	RuleContent
	Version   int64     `json:"version" example:"3"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// rule is a rule between the wire and the store: the envelope, and the
// kind's engine rule holding only the kind's own fields (its Name, Resource
// and Mode stay empty; the envelope has them).
type rule struct {
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
func (r *rule) engineFlow() engine.FlowRule {
	f := r.Flow
	f.Name, f.Resource, f.Mode = r.Name, r.Resource, engine.Mode(r.Mode)
	return f
}

// engineBreaker is the circuit breaker rule the engine loads.
func (r *rule) engineBreaker() engine.CircuitBreakerRule {
	b := r.Breaker
	b.Name, b.Resource, b.Mode = r.Name, r.Resource, engine.Mode(r.Mode)
	return b
}

// spec is the kind's engine rule, stored as the rule's spec.
func (r *rule) spec() any {
	if r.Kind == kindBreaker {
		return &r.Breaker
	}
	return &r.Flow
}

func ruleFromStore(row store.Rule) (rule, error) {
	r := rule{
		ID: row.ID, Name: row.Name, Kind: row.Kind, Resource: row.Resource, Enabled: row.Enabled,
		Mode: row.Mode, Description: row.Description, Version: row.Version,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
	if row.Kind != kindFlow && row.Kind != kindBreaker {
		return rule{}, fmt.Errorf("rule %d: unknown kind %q", row.ID, row.Kind)
	}
	if err := json.Unmarshal([]byte(row.Spec), r.spec()); err != nil {
		return rule{}, fmt.Errorf("rule %d: spec: %w", row.ID, err)
	}
	return r, nil
}

func (r *rule) toStore() (store.Rule, error) {
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

// content is the rule as apply takes it.
func (r *rule) content() RuleContent {
	c := RuleContent{
		Name: r.Name, Kind: r.Kind, Resource: r.Resource, Enabled: r.Enabled,
		Mode: r.Mode, Description: r.Description,
	}
	switch r.Kind {
	case kindFlow:
		f := r.Flow
		c.Threshold = &f.Threshold
		if f.Metric == engine.MetricQPS {
			c.StatIntervalMs = &f.StatIntervalMs
		}
		c.FlowFields = flowFields(f)
	case kindBreaker:
		b := r.Breaker
		c.Threshold, c.StatIntervalMs = &b.Threshold, &b.StatIntervalMs
		c.BreakerFields = breakerFields(b)
	}
	return c
}

// api is the rule as the API shows it.
func (r *rule) api() Rule {
	return Rule{ID: r.ID, RuleContent: r.content(), Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// flowFields shows the fields that apply to f, which has its defaults.
func flowFields(f engine.FlowRule) FlowFields {
	str := func(s string) *string { return &s }
	out := FlowFields{
		Metric:                 str(string(f.Metric)),
		ControlBehavior:        str(string(f.ControlBehavior)),
		TokenCalculateStrategy: str(string(f.TokenCalculateStrategy)),
		RelationStrategy:       str(string(f.RelationStrategy)),
	}
	if f.ControlBehavior == engine.BehaviorThrottling {
		out.MaxQueueingTimeMs = &f.MaxQueueingTimeMs
	}
	if f.TokenCalculateStrategy == engine.StrategyWarmUp {
		out.WarmUpPeriodSec = &f.WarmUpPeriodSec
		out.WarmUpColdFactor = &f.WarmUpColdFactor
	}
	if f.RelationStrategy == engine.RelationAssociated {
		out.RefResource = &f.RefResource
	}
	return out
}

// breakerFields shows the fields that apply to b, which has its defaults.
func breakerFields(b engine.CircuitBreakerRule) BreakerFields {
	strategy := string(b.Strategy)
	out := BreakerFields{Strategy: &strategy, RetryTimeoutMs: &b.RetryTimeoutMs, MinRequestAmount: &b.MinRequestAmount, ProbeNum: &b.ProbeNum}
	if b.Strategy == engine.StrategySlowRequestRatio {
		out.MaxAllowedRtMs = &b.MaxAllowedRtMs
	}
	return out
}

// withoutDefaults clears the fields of f that hold their default, so that a
// partial update can switch f to a behaviour those defaults do not apply to
// (a qps rule's statIntervalMs of 1000 to metric concurrency).
func withoutDefaults(f engine.FlowRule) engine.FlowRule {
	d := engine.FlowRule{Metric: f.Metric}.WithDefaults()
	clear := func(v *string, def string) {
		if *v == def {
			*v = ""
		}
	}
	clear((*string)(&f.Metric), string(d.Metric))
	clear((*string)(&f.ControlBehavior), string(d.ControlBehavior))
	clear((*string)(&f.TokenCalculateStrategy), string(d.TokenCalculateStrategy))
	clear((*string)(&f.RelationStrategy), string(d.RelationStrategy))
	if f.StatIntervalMs == engine.DefaultStatIntervalMs {
		f.StatIntervalMs = 0
	}
	if f.WarmUpColdFactor == engine.DefaultWarmUpColdFactor {
		f.WarmUpColdFactor = 0
	}
	return f
}

// breakerWithoutDefaults is withoutDefaults for a circuit breaker.
func breakerWithoutDefaults(b engine.CircuitBreakerRule) engine.CircuitBreakerRule {
	if b.MinRequestAmount == engine.DefaultMinRequestAmount {
		b.MinRequestAmount = 0
	}
	if b.StatIntervalMs == engine.DefaultBreakerStatIntervalMs {
		b.StatIntervalMs = 0
	}
	if b.ProbeNum == engine.DefaultProbeNum {
		b.ProbeNum = 0
	}
	return b
}

// decodeMode says which write a rule body is for; each treats absent
// fields its own way.
type decodeMode int

const (
	// forCreate: POST /rules. Absent fields take defaults; a name is made
	// up if none is given.
	forCreate decodeMode = iota
	// forReplace: PUT. Absent fields take defaults, but the name is kept.
	forReplace
	// forPatch: PATCH. Absent fields keep their value.
	forPatch
	// forApply: apply and import. Like create, but the name is required.
	forApply
)

// readOnlyFields may be sent back as GET returned them; they are ignored
// (id and kind are checked against the stored rule).
var readOnlyFields = []string{"version", "createdAt", "updatedAt"}

// kindFields names the fields of each kind besides the envelope, to tell
// a field of another kind from an unknown one.
var kindFields = map[string][]string{
	kindFlow: {"metric", "threshold", "statIntervalMs", "controlBehavior", "maxQueueingTimeMs",
		"tokenCalculateStrategy", "warmUpPeriodSec", "warmUpColdFactor", "relationStrategy", "refResource"},
	kindBreaker: {"strategy", "threshold", "maxAllowedRtMs", "retryTimeoutMs", "minRequestAmount",
		"statIntervalMs", "probeNum"},
}

// fieldKinds is kindFields turned around: the kinds a field belongs to.
var fieldKinds = func() map[string]string {
	kinds := map[string]string{}
	for _, kind := range []string{kindFlow, kindBreaker} {
		for _, name := range kindFields[kind] {
			if kinds[name] != "" {
				kinds[name] += ", "
			}
			kinds[name] += kind
		}
	}
	return kinds
}()

// decodeRule reads the rule object o onto base: the stored rule for PUT
// and PATCH (its ID and kind fixed), zero otherwise. Bad fields are added to
// o's errors; the rule is not validated yet (see validateRule).
func decodeRule(o *object, base rule, mode decodeMode) rule {
	keep := mode == forPatch
	r := base
	if !keep {
		r = rule{ID: base.ID, Kind: base.Kind, Version: base.Version, CreatedAt: base.CreatedAt, Enabled: true}
	}
	var id int64
	if o.integer("id", &id) && (mode == forReplace || mode == forPatch) && id != base.ID {
		o.fail("id", fmt.Sprintf("is %d in the path; a rule's id cannot change", base.ID))
	}
	for _, name := range readOnlyFields {
		o.value(name)
	}
	var kind string
	o.str("kind", &kind)
	switch {
	case base.Kind != "":
		if kind != "" && kind != base.Kind {
			o.fail("kind", fmt.Sprintf("is %s; a rule's kind cannot change", base.Kind))
		}
	case kind == "":
		o.fail("kind", "is required; one of "+knownKinds)
	case kind != kindFlow && kind != kindBreaker:
		o.fail("kind", "must be one of "+knownKinds)
	default:
		r.Kind = kind
	}

	o.str("name", &r.Name)
	if r.Name == "" && (mode == forReplace || mode == forPatch) {
		r.Name = base.Name
	}
	if mode == forApply && r.Name == "" {
		o.fail("name", "is required: apply matches rules by name")
	}
	o.str("resource", &r.Resource)
	o.boolean("enabled", &r.Enabled, true)
	o.str("mode", &r.Mode)
	if r.Mode == "" {
		r.Mode = string(engine.ModeEnforce)
	}
	o.str("description", &r.Description)

	switch r.Kind {
	case kindFlow:
		if keep {
			r.Flow = withoutDefaults(r.Flow)
		}
		decodeFlowFields(o, &r.Flow)
	case kindBreaker:
		if keep {
			r.Breaker = breakerWithoutDefaults(r.Breaker)
		}
		decodeBreakerFields(o, &r.Breaker)
		if !keep && !o.has("retryTimeoutMs") {
			o.fail("retryTimeoutMs", "is required")
		}
	default:
		// Without a valid kind, its fields cannot be judged; the kind's
		// error says what to fix.
		for name := range fieldKinds {
			o.value(name)
		}
	}
	if r.Kind != "" && !keep && !o.has("threshold") {
		o.fail("threshold", "is required")
	}
	o.rest(func(name string) string {
		if kinds := fieldKinds[name]; kinds != "" {
			return fmt.Sprintf("does not apply to kind %s (it is a field of %s)", r.Kind, kinds)
		}
		return ""
	})
	return r
}

func decodeBreakerFields(o *object, b *engine.CircuitBreakerRule) {
	o.str("strategy", (*string)(&b.Strategy))
	o.number("threshold", &b.Threshold)
	o.integer("maxAllowedRtMs", &b.MaxAllowedRtMs)
	o.integer("retryTimeoutMs", &b.RetryTimeoutMs)
	o.integer("minRequestAmount", &b.MinRequestAmount)
	o.integer("statIntervalMs", &b.StatIntervalMs)
	o.integer("probeNum", &b.ProbeNum)
}

func decodeFlowFields(o *object, f *engine.FlowRule) {
	o.str("metric", (*string)(&f.Metric))
	o.number("threshold", &f.Threshold)
	o.integer("statIntervalMs", &f.StatIntervalMs)
	o.str("controlBehavior", (*string)(&f.ControlBehavior))
	o.integer("maxQueueingTimeMs", &f.MaxQueueingTimeMs)
	o.str("tokenCalculateStrategy", (*string)(&f.TokenCalculateStrategy))
	o.integer("warmUpPeriodSec", &f.WarmUpPeriodSec)
	o.integer("warmUpColdFactor", &f.WarmUpColdFactor)
	o.str("relationStrategy", (*string)(&f.RelationStrategy))
	o.str("refResource", &f.RefResource)
}

// validateRule checks a decoded rule with the engine's own validation and
// fills in its defaults. Errors are named with path ("" or "rules[3].") and,
// when label is set, their message names the rule.
func validateRule(r *rule, path, label string, errs *[]FieldError) {
	add := func(field, message string) {
		if label != "" {
			message = fmt.Sprintf("rule %q: %s", label, message)
		}
		*errs = append(*errs, FieldError{Field: path + field, Message: message})
	}
	if n := utf8.RuneCountInString(r.Description); n > maxDescriptionLen || !utf8.ValidString(r.Description) {
		add("description", fmt.Sprintf("must be valid UTF-8 of at most %d characters", maxDescriptionLen))
	}
	switch r.Kind {
	case kindFlow:
		for _, fe := range r.engineFlow().Validate() {
			add(fe.Field, fe.Message)
		}
		r.Flow = r.Flow.WithDefaults()
		r.Flow.Name, r.Flow.Resource, r.Flow.Mode = "", "", ""
	case kindBreaker:
		for _, fe := range r.engineBreaker().Validate() {
			add(fe.Field, fe.Message)
		}
		r.Breaker = r.Breaker.WithDefaults()
		r.Breaker.Name, r.Breaker.Resource, r.Breaker.Mode = "", "", ""
	default:
		// The kind is missing or unknown (and reported): check the
		// envelope fields still, with a flow rule whose own fields are
		// all defaults.
		envelope := engine.FlowRule{Name: r.Name, Resource: r.Resource, Mode: engine.Mode(r.Mode)}
		for _, fe := range envelope.Validate() {
			add(fe.Field, fe.Message)
		}
	}
}

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
