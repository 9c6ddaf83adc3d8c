package sentinelgo

import (
	"math"

	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"

	"github.com/sluicehq/sluice/engine"
)

// Unsupported is a Sluice rule the Bridge did not load, and why.
type Unsupported struct {
	// Name is the rule's name in Sluice, Kind its kind.
	Name string
	Kind string
	// Reason says what sentinel-golang cannot express.
	Reason string
}

// rules are a rule set as sentinel-golang loads it, and what it cannot.
type rules struct {
	flow        []*flow.Rule
	isolation   []*isolation.Rule
	breakers    []*circuitbreaker.Rule
	hotspot     []*hotspot.Rule
	system      []*system.Rule
	unsupported []Unsupported
}

// reasons a rule is not loaded, shared by kinds.
const (
	reasonShadow  = "mode shadow: sentinel-golang has no rule that counts without blocking"
	reasonExpires = "expiresAt: sentinel-golang's rules do not expire, and the rule would go on blocking past it"
)

// convert maps set, as wire.DecodeRules reads a snapshot, to
// sentinel-golang's rules. A rule is loaded whole or not at all: one with
// a field of no equivalent is listed in unsupported instead.
func convert(set engine.ResourceRules) rules {
	var out rules
	refuse := func(name, kind, reason string) {
		out.unsupported = append(out.unsupported, Unsupported{Name: name, Kind: kind, Reason: reason})
	}
	common := func(name, kind string, mode engine.Mode, expiresAtMs int64) bool {
		switch {
		case mode == engine.ModeShadow:
			refuse(name, kind, reasonShadow)
		case expiresAtMs != 0:
			refuse(name, kind, reasonExpires)
		default:
			return true
		}
		return false
	}
	for _, r := range set.Flow {
		r = r.WithDefaults()
		if !common(r.Name, engine.KindFlow, r.Mode, r.ExpiresAtMs) {
			continue
		}
		if reason := flowProblem(r); reason != "" {
			refuse(r.Name, engine.KindFlow, reason)
			continue
		}
		if r.Metric == engine.MetricConcurrency {
			out.isolation = append(out.isolation, &isolation.Rule{ID: r.Name, Resource: r.Resource,
				MetricType: isolation.Concurrency, Threshold: uint32(r.Threshold)})
			continue
		}
		out.flow = append(out.flow, flowRule(r))
	}
	for _, r := range set.CircuitBreakers {
		r = r.WithDefaults()
		if !common(r.Name, engine.KindCircuitBreaker, r.Mode, r.ExpiresAtMs) {
			continue
		}
		out.breakers = append(out.breakers, &circuitbreaker.Rule{Id: r.Name, Resource: r.Resource,
			Strategy: breakerStrategies[r.Strategy], RetryTimeoutMs: uint32(r.RetryTimeoutMs),
			MinRequestAmount: uint64(r.MinRequestAmount), StatIntervalMs: uint32(r.StatIntervalMs),
			MaxAllowedRtMs: uint64(r.MaxAllowedRtMs), Threshold: r.Threshold, ProbeNum: uint64(r.ProbeNum)})
	}
	for _, r := range set.Hotspot {
		r = r.WithDefaults()
		if !common(r.Name, engine.KindHotspot, r.Mode, r.ExpiresAtMs) {
			continue
		}
		if reason := hotspotProblem(r); reason != "" {
			refuse(r.Name, engine.KindHotspot, reason)
			continue
		}
		out.hotspot = append(out.hotspot, hotspotRule(r))
	}
	for _, r := range set.Authority {
		refuse(r.Name, engine.KindAuthority, "sentinel-golang has no authority rules")
	}
	for _, r := range set.AdaptiveConcurrency {
		refuse(r.Name, engine.KindAdaptiveConcurrency, "sentinel-golang has no adaptive concurrency rules")
	}
	for _, r := range set.System {
		r = r.WithDefaults()
		if !common(r.Name, engine.KindSystem, r.Mode, r.ExpiresAtMs) {
			continue
		}
		strategy := system.NoAdaptive
		if r.Strategy == engine.SystemBBR {
			strategy = system.BBR
		}
		out.system = append(out.system, &system.Rule{ID: r.Name, MetricType: systemMetrics[r.MetricType],
			TriggerCount: r.TriggerCount, Strategy: strategy})
	}
	return out
}

var breakerStrategies = map[engine.BreakerStrategy]circuitbreaker.Strategy{
	engine.StrategySlowRequestRatio: circuitbreaker.SlowRequestRatio,
	engine.StrategyErrorRatio:       circuitbreaker.ErrorRatio,
	engine.StrategyErrorCount:       circuitbreaker.ErrorCount,
}

var systemMetrics = map[engine.SystemMetric]system.MetricType{
	engine.SystemLoad:        system.Load,
	engine.SystemAvgRt:       system.AvgRT,
	engine.SystemConcurrency: system.Concurrency,
	engine.SystemInboundQPS:  system.InboundQPS,
	engine.SystemCPUUsage:    system.CpuUsage,
}

// maxFlowWindowMs is the longest flow window sentinel-golang advises
// (its flow rule manager logs one beyond it).
const maxFlowWindowMs = 10 * 60 * 1000

// flowProblem says why sentinel-golang cannot run flow rule r, or "".
func flowProblem(r engine.FlowRule) string {
	switch {
	case r.Scope == engine.ScopeCluster:
		return "scope cluster: sentinel-golang's flow rules count in their own process only"
	case r.LimitApp != engine.LimitAppDefault:
		return "limitApp " + r.LimitApp + ": sentinel-golang's flow rules limit every caller together"
	case r.Metric == engine.MetricConcurrency && r.RelationStrategy != engine.RelationCurrent:
		return "relationStrategy associated with metric concurrency: sentinel-golang's isolation rules have no relation"
	case r.Metric == engine.MetricConcurrency && (r.Threshold > math.MaxUint32 || math.IsInf(r.Threshold, 0)):
		return "threshold: sentinel-golang's isolation rules take at most 4294967295 calls in flight"
	case r.Metric == engine.MetricQPS && r.StatIntervalMs > maxFlowWindowMs:
		return "statIntervalMs over 10 minutes: sentinel-golang counts so long a window in one bucket, and warns against it"
	case r.MaxQueueingTimeMs > math.MaxUint32 || r.WarmUpPeriodSec > math.MaxUint32 || r.WarmUpColdFactor > math.MaxUint32:
		return "maxQueueingTimeMs, warmUpPeriodSec or warmUpColdFactor: past sentinel-golang's 32-bit fields"
	}
	return ""
}

// flowRule is qps flow rule r in sentinel-golang.
func flowRule(r engine.FlowRule) *flow.Rule {
	out := &flow.Rule{ID: r.Name, Resource: r.Resource, Threshold: r.Threshold, RefResource: r.RefResource,
		MaxQueueingTimeMs: uint32(r.MaxQueueingTimeMs), WarmUpPeriodSec: uint32(r.WarmUpPeriodSec),
		WarmUpColdFactor: uint32(r.WarmUpColdFactor), StatIntervalInMs: uint32(r.StatIntervalMs)}
	if r.TokenCalculateStrategy == engine.StrategyWarmUp {
		out.TokenCalculateStrategy = flow.WarmUp
	}
	if r.ControlBehavior == engine.BehaviorThrottling {
		out.ControlBehavior = flow.Throttling
	}
	if r.RelationStrategy == engine.RelationAssociated {
		out.RelationStrategy = flow.AssociatedResource
	}
	return out
}

// hotspotProblem says why sentinel-golang cannot run hotspot rule r, or "".
func hotspotProblem(r engine.HotspotRule) string {
	whole := func(v float64) bool { return v == math.Trunc(v) && v >= 0 && v <= math.MaxInt64 }
	if !whole(r.Threshold) {
		return "threshold: sentinel-golang's hotspot thresholds are whole numbers"
	}
	for _, t := range r.SpecificItems {
		if !whole(t) {
			return "specificItems: sentinel-golang's hotspot thresholds are whole numbers"
		}
	}
	if r.Metric == engine.MetricQPS && r.StatIntervalMs%1000 != 0 {
		return "statIntervalMs: sentinel-golang's hotspot rules count over whole seconds (durationInSec)"
	}
	return ""
}

// hotspotRule is hotspot rule r in sentinel-golang, reading its parameter
// from the entry's attachment ParamKey (api.WithAttachments).
func hotspotRule(r engine.HotspotRule) *hotspot.Rule {
	out := &hotspot.Rule{ID: r.Name, Resource: r.Resource, ParamKey: r.ParamKey, Threshold: int64(r.Threshold),
		ParamsMaxCapacity: r.ParamsMaxCapacity}
	// The behaviours are qps's: a concurrency rule keeps them unset, as
	// sentinel-golang reads them.
	if r.Metric == engine.MetricQPS {
		out.MetricType = hotspot.QPS
		out.DurationInSec = r.StatIntervalMs / 1000
		out.BurstCount = r.BurstCount
		if r.ControlBehavior == engine.BehaviorThrottling {
			out.ControlBehavior = hotspot.Throttling
			out.MaxQueueingTimeMs = r.MaxQueueingTimeMs
		}
	}
	if len(r.SpecificItems) > 0 {
		out.SpecificItems = make(map[any]int64, len(r.SpecificItems))
		for value, t := range r.SpecificItems {
			out.SpecificItems[value] = int64(t)
		}
	}
	return out
}
