package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// FieldType is the JSON type of a rule field's value.
type FieldType string

// Field types.
const (
	FieldString  FieldType = "string"
	FieldNumber  FieldType = "number"
	FieldInteger FieldType = "integer"
	FieldBoolean FieldType = "boolean"
	// FieldObject is a JSON object, such as a hotspot rule's specificItems.
	FieldObject FieldType = "object"
	// FieldArray is a JSON array of strings, such as an authority rule's
	// origins.
	FieldArray FieldType = "array"
)

// Field describes one field of a rule kind, once: the engine's validation
// and defaults, the REST API's decoder (engine/wire), the Swagger schema,
// the console's rule form and the rules reference all read it, so that a
// new field is one row of its kind's table (and its struct field and its
// use in decisions). engine/wire's Field is its JSON.
type Field struct {
	// Name is the field's JSON name, in the rule struct and the API.
	Name string
	// Type is its JSON type; a field with Options is a string.
	Type FieldType
	// Label names the field for people, in the console's form.
	Label string
	// Help says in a sentence what the field does and takes.
	Help string
	// Required fields must be given, where they apply (AppliesWhen); the
	// others take Default. A required number whose least value is above
	// 0, or that applies only when another field holds a value, must not
	// be 0.
	Required bool
	// Default is the value an unset field takes, if any.
	Default any
	// Example is a typical value, shown in the API's reference.
	Example any
	// Min and Max bound a number, inclusive, where the kind does.
	Min *float64
	Max *float64
	// MaxLength bounds a string's length in characters, where the field
	// does.
	MaxLength int
	// Multiline strings are prose of several lines, such as a description.
	Multiline bool
	// Options are a string field's values, the default first; for the
	// fields sentinel-golang numbers, in its order (0, 1, …).
	Options []Option
	// AppliesWhen, if set, is when the field applies: another field of
	// the kind (itself applying) holds a value. Otherwise it is refused
	// when it carries a non-zero, non-empty value.
	AppliesWhen *Condition
}

// Option is one value of a field with a fixed set of values.
type Option struct {
	Value string
	// Label says what the value means, for people.
	Label string
}

// Condition is a field's value, e.g. controlBehavior throttling.
type Condition struct {
	Field string
	Value string
}

// Fields is a rule kind's field table.
type Fields []Field

// Lookup returns the field called name.
func (fs Fields) Lookup(name string) (Field, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// field is Lookup for the engine's own tables, whose names it knows.
func (fs Fields) field(name string) Field {
	f, ok := fs.Lookup(name)
	if !ok {
		panic("engine: no rule field " + name)
	}
	return f
}

// OptionValues lists the values of f's options, in order.
func (f Field) OptionValues() []string {
	values := make([]string, len(f.Options))
	for i, o := range f.Options {
		values[i] = o.Value
	}
	return values
}

// mustBeOneOf is the message for a value that is none of f's options.
func (f Field) mustBeOneOf() string {
	return "must be one of " + strings.Join(f.OptionValues(), ", ")
}

// appliesOnly is the message for f set where it does not apply.
func (f Field) appliesOnly() string {
	return fmt.Sprintf("applies only to %s %s", f.AppliesWhen.Field, f.AppliesWhen.Value)
}

// between is the message for a value of f out of its range.
func (f Field) between() string {
	return fmt.Sprintf("must be between %s and %s", formatBound(*f.Min), formatBound(*f.Max))
}

// formatBound writes a bound as a plain number: 86400000, not 8.64e+07.
func formatBound(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// outside reports whether v is out of f's range.
func (f Field) outside(v float64) bool {
	return f.Min != nil && v < *f.Min || f.Max != nil && v > *f.Max
}

func bound(v float64) *float64 { return &v }

// Rows that flow and hotspot rules share.
var (
	qpsStatIntervalMs = Field{Name: "statIntervalMs", Type: FieldInteger, Label: "Stat interval (ms)", Default: DefaultStatIntervalMs, Example: DefaultStatIntervalMs,
		Min: bound(MinStatIntervalMs), Max: bound(MaxStatIntervalMs), AppliesWhen: &Condition{"metric", string(MetricQPS)},
		Help: "100 to 86400000 (a day); default 1000. 60000, 3600000 and 86400000 make minute, hour and day quotas."}
	maxQueueingTimeMs = Field{Name: "maxQueueingTimeMs", Type: FieldInteger, Label: "Longest wait (ms)", Default: 0, Example: 500,
		Min: bound(0), Max: bound(MaxQueueingTimeMs), AppliesWhen: &Condition{"controlBehavior", string(BehaviorThrottling)},
		Help: "0 to 60000: how long a caller may be asked to wait."}
	replaces = Field{Name: "replaces", Type: FieldString, Label: "Replaces (Envoy)", Example: "per-user", MaxLength: MaxReplaces * 129,
		Help: "Names of rules, separated by commas, that this rule replaces when Envoy's rate limit service is asked about both in one request (envoyproxy/ratelimit's replaces). Only the rate limit service reads it."}
)

// FlowRuleFields are the fields of a flow rule (FlowRule) besides the
// name, resource and mode every rule has, in the order the console lists
// them.
var FlowRuleFields = Fields{
	{Name: "metric", Type: FieldString, Label: "Metric", Default: string(MetricQPS), Example: string(MetricQPS),
		Help: "What the threshold limits: passes per stat interval, or calls in flight (which needs Exit).",
		Options: []Option{
			{string(MetricQPS), "Requests per interval (qps)"},
			{string(MetricConcurrency), "Calls in flight (concurrency)"},
		}},
	{Name: "threshold", Type: FieldNumber, Label: "Threshold", Required: true, Example: 100,
		Min: bound(0), Max: bound(MaxThreshold),
		Help: "Requests allowed per stat interval, or calls in flight (a whole number). Required, ≥ 0."},
	qpsStatIntervalMs,
	{Name: "controlBehavior", Type: FieldString, Label: "Over the threshold", Default: string(BehaviorReject), Example: string(BehaviorReject),
		AppliesWhen: &Condition{"metric", string(MetricQPS)},
		Help:        "What happens to calls over the threshold.",
		Options: []Option{
			{string(BehaviorReject), "Reject at once"},
			{string(BehaviorThrottling), "Throttle: space passes evenly"},
		}},
	maxQueueingTimeMs,
	{Name: "tokenCalculateStrategy", Type: FieldString, Label: "Threshold from cold", Default: string(StrategyDirect), Example: string(StrategyDirect),
		AppliesWhen: &Condition{"metric", string(MetricQPS)},
		Help:        "Warm-up ramps the threshold from threshold / cold factor up to threshold after an idle spell.",
		Options: []Option{
			{string(StrategyDirect), "Direct: the whole threshold at once"},
			{string(StrategyWarmUp), "Warm up: ramp up after an idle spell"},
		}},
	{Name: "warmUpPeriodSec", Type: FieldInteger, Label: "Warm-up period (s)", Required: true, Example: 10,
		Min: bound(1), Max: bound(MaxWarmUpPeriodSec), AppliesWhen: &Condition{"tokenCalculateStrategy", string(StrategyWarmUp)},
		Help: "Required with warm-up; 1 to 86400."},
	{Name: "warmUpColdFactor", Type: FieldInteger, Label: "Cold factor", Default: DefaultWarmUpColdFactor, Example: DefaultWarmUpColdFactor,
		Min: bound(2), AppliesWhen: &Condition{"tokenCalculateStrategy", string(StrategyWarmUp)},
		Help: "Starts at threshold / cold factor; > 1, default 3."},
	{Name: "relationStrategy", Type: FieldString, Label: "Traffic counted", Default: string(RelationCurrent), Example: string(RelationCurrent),
		Help: "Whose traffic the threshold counts.",
		Options: []Option{
			{string(RelationCurrent), "This resource's own"},
			{string(RelationAssociated), "Another resource's (associated)"},
		}},
	{Name: "refResource", Type: FieldString, Label: "Associated resource", Required: true, Example: "GET:/api/stock", MaxLength: MaxResourceNameLen,
		AppliesWhen: &Condition{"relationStrategy", string(RelationAssociated)},
		Help:        "The resource whose traffic limits this one."},
	{Name: "limitApp", Type: FieldString, Label: "Callers counted", Default: LimitAppDefault, Example: LimitAppDefault, MaxLength: MaxOriginLen,
		Help: "default: every caller together; an origin's name: only that origin's calls; other: each origin no other rule names, apart."},
	{Name: "scope", Type: FieldString, Label: "Counted by", Default: string(ScopeLocal), Example: string(ScopeLocal),
		Help: "Whether each engine counts its own traffic against the threshold, or all engines together (needs sluice --redis).",
		Options: []Option{
			{string(ScopeLocal), "Each engine on its own (local)"},
			{string(ScopeCluster), "All engines together (cluster)"},
		}},
	{Name: "clusterFallback", Type: FieldString, Label: "While the shared count is unreachable", Default: string(FallbackLocal), Example: string(FallbackLocal),
		AppliesWhen: &Condition{"scope", string(ScopeCluster)},
		Help:        "What each engine does while it cannot reach the count all engines share.",
		Options: []Option{
			{string(FallbackLocal), "Limit its own traffic (local)"},
			{string(FallbackPass), "Let every call through (pass)"},
			{string(FallbackBlock), "Block every call (block)"},
		}},
	{Name: "clusterFallbackThreshold", Type: FieldNumber, Label: "Threshold of each engine in fallback", Example: 250,
		AppliesWhen: &Condition{"scope", string(ScopeCluster)},
		Help:        "With fallback local: each engine's own threshold while the count is unreachable. Empty or 0: the threshold divided by the engines that shared the rule last."},
	replaces,
}

// BreakerRuleFields are the fields of a circuit breaker rule
// (CircuitBreakerRule) besides the name, resource and mode every rule
// has, in the order the console lists them.
var BreakerRuleFields = Fields{
	{Name: "strategy", Type: FieldString, Label: "Opens on", Required: true, Example: string(StrategyErrorRatio),
		Help: "What counts as failing.",
		// In sentinel-golang's order, which its rule files number.
		Options: []Option{
			{string(StrategySlowRequestRatio), "Slow request ratio"},
			{string(StrategyErrorRatio), "Error ratio"},
			{string(StrategyErrorCount), "Error count"},
		}},
	{Name: "threshold", Type: FieldNumber, Label: "Threshold", Required: true, Example: 0.5,
		Min: bound(0), Max: bound(maxBreakerCount),
		Help: "A ratio from 0 to 1 for the ratios (opens above it); a whole count ≥ 1 for error count (opens at it)."},
	{Name: "maxAllowedRtMs", Type: FieldInteger, Label: "Slow above (ms)", Required: true, Example: 200,
		Min: bound(1), AppliesWhen: &Condition{"strategy", string(StrategySlowRequestRatio)},
		Help: "Calls slower than this count as slow. Required, > 0."},
	{Name: "retryTimeoutMs", Type: FieldInteger, Label: "Open for (ms)", Required: true, Example: 5000,
		Min: bound(1), Max: bound(MaxRetryTimeoutMs),
		Help: "How long the breaker stays open before letting probes through. Required, > 0."},
	{Name: "minRequestAmount", Type: FieldInteger, Label: "Fewest calls to judge", Default: DefaultMinRequestAmount, Example: DefaultMinRequestAmount,
		Min: bound(1), Max: bound(maxBreakerCount),
		Help: "≥ 1, default 5: fewer calls in the window never open the breaker."},
	{Name: "statIntervalMs", Type: FieldInteger, Label: "Window (ms)", Default: DefaultBreakerStatIntervalMs, Example: DefaultBreakerStatIntervalMs,
		Min: bound(MinBreakerStatIntervalMs), Max: bound(MaxBreakerStatIntervalMs),
		Help: "1000 to 600000; default 1000."},
	{Name: "probeNum", Type: FieldInteger, Label: "Probes when half-open", Default: DefaultProbeNum, Example: DefaultProbeNum,
		Min: bound(1), Max: bound(maxBreakerCount),
		Help: "≥ 1, default 1."},
}

// HotspotRuleFields are the fields of a hotspot rule (HotspotRule) besides
// the name, resource and mode every rule has, in the order the console
// lists them.
var HotspotRuleFields = Fields{
	{Name: "paramKey", Type: FieldString, Label: "Parameter", Required: true, Example: "ip", MaxLength: MaxParamKeyLen,
		Help: "The parameter whose values are limited one by one, e.g. ip or header:X-User. Required."},
	{Name: "metric", Type: FieldString, Label: "Metric", Default: string(MetricQPS), Example: string(MetricQPS),
		Help: "What the threshold limits per value.",
		Options: []Option{
			{string(MetricQPS), "Requests per interval (qps)"},
			{string(MetricConcurrency), "Calls in flight (concurrency)"},
		}},
	{Name: "threshold", Type: FieldNumber, Label: "Threshold per value", Required: true, Example: 10,
		Min: bound(0), Max: bound(MaxThreshold),
		Help: "Per value: requests allowed per stat interval, or calls in flight (a whole number). Required, ≥ 0."},
	qpsStatIntervalMs,
	{Name: "controlBehavior", Type: FieldString, Label: "Over the threshold", Default: string(BehaviorReject), Example: string(BehaviorReject),
		AppliesWhen: &Condition{"metric", string(MetricQPS)},
		Help:        "What happens to a value's calls over its threshold.",
		Options: []Option{
			{string(BehaviorReject), "Reject at once"},
			{string(BehaviorThrottling), "Throttle: space passes evenly"},
		}},
	{Name: "burstCount", Type: FieldInteger, Label: "Burst", Default: 0, Example: 5,
		Min: bound(0), Max: bound(MaxThreshold), AppliesWhen: &Condition{"controlBehavior", string(BehaviorReject)},
		Help: "Extra passes a value may take at once on top of the threshold; ≥ 0."},
	maxQueueingTimeMs,
	{Name: "specificItems", Type: FieldObject, Label: "Thresholds of some values", Default: map[string]float64{}, Example: map[string]float64{"vip": 100},
		Help: "Value → its own threshold (≥ 0), at most 1000 entries."},
	{Name: "paramsMaxCapacity", Type: FieldInteger, Label: "Values tracked", Default: DefaultParamsMaxCapacity, Example: DefaultParamsMaxCapacity,
		Min: bound(1), Max: bound(MaxParamsMaxCapacity),
		Help: "1 to 10000000, default 100000: past it, the least recently used values are forgotten."},
	replaces,
}

// AuthorityRuleFields are the fields of an authority rule (AuthorityRule)
// besides the name, resource and mode every rule has.
var AuthorityRuleFields = Fields{
	{Name: "strategy", Type: FieldString, Label: "Origins listed are", Required: true, Example: string(AuthorityAllow),
		Help: "Allow only the origins listed (a call without an origin is blocked), or deny them.",
		Options: []Option{
			{string(AuthorityAllow), "Allowed: every other origin is blocked"},
			{string(AuthorityDeny), "Denied"},
		}},
	{Name: "origins", Type: FieldArray, Label: "Origins", Required: true, Example: []string{"checkout", "billing"},
		Help: "1 to 1000 origin names of 1 to 256 characters: the origin a call names."},
}

// SystemRuleFields are the fields of a system rule (SystemRule) besides
// the name and mode every rule has: a system rule has no resource.
var SystemRuleFields = Fields{
	{Name: "metricType", Type: FieldString, Label: "Watches", Required: true, Example: string(SystemCPUUsage),
		Help: "The figure of the process, over its inbound calls or its own, past which inbound calls are blocked.",
		// In sentinel-golang's order, which its rule files number.
		Options: []Option{
			{string(SystemLoad), "Load average per CPU (load)"},
			{string(SystemAvgRt), "Average response time, ms (avgRt)"},
			{string(SystemConcurrency), "Inbound calls in flight (concurrency)"},
			{string(SystemInboundQPS), "Inbound calls per second (inboundQps)"},
			{string(SystemCPUUsage), "CPU usage, a ratio of the quota (cpuUsage)"},
		}},
	{Name: "triggerCount", Type: FieldNumber, Label: "Trigger", Required: true, Example: 0.8,
		Min: bound(0), Max: bound(MaxThreshold),
		Help: "> 0: the figure past which inbound calls are blocked; for cpuUsage a ratio of the CPU quota, at most 1."},
	{Name: "strategy", Type: FieldString, Label: "Past the trigger", Example: string(SystemBBR),
		Help: "Block every inbound call, or (bbr, for load and cpuUsage only, and their default) only those beyond what the process completes at best.",
		// sentinel-golang numbers them -1 and 1.
		Options: []Option{
			{string(SystemNoAdaptive), "Block every inbound call (noAdaptive)"},
			{string(SystemBBR), "Block calls beyond what completes at best (bbr)"},
		}},
}

// AdaptiveRuleFields are the fields of an adaptive concurrency rule
// (AdaptiveConcurrencyRule) besides the name, resource and mode every rule
// has, in the order the console lists them.
var AdaptiveRuleFields = Fields{
	{Name: "algorithm", Type: FieldString, Label: "Algorithm", Default: string(AdaptiveGradient2), Example: string(AdaptiveGradient2),
		Help: "How the limit follows latency: gradient2 scales it by the no-load latency over the latest, aimd adds one while latency holds and cuts it by backoffRatio when it does not.",
		Options: []Option{
			{string(AdaptiveGradient2), "Gradient (gradient2)"},
			{string(AdaptiveAIMD), "Additive increase, multiplicative decrease (aimd)"},
		}},
	{Name: "initialLimit", Type: FieldInteger, Label: "Initial limit", Default: DefaultAdaptiveInitialLimit, Example: DefaultAdaptiveInitialLimit,
		Min: bound(1), Max: bound(MaxAdaptiveLimit),
		Help: "Calls in flight allowed before the rule has learned anything; default 20. Better below the resource's capacity than above it."},
	{Name: "minLimit", Type: FieldInteger, Label: "Least limit", Default: DefaultAdaptiveMinLimit, Example: DefaultAdaptiveMinLimit,
		Min: bound(1), Max: bound(MaxAdaptiveLimit),
		Help: "The limit never goes below it; default 4."},
	{Name: "maxLimit", Type: FieldInteger, Label: "Greatest limit", Default: DefaultAdaptiveMaxLimit, Example: DefaultAdaptiveMaxLimit,
		Min: bound(1), Max: bound(MaxAdaptiveLimit),
		Help: "The limit never goes above it; default 1000."},
	{Name: "tolerance", Type: FieldNumber, Label: "Latency tolerance", Default: DefaultAdaptiveTolerance, Example: DefaultAdaptiveTolerance,
		Min: bound(1), Max: bound(MaxAdaptiveTolerance),
		Help: "How far mean latency may rise over its no-load level before the limit comes down, as a ratio: 1 to 10, default 1.1 (10% over)."},
	{Name: "smoothing", Type: FieldNumber, Label: "Smoothing", Default: DefaultAdaptiveSmoothing, Example: DefaultAdaptiveSmoothing,
		Min: bound(0.01), Max: bound(1), AppliesWhen: &Condition{"algorithm", string(AdaptiveGradient2)},
		Help: "How much of each new estimate the limit takes, 0.01 to 1, default 0.2: lower moves slower and steadier."},
	{Name: "backoffRatio", Type: FieldNumber, Label: "Backoff ratio", Default: DefaultAdaptiveBackoffRatio, Example: DefaultAdaptiveBackoffRatio,
		Min: bound(0.5), Max: bound(0.99), AppliesWhen: &Condition{"algorithm", string(AdaptiveAIMD)},
		Help: "What the limit is multiplied by when latency passes its tolerance or calls fail, 0.5 to 0.99, default 0.9."},
}
