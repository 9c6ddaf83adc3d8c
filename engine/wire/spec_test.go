package wire

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestSpecRoundTrip: every kind's rule, with each field of its table
// set, reads back from its stored spec as it was written, and the spec
// names its fields as the table does.
func TestSpecRoundTrip(t *testing.T) {
	rules := []any{
		&engine.FlowRule{Metric: engine.MetricQPS, Threshold: 2.5, StatIntervalMs: 2000, ControlBehavior: engine.BehaviorThrottling,
			MaxQueueingTimeMs: 500, TokenCalculateStrategy: engine.StrategyDirect, RelationStrategy: engine.RelationAssociated,
			RefResource: "stock", LimitApp: "default", Scope: engine.ScopeLocal, ExpiresAtMs: 1796083200000},
		&engine.CircuitBreakerRule{Strategy: engine.StrategySlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 200,
			RetryTimeoutMs: 5000, MinRequestAmount: 5, StatIntervalMs: 1000, ProbeNum: 2},
		&engine.HotspotRule{ParamKey: "user", Metric: engine.MetricQPS, Threshold: 3, BurstCount: 4,
			SpecificItems: map[string]float64{"vip": 100}, ParamsMaxCapacity: 10},
		&engine.AuthorityRule{Strategy: engine.AuthorityAllow, Origins: []string{"a", "b"}},
		&engine.SystemRule{MetricType: engine.SystemCPUUsage, TriggerCount: 0.8, Strategy: engine.SystemBBR},
	}
	for i, rule := range rules {
		k := engine.Kinds[i]
		data, err := EncodeSpec(k, rule)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		again := k.New()
		if err := DecodeSpec(k, data, again); err != nil {
			t.Fatalf("%s: %s: %v", k.Name, data, err)
		}
		if !reflect.DeepEqual(again, rule) {
			t.Errorf("%s: %s read back as %+v, want %+v", k.Name, data, again, rule)
		}
	}
	data, _ := EncodeSpec(engine.FlowKind, rules[0])
	const want = `{"metric":"qps","threshold":2.5,"statIntervalMs":2000,"controlBehavior":"throttling","maxQueueingTimeMs":500,` +
		`"tokenCalculateStrategy":"direct","relationStrategy":"associated","refResource":"stock","limitApp":"default","scope":"local",` +
		`"expiresAtMs":1796083200000}`
	if string(data) != want {
		t.Errorf("spec %s, want %s", data, want)
	}
}

// TestDecodeSpecReadsOlderSpecs: a spec stored before this package wrote
// them (the engine rule's own JSON, with its empty name, resource and
// mode) still reads, and a value of the wrong type is an error.
func TestDecodeSpecReadsOlderSpecs(t *testing.T) {
	var rule engine.FlowRule
	err := DecodeSpec(engine.FlowKind, []byte(`{"resource":"","threshold":5,"metric":"qps","maxQueueingTimeMs":0,"expiresAtMs":7}`), &rule)
	if err != nil || rule != (engine.FlowRule{Threshold: 5, Metric: engine.MetricQPS, ExpiresAtMs: 7}) {
		t.Errorf("got %+v, %v", rule, err)
	}
	if err := DecodeSpec(engine.FlowKind, []byte(`{"threshold":"five"}`), &rule); err == nil {
		t.Error("a string threshold read without an error")
	}
}
