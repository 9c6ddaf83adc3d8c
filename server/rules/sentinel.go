package rules

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// SentinelRule documents a rule of the import's body with format=sentinel:
// sentinel-golang's rule JSON of each kind it takes (flow.Rule,
// circuitbreaker.Rule, its data sources' hotspot rule, system.Rule), the
// fields of all four in one object, each saying which kinds read it. An
// enum is sentinel-golang's number or, as its Kubernetes CRDs write it,
// the number's name; its schema is any value for that reason.
type SentinelRule struct {
	// ID (every kind) becomes the rule's description.
	ID string `json:"id" validate:"optional"`
	// Resource is the rule's (flow, circuitBreaker, hotspot); a system rule
	// has none.
	Resource string `json:"resource" example:"GET:/api/orders" validate:"optional"`
	// Threshold is the flow, circuitBreaker or hotspot rule's.
	Threshold float64 `json:"threshold" example:"100" validate:"optional" format:"double"`
	// TokenCalculateStrategy (flow): 0 Direct, 1 WarmUp (2 MemoryAdaptive is
	// refused).
	TokenCalculateStrategy json.RawMessage `json:"tokenCalculateStrategy" validate:"optional"`
	// ControlBehavior (flow, hotspot): 0 Reject, 1 Throttling.
	ControlBehavior json.RawMessage `json:"controlBehavior" validate:"optional"`
	// RelationStrategy (flow): 0 CurrentResource, 1 AssociatedResource.
	RelationStrategy json.RawMessage `json:"relationStrategy" validate:"optional"`
	// RefResource (flow) is the resource an AssociatedResource rule counts.
	RefResource string `json:"refResource" validate:"optional"`
	// MaxQueueingTimeMs (flow, hotspot) is a Throttling rule's.
	MaxQueueingTimeMs int64 `json:"maxQueueingTimeMs" validate:"optional"`
	// WarmUpPeriodSec and WarmUpColdFactor (flow) are a WarmUp rule's.
	WarmUpPeriodSec  int64 `json:"warmUpPeriodSec" validate:"optional"`
	WarmUpColdFactor int64 `json:"warmUpColdFactor" validate:"optional"`
	// StatIntervalInMs (flow) becomes statIntervalMs.
	StatIntervalInMs int64 `json:"statIntervalInMs" validate:"optional"`
	// LowMemUsageThreshold, HighMemUsageThreshold, MemLowWaterMarkBytes,
	// MemHighWaterMarkBytes and AdaptiveConfigName (flow) are read by
	// MemoryAdaptive only, which is refused.
	LowMemUsageThreshold  int64  `json:"lowMemUsageThreshold" validate:"optional"`
	HighMemUsageThreshold int64  `json:"highMemUsageThreshold" validate:"optional"`
	MemLowWaterMarkBytes  int64  `json:"memLowWaterMarkBytes" validate:"optional"`
	MemHighWaterMarkBytes int64  `json:"memHighWaterMarkBytes" validate:"optional"`
	AdaptiveConfigName    string `json:"adaptiveConfigName" validate:"optional"`
	// Regex (flow) must be false: a rule names one resource.
	Regex bool `json:"regex" validate:"optional"`
	// LimitApp (flow) is Sentinel's (Java) field, which sentinel-golang
	// lacks: whose calls the rule counts; empty is every caller's.
	LimitApp string `json:"limitApp" example:"default" validate:"optional"`
	// Strategy (circuitBreaker): 0 SlowRequestRatio, 1 ErrorRatio, 2
	// ErrorCount; (system): -1 NoAdaptive, 1 BBR, 0 unset.
	Strategy json.RawMessage `json:"strategy" validate:"optional"`
	// RetryTimeoutMs, MinRequestAmount, StatIntervalMs, MaxAllowedRtMs and
	// ProbeNum are a circuitBreaker rule's; StatSlidingWindowBucketCount,
	// Sluice's own choice, is dropped.
	RetryTimeoutMs               int64 `json:"retryTimeoutMs" validate:"optional"`
	MinRequestAmount             int64 `json:"minRequestAmount" validate:"optional"`
	StatIntervalMs               int64 `json:"statIntervalMs" validate:"optional"`
	StatSlidingWindowBucketCount int64 `json:"statSlidingWindowBucketCount" validate:"optional"`
	MaxAllowedRtMs               int64 `json:"maxAllowedRtMs" validate:"optional"`
	ProbeNum                     int64 `json:"probeNum" validate:"optional"`
	// MetricType (hotspot): 0 Concurrency, 1 QPS; (system): 0 Load
	// (refused), 1 AvgRT, 2 Concurrency, 3 InboundQPS, 4 CpuUsage.
	MetricType json.RawMessage `json:"metricType" validate:"optional"`
	// ParamKey and ParamIndex (hotspot) name the parameter: paramKey, else
	// argN for paramIndex N.
	ParamKey   string `json:"paramKey" validate:"optional"`
	ParamIndex int64  `json:"paramIndex" validate:"optional"`
	// BurstCount, DurationInSec (which becomes statIntervalMs) and
	// ParamsMaxCapacity are a hotspot rule's.
	BurstCount        int64 `json:"burstCount" validate:"optional"`
	DurationInSec     int64 `json:"durationInSec" validate:"optional"`
	ParamsMaxCapacity int64 `json:"paramsMaxCapacity" validate:"optional"`
	// SpecificItems (hotspot) are the values with thresholds of their own.
	SpecificItems []SentinelSpecificItem `json:"specificItems" validate:"optional"`
	// TriggerCount is a system rule's.
	TriggerCount float64 `json:"triggerCount" validate:"optional" format:"double"`
} //@name server.SentinelRule

// SentinelSpecificItem documents one of a sentinel-golang hotspot rule's
// specificItems.
type SentinelSpecificItem struct {
	// ValKind: 0 KindInt, 1 KindString, 2 KindBool, 3 KindFloat64.
	ValKind   json.RawMessage `json:"valKind" validate:"optional"`
	ValStr    string          `json:"valStr" example:"vip"`
	Threshold float64         `json:"threshold" example:"100" format:"double"`
} //@name server.SentinelSpecificItem

// sentinelOption is the value sentinel-golang numbers n for the field
// called name: the engine's table lists a field's options in its order.
func sentinelOption(table engine.Fields, name string, n int64) (string, bool) {
	f, _ := table.Lookup(name)
	if n < 0 || n >= int64(len(f.Options)) {
		return "", false
	}
	return f.Options[n].Value, true
}

// plainFields are the fields of table that sentinel-golang names and
// writes as Sluice does: those without options, which it numbers.
func plainFields(table engine.Fields) engine.Fields {
	return slices.DeleteFunc(slices.Clone(table), func(f engine.Field) bool { return f.Options != nil })
}

// sentinelEnum reads the enum field name into dst: sentinel-golang's JSON
// writes a number, and its Kubernetes CRDs (sentinel-go-datasource-k8s-crd)
// the number's name, one of names; "" there is unset, as 0 is.
func sentinelEnum(o *wire.Object, name string, names map[string]int64, dst *int64) {
	if v, _ := o.Value(name); len(v) == 0 || v[0] != '"' {
		o.Integer(name, dst)
		return
	}
	var text string
	o.Str(name, &text)
	if n, ok := names[text]; ok {
		*dst = n
	} else if text != "" {
		o.Fail(name, fmt.Sprintf("%q is no name of sentinel-golang's: must be a number or one of %s", text, strings.Join(slices.Sorted(maps.Keys(names)), ", ")))
	}
}

// The names sentinel-golang's Kubernetes CRDs give its enums' numbers.
var (
	sentinelTokenStrategies = map[string]int64{"Direct": 0, "WarmUp": 1, "MemoryAdaptive": 2}
	sentinelBehaviors       = map[string]int64{"Reject": 0, "Throttling": 1}
	sentinelRelations       = map[string]int64{"CurrentResource": 0, "AssociatedResource": 1}
	sentinelBreakerKinds    = map[string]int64{"SlowRequestRatio": 0, "ErrorRatio": 1, "ErrorCount": 2}
	sentinelHotspotMetrics  = map[string]int64{"Concurrency": 0, "QPS": 1}
	sentinelValueKinds      = map[string]int64{"KindInt": 0, "KindString": 1, "KindBool": 2, "KindFloat64": 3}
	sentinelSystemMetrics   = map[string]int64{"Load": 0, "AvgRT": 1, "Concurrency": 2, "InboundQPS": 3, "CpuUsage": 4}
	sentinelSystemAdaptives = map[string]int64{"NoAdaptive": -1, "BBR": 1}
)

// SentinelKinds are the kinds ImportSentinel converts.
var SentinelKinds = []string{engine.KindFlow, engine.KindCircuitBreaker, engine.KindHotspot, engine.KindSystem}

// sentinelImports convert the sentinel-golang rules of each of
// SentinelKinds.
var sentinelImports = map[string]func([]json.RawMessage, *[]PlanNote) ([]Rule, error){
	engine.KindFlow:           convertSentinelFlowRules,
	engine.KindCircuitBreaker: convertSentinelBreakerRules,
	engine.KindHotspot:        convertSentinelHotspotRules,
	engine.KindSystem:         convertSentinelSystemRules,
}

// ImportSentinel turns the sentinel-golang rules of kind (one of
// SentinelKinds) into rules that Apply takes, named in file order and
// validated like a rule file. The notes name each field given that was
// dropped, as sentinel-golang ignores it too: the plan lists them
// (ApplyPlan.Notes), so nothing is left out without a line.
func ImportSentinel(kind string, items []json.RawMessage) ([]Rule, []PlanNote, error) {
	var notes []PlanNote
	rules, err := sentinelImports[kind](items, &notes)
	return rules, notes, err
}

// sentinelResourceKinds are the kinds of sentinel-golang's Kubernetes
// custom resources (group datasource.sentinel.io) that hold rules of
// SentinelKinds, in spec.rules: the kind of those rules by the resource's.
var sentinelResourceKinds = map[string]string{
	"FlowRules":           engine.KindFlow,
	"CircuitBreakerRules": engine.KindCircuitBreaker,
	"HotspotRules":        engine.KindHotspot,
	"SystemRules":         engine.KindSystem,
}

// SentinelResource reads doc, a JSON object, as one of sentinel-golang's
// Kubernetes custom resources of rules (sentinel-go-datasource-k8s-crd's
// FlowRules, CircuitBreakerRules, HotspotRules or SystemRules): it
// answers the kind of its rules and the rules of its spec, or ok false
// when doc is no such resource.
func SentinelResource(doc []byte) (kind string, items []json.RawMessage, ok bool) {
	var resource struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Rules []json.RawMessage `json:"rules"`
		} `json:"spec"`
	}
	if json.Unmarshal(doc, &resource) != nil || !strings.HasPrefix(resource.APIVersion, "datasource.sentinel.io/") {
		return "", nil, false
	}
	kind, ok = sentinelResourceKinds[resource.Kind]
	return kind, resource.Spec.Rules, ok
}

// javaSentinelFields are fields of Java Sentinel's rules (FlowRule,
// DegradeRule, ParamFlowRule, SystemRule, AuthorityRule and the dashboard's
// entities) that sentinel-golang's have not: a rule with one is refused
// whole, with one message, rather than field by field.
var javaSentinelFields = []string{"grade", "count", "clusterMode", "gmtCreate", "gmtModified", "ip", "port", "timeWindow", "highestSystemLoad", "qps", "avgRt", "maxThread"}

// convertSentinelBreakerRules turns sentinel-golang circuit breaker rules
// into Sluice rules, named in file order, validated like an apply body.
// The bucket count is Sluice's own choice and is dropped.
func convertSentinelBreakerRules(items []json.RawMessage, notes *[]PlanNote) ([]Rule, error) {
	return convertSentinel(items, notes, engine.CircuitBreakerKind, func(o *wire.Object, r *Rule, b *engine.CircuitBreakerRule, _ dropper) {
		var id string
		var strategy, ignored int64
		o.Str("id", &id)
		sentinelEnum(o, "strategy", sentinelBreakerKinds, &strategy)
		// Sentinel's zero values mean unset (docs/api.md): the zeros sent
		// take Sluice's defaults.
		wire.DecodeFields(o, engine.CircuitBreakerKind, plainFields(engine.BreakerRuleFields), b, false)
		o.Integer("statSlidingWindowBucketCount", &ignored)
		if value, ok := sentinelOption(engine.BreakerRuleFields, "strategy", strategy); ok {
			b.Strategy = engine.BreakerStrategy(value)
		} else {
			o.Fail("strategy", "must be 0 (SlowRequestRatio), 1 (ErrorRatio) or 2 (ErrorCount)")
		}
		if b.Strategy != engine.StrategySlowRequestRatio {
			b.MaxAllowedRtMs = 0 // Sentinel ignores it for the other strategies
		}
		r.Description = importedDescription(id)
	})
}

// convertSentinel converts sentinel-golang rules of kind, whose engine
// rules are Rs, with fill, which reads one rule object into a rule and its
// spec; names are made up in file order and every rule is validated like
// an apply body.
func convertSentinel[R any](items []json.RawMessage, notes *[]PlanNote, kind *engine.Kind, fill func(o *wire.Object, r *Rule, spec *R, drop dropper)) ([]Rule, error) {
	named := map[string]bool{}
	return decodeRuleList(items, "the Sentinel rules cannot be imported; nothing was applied; see details",
		func(i int, o *wire.Object, errs *[]engine.FieldError) (Rule, bool) {
			r := Rule{Kind: kind.Name, Enabled: true, Mode: string(engine.ModeEnforce)}
			if java := javaFields(o); len(java) > 0 {
				*errs = append(*errs, engine.FieldError{Field: fmt.Sprintf("rules[%d]", i), Message: fmt.Sprintf(
					"is a rule of Java Sentinel (it has %s): Sluice imports sentinel-golang's rule JSON; write the rule in Sluice's terms (docs/rules.md: grade 1 is metric qps, 0 metric concurrency; count is threshold) and apply it",
					strings.Join(java, ", "))})
				return r, false
			}
			drop := func(field, why string) {
				*notes = append(*notes, PlanNote{Field: fmt.Sprintf("rules[%d].%s", i, field), Message: "dropped: " + why})
			}
			var spec R
			name := func() {
				r.Name, _ = uniqueName(kind.Name, r.Subject(), func(name string) (bool, error) { return named[name], nil })
				named[r.Name] = true
				o.Label = r.Name
			}
			if kind.NoResource {
				// Named after what fill reads.
				fill(o, &r, &spec, drop)
				r.Spec = spec
				name()
			} else {
				o.Str("resource", &r.Resource)
				name()
				fill(o, &r, &spec, drop)
				r.Spec = spec
			}
			o.Rest(func(string) string { return "" })
			return r, true
		})
}

// dropper notes that a field given was dropped, and why.
type dropper func(field, why string)

// javaFields returns the fields of o that only Java Sentinel's rules have.
func javaFields(o *wire.Object) []string {
	var found []string
	for _, f := range javaSentinelFields {
		if o.Has(f) {
			found = append(found, f)
		}
	}
	return found
}

func importedDescription(id string) string {
	if id == "" {
		return "Imported from sentinel-golang"
	}
	return "Imported from sentinel-golang rule " + id
}

// convertSentinelFlowRules turns sentinel-golang flow rules into Sluice
// rules, named in file order, validated like an apply body.
func convertSentinelFlowRules(items []json.RawMessage, notes *[]PlanNote) ([]Rule, error) {
	return convertSentinel(items, notes, engine.FlowKind, func(o *wire.Object, r *Rule, spec *engine.FlowRule, drop dropper) {
		var sr struct {
			id, refResource, adaptiveConfig, limitApp          string
			strategy, behavior, relation                       int64
			threshold                                          float64
			queueing, warmUpSec, coldFactor, interval, ignored int64
		}
		o.Str("id", &sr.id)
		// Not a field of sentinel-golang's flow rules, but of Sentinel's
		// (Java) and of Sluice's: "" is unset, as Sentinel's other zero
		// values.
		o.Str("limitApp", &sr.limitApp)
		sentinelEnum(o, "tokenCalculateStrategy", sentinelTokenStrategies, &sr.strategy)
		sentinelEnum(o, "controlBehavior", sentinelBehaviors, &sr.behavior)
		o.Number("threshold", &sr.threshold)
		sentinelEnum(o, "relationStrategy", sentinelRelations, &sr.relation)
		o.Str("refResource", &sr.refResource)
		o.Integer("maxQueueingTimeMs", &sr.queueing)
		o.Integer("warmUpPeriodSec", &sr.warmUpSec)
		o.Integer("warmUpColdFactor", &sr.coldFactor)
		o.Integer("statIntervalInMs", &sr.interval)
		var regex bool
		if o.Bool("regex", &regex, false) && regex {
			o.Fail("regex", "must be false: a Sluice rule names one resource, not a pattern of them")
		}
		// Used by MemoryAdaptive only, which is refused below; newer
		// sentinel-golang versions name an adaptive configuration instead.
		o.Str("adaptiveConfigName", &sr.adaptiveConfig)
		for _, name := range []string{"lowMemUsageThreshold", "highMemUsageThreshold", "memLowWaterMarkBytes", "memHighWaterMarkBytes"} {
			o.Integer(name, &sr.ignored)
		}

		f := engine.FlowRule{Threshold: sr.threshold, StatIntervalMs: sr.interval, LimitApp: sr.limitApp}
		table := engine.FlowRuleFields
		if value, ok := sentinelOption(table, "tokenCalculateStrategy", sr.strategy); !ok {
			o.Fail("tokenCalculateStrategy", "must be 0 (Direct) or 1 (WarmUp); MemoryAdaptive is not supported")
		} else if f.TokenCalculateStrategy = engine.TokenCalculateStrategy(value); f.TokenCalculateStrategy == engine.StrategyWarmUp {
			f.WarmUpPeriodSec, f.WarmUpColdFactor = sr.warmUpSec, sr.coldFactor
		} else {
			dropUnread(drop, "tokenCalculateStrategy 0 (Direct)", "warmUpPeriodSec", sr.warmUpSec, "warmUpColdFactor", sr.coldFactor)
		}
		if value, ok := sentinelOption(table, "controlBehavior", sr.behavior); !ok {
			o.Fail("controlBehavior", "must be 0 (Reject) or 1 (Throttling)")
		} else if f.ControlBehavior = engine.ControlBehavior(value); f.ControlBehavior == engine.BehaviorThrottling {
			f.MaxQueueingTimeMs = sr.queueing
		} else {
			dropUnread(drop, "controlBehavior 0 (Reject)", "maxQueueingTimeMs", sr.queueing)
		}
		if value, ok := sentinelOption(table, "relationStrategy", sr.relation); !ok {
			o.Fail("relationStrategy", "must be 0 (CurrentResource) or 1 (AssociatedResource)")
		} else if f.RelationStrategy = engine.RelationStrategy(value); f.RelationStrategy == engine.RelationAssociated {
			f.RefResource = sr.refResource
		} else if sr.refResource != "" {
			drop("refResource", "relationStrategy 0 (CurrentResource) does not read it, nor does sentinel-golang")
		}
		*spec = f
		r.Description = importedDescription(sr.id)
	})
}

// maxDurationInSec is the longest durationInSec: Sluice's longest
// statIntervalMs.
const maxDurationInSec = engine.MaxStatIntervalMs / 1000

// convertSentinelHotspotRules turns sentinel-golang hotspot rules, in its
// data sources' shape (ext/datasource.HotspotRule: enums are numbers,
// metricType 0 Concurrency and 1 QPS), into Sluice rules, named in file
// order, validated like an apply body. A rule's parameter is its paramKey
// or, without one, "argN" for its paramIndex N >= 0 (a negative index
// counts from the end of the call's arguments, which no named parameter
// can follow; and sentinel-golang refuses a paramIndex > 0 beside a
// paramKey); durationInSec becomes statIntervalMs; fields Sentinel
// ignores for the rule's behaviour (reject or throttling) are dropped, as
// for flow rules. A field only QPS reads is refused on a concurrency rule
// (metricType 0), naming it, since nothing of it would be imported: such
// a rule is a QPS one written wrong more often than a concurrency one. A
// missing metricType is sentinel-golang's 0, Concurrency, unless the rule
// sets a field only QPS reads: such a rule is refused, naming
// metricType, as its intent is unclear.
func convertSentinelHotspotRules(items []json.RawMessage, notes *[]PlanNote) ([]Rule, error) {
	return convertSentinel(items, notes, engine.HotspotKind, func(o *wire.Object, r *Rule, h *engine.HotspotRule, drop dropper) {
		var sr struct {
			id, paramKey                                   string
			metric, behavior, index, queueing, burst, secs int64
		}
		o.Str("id", &sr.id)
		sentinelEnum(o, "metricType", sentinelHotspotMetrics, &sr.metric)
		sentinelEnum(o, "controlBehavior", sentinelBehaviors, &sr.behavior)
		o.Str("paramKey", &sr.paramKey)
		o.Integer("paramIndex", &sr.index)
		o.Number("threshold", &h.Threshold)
		o.Integer("maxQueueingTimeMs", &sr.queueing)
		o.Integer("burstCount", &sr.burst)
		o.Integer("durationInSec", &sr.secs)
		o.Integer("paramsMaxCapacity", &h.ParamsMaxCapacity)
		h.SpecificItems = sentinelSpecificItems(o)

		switch {
		case sr.paramKey != "":
			h.ParamKey = sr.paramKey
			if sr.index > 0 {
				o.Fail("paramIndex", "must be 0 or left out beside a paramKey: sentinel-golang refuses a rule with both")
			}
		case sr.index >= 0:
			h.ParamKey = fmt.Sprintf("arg%d", sr.index)
		default:
			o.Fail("paramIndex", "counts from the end of the call's arguments, which no named parameter of Sluice can follow; set paramKey instead")
		}
		switch sr.metric {
		case 0:
			h.Metric = engine.MetricConcurrency
			for _, f := range []struct {
				name  string
				value int64
			}{{"durationInSec", sr.secs}, {"controlBehavior", sr.behavior}, {"burstCount", sr.burst}, {"maxQueueingTimeMs", sr.queueing}} {
				switch {
				case f.value == 0:
				case !o.Has("metricType"):
					o.Fail("metricType", fmt.Sprintf("is missing, which sentinel-golang reads as 0 (Concurrency), but %s is set, which only 1 (QPS) reads: set metricType to 0 or 1", f.name))
					return
				default:
					drop(f.name, fmt.Sprintf("%d is read by metricType 1 (QPS) only, and this rule's is 0 (Concurrency), as sentinel-golang reads it", f.value))
				}
			}
		case 1:
			h.Metric = engine.MetricQPS
			if sr.secs < 0 || sr.secs > maxDurationInSec {
				o.Fail("durationInSec", fmt.Sprintf("must be between 0 (unset: 1) and %d", maxDurationInSec))
			} else {
				h.StatIntervalMs = sr.secs * 1000
			}
			value, ok := sentinelOption(engine.HotspotRuleFields, "controlBehavior", sr.behavior)
			if !ok {
				o.Fail("controlBehavior", "must be 0 (Reject) or 1 (Throttling)")
				break
			}
			if h.ControlBehavior = engine.ControlBehavior(value); h.ControlBehavior == engine.BehaviorThrottling {
				h.MaxQueueingTimeMs = sr.queueing
			} else {
				h.BurstCount = sr.burst
			}
		default:
			o.Fail("metricType", "must be 0 (Concurrency) or 1 (QPS)")
		}
		r.Description = importedDescription(sr.id)
	})
}

// sentinelSpecificItems reads a hotspot rule's specificItems, a list of
// {valKind, valStr, threshold}, as value → threshold; each value is
// written as the text a check's params carry for it.
func sentinelSpecificItems(o *wire.Object) map[string]float64 {
	items := map[string]float64{}
	v, _ := o.Value("specificItems")
	if v == nil {
		return items
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		o.Fail("specificItems", "must be a list of {valKind, valStr, threshold}")
		return items
	}
	first := map[string]int{}
	for i, raw := range list {
		path := fmt.Sprintf("specificItems[%d]", i)
		item, err := wire.Parse(raw, o.Path+path+".", o.Errs)
		if err != nil {
			o.Fail(path, "must be an object {valKind, valStr, threshold}")
			continue
		}
		item.Label = o.Label
		var kind int64
		var text string
		var threshold float64
		sentinelEnum(item, "valKind", sentinelValueKinds, &kind)
		item.Str("valStr", &text)
		item.Number("threshold", &threshold)
		item.Rest(func(string) string { return "" })
		value, problem := sentinelValue(kind, text)
		switch {
		case problem != "" && kind >= 0 && kind <= 3:
			item.Fail("valStr", problem)
		case problem != "":
			item.Fail("valKind", problem)
		default:
			if j, dup := first[value]; dup {
				item.Fail("valStr", fmt.Sprintf("is the value %q of specificItems[%d] too", value, j))
				continue
			}
			first[value] = i
			items[value] = threshold
		}
	}
	return items
}

// sentinelValue is the text a check's params carry for the specific
// value text of sentinel-golang's kind, or why there is none.
func sentinelValue(kind int64, text string) (string, string) {
	switch kind {
	case 0: // KindInt
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return strconv.FormatInt(n, 10), ""
		}
		return "", "must be a whole number for valKind 0 (KindInt)"
	case 1: // KindString
		return text, ""
	case 2: // KindBool
		if b, err := strconv.ParseBool(text); err == nil {
			return strconv.FormatBool(b), ""
		}
		return "", "must be true or false for valKind 2 (KindBool)"
	case 3: // KindFloat64
		if f, err := strconv.ParseFloat(text, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return strconv.FormatFloat(f, 'f', -1, 64), ""
		}
		return "", "must be a number for valKind 3 (KindFloat64)"
	}
	return "", "must be 0 (KindInt), 1 (KindString), 2 (KindBool) or 3 (KindFloat64)"
}

// dropUnread notes each field of pairs (name, value) that is set though
// what (a behaviour the rule has) does not read it.
func dropUnread(drop dropper, what string, pairs ...any) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if v := pairs[i+1].(int64); v != 0 {
			drop(pairs[i].(string), fmt.Sprintf("%d is not read with %s, by sentinel-golang either", v, what))
		}
	}
}

// convertSentinelSystemRules turns sentinel-golang system rules (metricType
// 0 Load, 1 AvgRT, 2 Concurrency, 3 InboundQPS, 4 CpuUsage; strategy -1
// NoAdaptive, 1 BBR, 0 unset) into Sluice rules, named in file order,
// validated like an apply body. Sentinel's Load trigger is the machine's
// load average, Sluice's the load per CPU of the machine the rule will run
// on, which the file does not tell: such a rule is refused rather than
// guessed. A CpuUsage trigger is a ratio in both.
func convertSentinelSystemRules(items []json.RawMessage, notes *[]PlanNote) ([]Rule, error) {
	return convertSentinel(items, notes, engine.SystemKind, func(o *wire.Object, r *Rule, sys *engine.SystemRule, drop dropper) {
		var id string
		var metric, strategy int64
		o.Str("id", &id)
		sentinelEnum(o, "metricType", sentinelSystemMetrics, &metric)
		o.Number("triggerCount", &sys.TriggerCount)
		sentinelEnum(o, "strategy", sentinelSystemAdaptives, &strategy)
		value, ok := sentinelOption(engine.SystemRuleFields, "metricType", metric)
		switch {
		case !ok:
			o.Fail("metricType", "must be 0 (Load), 1 (AvgRT), 2 (Concurrency), 3 (InboundQPS) or 4 (CpuUsage)")
		case engine.SystemMetric(value) == engine.SystemLoad:
			o.Fail("metricType", "0 (Load) cannot be mapped: Sentinel's trigger is the machine's load average, Sluice's the load per CPU of the machine that runs the rule; write the rule in Sluice's terms (metricType load)")
		default:
			sys.MetricType = engine.SystemMetric(value)
		}
		switch strategy {
		case 0: // unset: Sluice's default for the metric
		case -1:
			sys.Strategy = engine.SystemNoAdaptive
		case 1:
			if m := sys.MetricType; m == engine.SystemLoad || m == engine.SystemCPUUsage {
				sys.Strategy = engine.SystemBBR
			} else if m != "" {
				drop("strategy", fmt.Sprintf("1 (BBR) applies to Load and CpuUsage only; sentinel-golang ignores it for %s, as Sluice does", m))
			}
		default:
			o.Fail("strategy", "must be -1 (NoAdaptive) or 1 (BBR), or 0 (unset)")
		}
		r.Description = importedDescription(id)
	})
}
