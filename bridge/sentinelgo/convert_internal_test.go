package sentinelgo

import (
	"reflect"
	"testing"

	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"

	"github.com/sluicehq/sluice/engine"
)

// TestConvertMapsEveryKindsFields checks docs/sentinel-bridge.md's table:
// each kind's fields land in sentinel-golang's, and the rules of no
// equivalent are refused with their name.
func TestConvertMapsEveryKindsFields(t *testing.T) {
	got := convert(engine.ResourceRules{
		Flow: []engine.FlowRule{
			{Name: "warm", Resource: "a", Metric: engine.MetricQPS, Threshold: 50, StatIntervalMs: 2000,
				TokenCalculateStrategy: engine.StrategyWarmUp, WarmUpPeriodSec: 10, WarmUpColdFactor: 3,
				RelationStrategy: engine.RelationAssociated, RefResource: "b"},
			{Name: "queue", Resource: "a", Metric: engine.MetricQPS, Threshold: 5, ControlBehavior: engine.BehaviorThrottling,
				MaxQueueingTimeMs: 300},
			{Name: "inflight", Resource: "a", Metric: engine.MetricConcurrency, Threshold: 8},
			{Name: "fleet", Resource: "a", Threshold: 5, Scope: engine.ScopeCluster},
			{Name: "temporary", Resource: "a", Threshold: 5, ExpiresAtMs: 1},
			{Name: "hourly", Resource: "a", Threshold: 500, StatIntervalMs: 3_600_000},
		},
		CircuitBreakers: []engine.CircuitBreakerRule{{Name: "slow", Resource: "a", Strategy: engine.StrategySlowRequestRatio,
			Threshold: 0.5, MaxAllowedRtMs: 200, RetryTimeoutMs: 3000, MinRequestAmount: 10, StatIntervalMs: 5000, ProbeNum: 2}},
		Hotspot: []engine.HotspotRule{
			{Name: "per-user", Resource: "a", ParamKey: "user", Metric: engine.MetricQPS, Threshold: 10, StatIntervalMs: 2000,
				BurstCount: 3, SpecificItems: map[string]float64{"vip": 100}},
			{Name: "fraction", Resource: "a", ParamKey: "user", Metric: engine.MetricQPS, Threshold: 1.5},
			{Name: "half-second", Resource: "a", ParamKey: "user", Metric: engine.MetricQPS, Threshold: 1, StatIntervalMs: 500},
		},
		System: []engine.SystemRule{{Name: "cpu", MetricType: engine.SystemCPUUsage, TriggerCount: 0.8}},
	})
	wantFlow := []*flow.Rule{
		{ID: "warm", Resource: "a", Threshold: 50, StatIntervalInMs: 2000, TokenCalculateStrategy: flow.WarmUp,
			WarmUpPeriodSec: 10, WarmUpColdFactor: 3, RelationStrategy: flow.AssociatedResource, RefResource: "b"},
		{ID: "queue", Resource: "a", Threshold: 5, StatIntervalInMs: 1000, ControlBehavior: flow.Throttling, MaxQueueingTimeMs: 300},
	}
	if !reflect.DeepEqual(got.flow, wantFlow) {
		t.Errorf("flow = %+v %+v, want %+v %+v", got.flow[0], got.flow[1], wantFlow[0], wantFlow[1])
	}
	if want := []*isolation.Rule{{ID: "inflight", Resource: "a", MetricType: isolation.Concurrency, Threshold: 8}}; !reflect.DeepEqual(got.isolation, want) {
		t.Errorf("isolation = %+v, want %+v", got.isolation, want)
	}
	if want := []*circuitbreaker.Rule{{Id: "slow", Resource: "a", Strategy: circuitbreaker.SlowRequestRatio, Threshold: 0.5,
		MaxAllowedRtMs: 200, RetryTimeoutMs: 3000, MinRequestAmount: 10, StatIntervalMs: 5000, ProbeNum: 2}}; !reflect.DeepEqual(got.breakers, want) {
		t.Errorf("circuit breakers = %+v, want %+v", got.breakers[0], want[0])
	}
	wantHot := []*hotspot.Rule{{ID: "per-user", Resource: "a", ParamKey: "user", MetricType: hotspot.QPS, Threshold: 10,
		DurationInSec: 2, BurstCount: 3, ParamsMaxCapacity: got.hotspot[0].ParamsMaxCapacity, SpecificItems: map[any]int64{"vip": 100}}}
	if !reflect.DeepEqual(got.hotspot, wantHot) {
		t.Errorf("hotspot = %+v, want %+v", got.hotspot[0], wantHot[0])
	}
	if want := []*system.Rule{{ID: "cpu", MetricType: system.CpuUsage, TriggerCount: 0.8, Strategy: system.BBR}}; !reflect.DeepEqual(got.system, want) {
		t.Errorf("system = %+v, want %+v", got.system[0], want[0])
	}
	var refused []string
	for _, u := range got.unsupported {
		refused = append(refused, u.Name)
	}
	if want := []string{"fleet", "temporary", "hourly", "fraction", "half-second"}; !reflect.DeepEqual(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
}
