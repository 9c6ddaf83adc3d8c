package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// SentinelFlowRule is sentinel-golang's flow.rule as its JSON data sources
// write it; enums are numbers.
type SentinelFlowRule struct {
	ID       string `json:"id,omitempty"`
	Resource string `json:"resource" example:"GET:/api/orders"`
	// TokenCalculateStrategy: 0 Direct, 1 WarmUp (2 MemoryAdaptive is not supported).
	TokenCalculateStrategy int32 `json:"tokenCalculateStrategy" enums:"0,1" validate:"optional"`
	// ControlBehavior: 0 Reject, 1 Throttling.
	ControlBehavior int32   `json:"controlBehavior" enums:"0,1" validate:"optional"`
	Threshold       float64 `json:"threshold" example:"100" validate:"optional"`
	// RelationStrategy: 0 CurrentResource, 1 AssociatedResource.
	RelationStrategy      int32  `json:"relationStrategy" enums:"0,1" validate:"optional"`
	RefResource           string `json:"refResource" validate:"optional"`
	MaxQueueingTimeMs     uint32 `json:"maxQueueingTimeMs" validate:"optional"`
	WarmUpPeriodSec       uint32 `json:"warmUpPeriodSec" validate:"optional"`
	WarmUpColdFactor      uint32 `json:"warmUpColdFactor" validate:"optional"`
	StatIntervalInMs      uint32 `json:"statIntervalInMs" validate:"optional"`
	LowMemUsageThreshold  int64  `json:"lowMemUsageThreshold" validate:"optional"`
	HighMemUsageThreshold int64  `json:"highMemUsageThreshold" validate:"optional"`
	MemLowWaterMarkBytes  int64  `json:"memLowWaterMarkBytes" validate:"optional"`
	MemHighWaterMarkBytes int64  `json:"memHighWaterMarkBytes" validate:"optional"`
	// LimitApp is Sentinel's (Java) field, which sentinel-golang lacks:
	// whose calls the rule counts; empty is every caller's.
	LimitApp string `json:"limitApp" example:"default" validate:"optional"`
} //@name server.SentinelFlowRule

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
		o.Integer("strategy", &strategy)
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
		o.Integer("tokenCalculateStrategy", &sr.strategy)
		o.Integer("controlBehavior", &sr.behavior)
		o.Number("threshold", &sr.threshold)
		o.Integer("relationStrategy", &sr.relation)
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
		o.Integer("metricType", &sr.metric)
		o.Integer("controlBehavior", &sr.behavior)
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
		item.Integer("valKind", &kind)
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
		o.Integer("metricType", &metric)
		o.Number("triggerCount", &sys.TriggerCount)
		o.Integer("strategy", &strategy)
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
