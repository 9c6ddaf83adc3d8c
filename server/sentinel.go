package server

import (
	"encoding/json"

	"github.com/sluicehq/sluice/engine"
)

// SentinelFlowRule is sentinel-golang's flow.Rule as its JSON data sources
// write it; enums are numbers.
type SentinelFlowRule struct {
	ID       string `json:"id,omitempty"`
	Resource string `json:"resource" example:"GET:/api/orders"`
	// TokenCalculateStrategy: 0 Direct, 1 WarmUp (2 MemoryAdaptive is not supported).
	TokenCalculateStrategy int32 `json:"tokenCalculateStrategy" enums:"0,1"`
	// ControlBehavior: 0 Reject, 1 Throttling.
	ControlBehavior int32   `json:"controlBehavior" enums:"0,1"`
	Threshold       float64 `json:"threshold" example:"100"`
	// RelationStrategy: 0 CurrentResource, 1 AssociatedResource.
	RelationStrategy      int32  `json:"relationStrategy" enums:"0,1"`
	RefResource           string `json:"refResource"`
	MaxQueueingTimeMs     uint32 `json:"maxQueueingTimeMs"`
	WarmUpPeriodSec       uint32 `json:"warmUpPeriodSec"`
	WarmUpColdFactor      uint32 `json:"warmUpColdFactor"`
	StatIntervalInMs      uint32 `json:"statIntervalInMs"`
	LowMemUsageThreshold  int64  `json:"lowMemUsageThreshold"`
	HighMemUsageThreshold int64  `json:"highMemUsageThreshold"`
	MemLowWaterMarkBytes  int64  `json:"memLowWaterMarkBytes"`
	MemHighWaterMarkBytes int64  `json:"memHighWaterMarkBytes"`
}

// sentinelStrategies maps sentinel-golang's circuit breaker strategies.
var sentinelStrategies = []engine.BreakerStrategy{
	engine.StrategySlowRequestRatio, engine.StrategyErrorRatio, engine.StrategyErrorCount,
}

// convertSentinelBreakerRules turns sentinel-golang circuit breaker rules
// into Sluice rules, named in file order, validated like an apply body.
// The bucket count is Sluice's own choice and is dropped.
func convertSentinelBreakerRules(items []json.RawMessage) ([]rule, error) {
	return convertSentinel(items, kindBreaker, func(o *object, r *rule) {
		var id string
		var strategy, ignored int64
		b := &r.Breaker
		o.str("id", &id)
		o.integer("strategy", &strategy)
		o.integer("retryTimeoutMs", &b.RetryTimeoutMs)
		o.integer("minRequestAmount", &b.MinRequestAmount)
		o.integer("statIntervalMs", &b.StatIntervalMs)
		o.integer("statSlidingWindowBucketCount", &ignored)
		o.integer("maxAllowedRtMs", &b.MaxAllowedRtMs)
		o.number("threshold", &b.Threshold)
		o.integer("probeNum", &b.ProbeNum)
		if strategy < 0 || strategy >= int64(len(sentinelStrategies)) {
			o.fail("strategy", "must be 0 (SlowRequestRatio), 1 (ErrorRatio) or 2 (ErrorCount)")
		} else {
			b.Strategy = sentinelStrategies[strategy]
		}
		if b.Strategy != engine.StrategySlowRequestRatio {
			b.MaxAllowedRtMs = 0 // Sentinel ignores it for the other strategies
		}
		r.Description = importedDescription(id)
	})
}

// convertSentinel converts sentinel-golang rules of kind with fill, which
// reads one rule object into a rule; names are made up in file order and
// every rule is validated like an apply body.
func convertSentinel(items []json.RawMessage, kind string, fill func(o *object, r *rule)) ([]rule, error) {
	named := map[string]bool{}
	return decodeRuleList(items, "the Sentinel rules cannot be imported; nothing was applied; see details",
		func(_ int, o *object, _ *[]FieldError) rule {
			r := rule{Kind: kind, Enabled: true, Mode: string(engine.ModeEnforce)}
			o.str("resource", &r.Resource)
			r.Name, _ = uniqueName(kind, r.Resource, func(name string) (bool, error) { return named[name], nil })
			named[r.Name] = true
			o.label = r.Name
			fill(o, &r)
			o.rest(func(string) string { return "" })
			return r
		})
}

func importedDescription(id string) string {
	if id == "" {
		return "Imported from sentinel-golang"
	}
	return "Imported from sentinel-golang rule " + id
}

// convertSentinelFlowRules turns sentinel-golang flow rules into Sluice
// rules, named in file order, validated like an apply body.
func convertSentinelFlowRules(items []json.RawMessage) ([]rule, error) {
	return convertSentinel(items, kindFlow, func(o *object, r *rule) {
		var sr struct {
			id, refResource, adaptiveConfig                    string
			strategy, behavior, relation                       int64
			threshold                                          float64
			queueing, warmUpSec, coldFactor, interval, ignored int64
		}
		o.str("id", &sr.id)
		o.integer("tokenCalculateStrategy", &sr.strategy)
		o.integer("controlBehavior", &sr.behavior)
		o.number("threshold", &sr.threshold)
		o.integer("relationStrategy", &sr.relation)
		o.str("refResource", &sr.refResource)
		o.integer("maxQueueingTimeMs", &sr.queueing)
		o.integer("warmUpPeriodSec", &sr.warmUpSec)
		o.integer("warmUpColdFactor", &sr.coldFactor)
		o.integer("statIntervalInMs", &sr.interval)
		// Used by MemoryAdaptive only, which is refused below; newer
		// sentinel-golang versions name an adaptive configuration instead.
		o.str("adaptiveConfigName", &sr.adaptiveConfig)
		for _, name := range []string{"lowMemUsageThreshold", "highMemUsageThreshold", "memLowWaterMarkBytes", "memHighWaterMarkBytes"} {
			o.integer(name, &sr.ignored)
		}

		f := engine.FlowRule{Threshold: sr.threshold, StatIntervalMs: sr.interval}
		switch sr.strategy {
		case 0:
		case 1:
			f.TokenCalculateStrategy = engine.StrategyWarmUp
			f.WarmUpPeriodSec, f.WarmUpColdFactor = sr.warmUpSec, sr.coldFactor
		default:
			o.fail("tokenCalculateStrategy", "must be 0 (Direct) or 1 (WarmUp); MemoryAdaptive is not supported")
		}
		switch sr.behavior {
		case 0:
		case 1:
			f.ControlBehavior = engine.BehaviorThrottling
			f.MaxQueueingTimeMs = sr.queueing
		default:
			o.fail("controlBehavior", "must be 0 (Reject) or 1 (Throttling)")
		}
		switch sr.relation {
		case 0:
		case 1:
			f.RelationStrategy = engine.RelationAssociated
			f.RefResource = sr.refResource
		default:
			o.fail("relationStrategy", "must be 0 (CurrentResource) or 1 (AssociatedResource)")
		}
		r.Flow = f
		r.Description = importedDescription(sr.id)
	})
}
