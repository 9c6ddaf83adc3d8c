package engine

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"unicode/utf8"
)

// ReasonHotspot is a hotspot rule: one value of a parameter over its
// threshold.
const ReasonHotspot BlockReason = "hotspot"

// Limits and defaults of hotspot rule fields.
const (
	DefaultParamsMaxCapacity = 100_000
	MaxParamsMaxCapacity     = 10_000_000
	MaxParamKeyLen           = 64
	MaxSpecificItems         = 1000
	maxSpecificItemLen       = MaxResourceNameLen
)

// HotspotRule limits each distinct value of one parameter of the calls
// (WithParam) separately: per user, per API key, per IP. A call without
// the parameter is not limited by it. Zero values of optional fields mean
// their defaults; the field table (HotspotKind) names them in JSON.
type HotspotRule struct {
	// Name identifies the rule in block errors.
	Name     string
	Resource string
	Mode     Mode

	// ParamKey is the key of the parameter whose values are limited.
	ParamKey string
	Metric   FlowMetric
	// Threshold is per value: passes per StatIntervalMs (qps) or calls in
	// flight (concurrency, a whole number).
	Threshold      float64
	StatIntervalMs int64
	// BurstCount is how many passes a value may take at once on top of
	// the threshold (qps reject only): the value then has a token bucket
	// of threshold+burstCount refilled by threshold per interval.
	BurstCount        int64
	ControlBehavior   ControlBehavior
	MaxQueueingTimeMs int64
	// SpecificItems gives some values their own threshold.
	SpecificItems map[string]float64
	// ParamsMaxCapacity bounds the values tracked; past it, the least
	// recently used are forgotten.
	ParamsMaxCapacity int64
	// Replaces is FlowRule.Replaces.
	Replaces string
	// ExpiresAtMs, if not 0, is when the rule stops applying (see
	// FlowRule.ExpiresAtMs).
	ExpiresAtMs int64
}

// HotspotKind is the kind of hotspot rules (HotspotRule).
var HotspotKind = kindOf(Kind{Name: KindHotspot, Label: "Hotspot", Title: "Hotspot rule",
	Help: "limit each value of a parameter apart: per user, per key, per IP", Fields: HotspotRuleFields,
	Summary: "per value of {paramKey}: [metric=concurrency:{threshold} in flight at most][metric=qps:{threshold} per {statIntervalMs|per}]" +
		"[controlBehavior=throttling:, spaced evenly][controlBehavior=reject:[burstCount!=0: (+{burstCount} burst)]][specificItems!=:; {specificItems}]"},
	nil, checkHotspot, setOf[HotspotRule]{list: "hotspot", book: hotspotKind, check: hotspotSetCheck,
		rules:  func(set *ResourceRules) *[]HotspotRule { return &set.Hotspot },
		staged: func(c *ruleChange, resource string) *[]HotspotRule { return &c.resources[resource].hotspot }})

// WithDefaults returns the rule with every unset field that applies to it
// set to its default.
func (r HotspotRule) WithDefaults() HotspotRule {
	HotspotKind.WithDefaults(&r)
	return r
}

// Validate checks the rule as WithDefaults would complete it and returns
// one FieldError for every bad field, named as in JSON.
func (r HotspotRule) Validate() []FieldError { return HotspotKind.validateOwn(&r) }

// checkHotspot checks what the field table cannot say of r: a whole
// threshold for concurrency, and the values of specificItems.
func checkHotspot(r *HotspotRule, errs *fieldErrors) {
	threshold := HotspotRuleFields.field("threshold")
	concurrency := r.Metric == MetricConcurrency
	errs.check("threshold", thresholdProblem(threshold, r.Threshold, concurrency))
	if len(r.SpecificItems) > MaxSpecificItems {
		errs.add("specificItems", fmt.Sprintf("must have at most %d entries", MaxSpecificItems))
	}
	for value, t := range r.SpecificItems {
		if n := utf8.RuneCountInString(value); n == 0 || n > maxSpecificItemLen {
			errs.add("specificItems", fmt.Sprintf("value %q must be 1-%d characters", value, maxSpecificItemLen))
		}
		if p := thresholdProblem(threshold, t, concurrency); p != "" {
			errs.add("specificItems", fmt.Sprintf("the threshold of %q %s", value, p))
		}
	}
	errs.check("replaces", replacesProblem(r.Replaces, r.Name))
}

// thresholdProblem says why v is not a valid threshold of field, whole
// if need be, or "".
func thresholdProblem(field Field, v float64, whole bool) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "must be a finite number"
	case v < *field.Min:
		return "must be >= " + formatBound(*field.Min)
	case v > *field.Max:
		return "must be at most " + formatBound(*field.Max)
	case whole && v != math.Trunc(v):
		return "must be a whole number for metric concurrency"
	}
	return ""
}

// equal reports whether r and o are the same rule: a load keeps the state
// of a hotspot rule loaded again equal.
func (r HotspotRule) equal(o HotspotRule) bool {
	a, b := r, o
	a.SpecificItems, b.SpecificItems = nil, nil
	return reflect.DeepEqual(a, b) && maps.Equal(r.SpecificItems, o.SpecificItems)
}
