package rules

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/strictjson"
)

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
	KindFlow: {"metric", "threshold", "statIntervalMs", "controlBehavior", "maxQueueingTimeMs",
		"tokenCalculateStrategy", "warmUpPeriodSec", "warmUpColdFactor", "relationStrategy", "refResource"},
	KindBreaker: {"strategy", "threshold", "maxAllowedRtMs", "retryTimeoutMs", "minRequestAmount",
		"statIntervalMs", "probeNum"},
}

// fieldKinds is kindFields turned around: the kinds a field belongs to.
var fieldKinds = func() map[string]string {
	kinds := map[string]string{}
	for _, kind := range []string{KindFlow, KindBreaker} {
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
func decodeRule(o *strictjson.Object, base Rule, mode decodeMode) Rule {
	keep := mode == forPatch
	r := base
	if !keep {
		r = Rule{ID: base.ID, Kind: base.Kind, Version: base.Version, CreatedAt: base.CreatedAt, Enabled: true}
	}
	var id int64
	if o.Integer("id", &id) && (mode == forReplace || mode == forPatch) && id != base.ID {
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
		o.Fail("kind", "is required; one of "+knownKinds)
	case kind != KindFlow && kind != KindBreaker:
		o.Fail("kind", "must be one of "+knownKinds)
	default:
		r.Kind = kind
	}

	o.Str("name", &r.Name)
	if r.Name == "" && (mode == forReplace || mode == forPatch) {
		r.Name = base.Name
	}
	if mode == forApply && r.Name == "" {
		o.Fail("name", "is required: apply matches rules by name")
	}
	o.Str("resource", &r.Resource)
	o.Bool("enabled", &r.Enabled, true)
	o.Str("mode", &r.Mode)
	if r.Mode == "" {
		r.Mode = string(engine.ModeEnforce)
	}
	o.Str("description", &r.Description)

	switch r.Kind {
	case KindFlow:
		if keep {
			r.Flow = withoutDefaults(r.Flow)
		}
		decodeFlowFields(o, &r.Flow)
	case KindBreaker:
		if keep {
			r.Breaker = breakerWithoutDefaults(r.Breaker)
		}
		decodeBreakerFields(o, &r.Breaker)
		if !keep && !o.Has("retryTimeoutMs") {
			o.Fail("retryTimeoutMs", "is required")
		}
	default:
		// Without a valid kind, its fields cannot be judged; the kind's
		// error says what to fix.
		for name := range fieldKinds {
			o.Value(name)
		}
	}
	if r.Kind != "" && !keep && !o.Has("threshold") {
		o.Fail("threshold", "is required")
	}
	o.Rest(func(name string) string {
		if kinds := fieldKinds[name]; kinds != "" {
			return fmt.Sprintf("does not apply to kind %s (it is a field of %s)", r.Kind, kinds)
		}
		return ""
	})
	return r
}

func decodeBreakerFields(o *strictjson.Object, b *engine.CircuitBreakerRule) {
	o.Str("strategy", (*string)(&b.Strategy))
	o.Number("threshold", &b.Threshold)
	o.Integer("maxAllowedRtMs", &b.MaxAllowedRtMs)
	o.Integer("retryTimeoutMs", &b.RetryTimeoutMs)
	o.Integer("minRequestAmount", &b.MinRequestAmount)
	o.Integer("statIntervalMs", &b.StatIntervalMs)
	o.Integer("probeNum", &b.ProbeNum)
}

func decodeFlowFields(o *strictjson.Object, f *engine.FlowRule) {
	o.Str("metric", (*string)(&f.Metric))
	o.Number("threshold", &f.Threshold)
	o.Integer("statIntervalMs", &f.StatIntervalMs)
	o.Str("controlBehavior", (*string)(&f.ControlBehavior))
	o.Integer("maxQueueingTimeMs", &f.MaxQueueingTimeMs)
	o.Str("tokenCalculateStrategy", (*string)(&f.TokenCalculateStrategy))
	o.Integer("warmUpPeriodSec", &f.WarmUpPeriodSec)
	o.Integer("warmUpColdFactor", &f.WarmUpColdFactor)
	o.Str("relationStrategy", (*string)(&f.RelationStrategy))
	o.Str("refResource", &f.RefResource)
}

// validateRule checks a decoded rule with the engine's own validation and
// fills in its defaults. Errors are named with path ("" or "rules[3].") and,
// when label is set, their message names the rule.
func validateRule(r *Rule, path, label string, errs *[]engine.FieldError) {
	add := func(field, message string) {
		if label != "" {
			message = fmt.Sprintf("rule %q: %s", label, message)
		}
		*errs = append(*errs, engine.FieldError{Field: path + field, Message: message})
	}
	if n := utf8.RuneCountInString(r.Description); n > maxDescriptionLen || !utf8.ValidString(r.Description) {
		add("description", fmt.Sprintf("must be valid UTF-8 of at most %d characters", maxDescriptionLen))
	}
	switch r.Kind {
	case KindFlow:
		for _, fe := range r.engineFlow().Validate() {
			add(fe.Field, fe.Message)
		}
		r.Flow = r.Flow.WithDefaults()
		r.Flow.Name, r.Flow.Resource, r.Flow.Mode = "", "", ""
	case KindBreaker:
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
