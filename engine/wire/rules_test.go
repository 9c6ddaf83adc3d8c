package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

func rawRules(items ...string) []json.RawMessage {
	raw := make([]json.RawMessage, len(items))
	for i, item := range items {
		raw[i] = json.RawMessage(item)
	}
	return raw
}

func TestDecodeRulesReadsEveryKind(t *testing.T) {
	got, err := DecodeRules(rawRules(
		// As GET /rules shows a rule: the server's own fields are ignored.
		`{"id": 7, "name": "orders-qps", "kind": "flow", "app": "shop", "resource": "orders", "enabled": true,
		  "mode": "shadow", "description": "cap", "threshold": 10, "statIntervalMs": 2000, "metric": "qps",
		  "controlBehavior": "reject", "expiresAt": "2026-12-01T00:00:00Z", "version": 3,
		  "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-02T00:00:00Z"}`,
		`{"name": "pay-errors", "kind": "circuitBreaker", "resource": "pay", "strategy": "errorCount",
		  "threshold": 3, "retryTimeoutMs": 5000, "expiresAt": null}`,
		`{"name": "orders-per-user", "kind": "hotspot", "resource": "orders", "paramKey": "user",
		  "threshold": 2, "specificItems": {"vip": 20}}`,
		`{"name": "pay-origins", "kind": "authority", "resource": "pay", "strategy": "deny", "origins": ["bot"]}`,
		`{"name": "off", "kind": "flow", "resource": "reports", "enabled": false, "threshold": 1}`,
		// A system rule has no resource: as the API shows it, or null.
		`{"id": 9, "name": "cpu", "kind": "system", "enabled": true, "mode": "enforce", "metricType": "cpuUsage",
		  "triggerCount": 0.8, "expiresAt": "2026-12-01T00:00:00Z"}`,
		`{"name": "rt", "kind": "system", "resource": null, "metricType": "avgRt", "triggerCount": 200, "strategy": "noAdaptive"}`,
	))
	if err != nil {
		t.Fatal(err)
	}
	want := engine.ResourceRules{
		Resources: []string{"orders", "pay"},
		Flow: []engine.FlowRule{{Name: "orders-qps", Resource: "orders", Mode: engine.ModeShadow, Threshold: 10,
			StatIntervalMs: 2000, Metric: engine.MetricQPS, ControlBehavior: engine.BehaviorReject, ExpiresAtMs: 1796083200000}},
		CircuitBreakers: []engine.CircuitBreakerRule{{Name: "pay-errors", Resource: "pay", Strategy: engine.StrategyErrorCount,
			Threshold: 3, RetryTimeoutMs: 5000}},
		Hotspot: []engine.HotspotRule{{Name: "orders-per-user", Resource: "orders", ParamKey: "user", Threshold: 2,
			SpecificItems: map[string]float64{"vip": 20}}},
		Authority: []engine.AuthorityRule{{Name: "pay-origins", Resource: "pay", Strategy: engine.AuthorityDeny, Origins: []string{"bot"}}},
		System: []engine.SystemRule{
			{Name: "cpu", Mode: engine.ModeEnforce, MetricType: engine.SystemCPUUsage, TriggerCount: 0.8, ExpiresAtMs: 1796083200000},
			{Name: "rt", MetricType: engine.SystemAvgRt, TriggerCount: 200, Strategy: engine.SystemNoAdaptive},
		},
		ReplaceSystem: true,
	}
	// The rules load with their defaults, as the server's engine holds
	// them.
	for i := range want.Flow {
		want.Flow[i] = want.Flow[i].WithDefaults()
	}
	for i := range want.CircuitBreakers {
		want.CircuitBreakers[i] = want.CircuitBreakers[i].WithDefaults()
	}
	for i := range want.Hotspot {
		want.Hotspot[i] = want.Hotspot[i].WithDefaults()
	}
	for i := range want.Authority {
		want.Authority[i] = want.Authority[i].WithDefaults()
	}
	for i := range want.System {
		want.System[i] = want.System[i].WithDefaults()
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	e := engine.New(engine.Options{Clock: engine.NewManualClock(0)})
	defer e.Close()
	if err := e.LoadResourceRules(got); err != nil {
		t.Fatalf("the decoded rules do not load: %v", err)
	}
	if names := len(e.SystemRules()); names != 2 {
		t.Fatalf("%d system rules loaded, want 2", names)
	}
	empty, err := DecodeRules(nil)
	if err != nil || !empty.ReplaceSystem {
		t.Fatalf("an empty set: %+v, %v; want one that replaces the system rules", empty, err)
	}
	if err := e.LoadResourceRules(empty); err != nil || len(e.SystemRules()) != 0 {
		t.Fatalf("an empty set left %d system rules (%v), want none", len(e.SystemRules()), err)
	}
}

func TestDecodeRulesRefusesBadRules(t *testing.T) {
	tests := []struct {
		name string
		rule string
		want []engine.FieldError
	}{
		{"not an object", `[1]`, []engine.FieldError{{Field: "rules[0]", Message: "must be a JSON object"}}},
		{"unknown kind", `{"kind": "isolation", "resource": "x"}`,
			[]engine.FieldError{{Field: "rules[0].kind", Message: "must be one of flow, circuitBreaker, hotspot, authority, system, adaptiveConcurrency"}}},
		{"a system rule on a resource", `{"kind": "system", "resource": "x", "metricType": "load", "triggerCount": 2}`,
			[]engine.FieldError{{Field: "rules[0].resource", Message: "must be absent: a system rule guards every inbound call of its process"}}},
		{"a system rule's bad fields", `{"kind": "system", "metricType": "cpuUsage", "triggerCount": 1.5, "strategy": "fast"}`,
			[]engine.FieldError{{Field: "rules[0].triggerCount", Message: "must be at most 1 for metricType cpuUsage: a ratio of the CPU quota"},
				{Field: "rules[0].strategy", Message: "must be one of noAdaptive, bbr"}}},
		{"another kind's field", `{"kind": "flow", "resource": "x", "threshold": 1, "retryTimeoutMs": 5}`,
			[]engine.FieldError{{Field: "rules[0].retryTimeoutMs", Message: "does not apply to kind flow (it is a field of circuitBreaker)"}}},
		{"wrong type", `{"kind": "flow", "resource": "x", "threshold": "ten"}`,
			[]engine.FieldError{{Field: "rules[0].threshold", Message: "must be a number"}}},
		{"wrong envelope type", `{"kind": "flow", "resource": "x", "threshold": 1, "enabled": "yes"}`,
			[]engine.FieldError{{Field: "rules[0].enabled", Message: "must be true or false"}}},
		{"out of range", `{"kind": "flow", "resource": "x", "threshold": -1}`,
			[]engine.FieldError{{Field: "rules[0].threshold", Message: "must be >= 0"}}},
		{"bad expiresAt", `{"kind": "authority", "resource": "x", "strategy": "deny", "origins": ["a"], "expiresAt": "tomorrow"}`,
			[]engine.FieldError{{Field: "rules[0].expiresAt", Message: "must be an RFC 3339 time, such as 2026-12-01T00:00:00Z"}}},
		{"the engine's name of expiresAt", `{"kind": "flow", "resource": "x", "threshold": 1, "expiresAtMs": 5}`,
			[]engine.FieldError{{Field: "rules[0].expiresAtMs", Message: "is not a known field"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := DecodeRules(rawRules(tt.rule))
			var invalid *engine.ValidationError
			if !errors.As(err, &invalid) {
				t.Fatalf("got %+v, %v; want a *engine.ValidationError", set, err)
			}
			if !reflect.DeepEqual(invalid.Fields, tt.want) {
				t.Fatalf("got %v, want %v", invalid.Fields, tt.want)
			}
		})
	}
}

func TestDecodeRulesRefusesTheWholeSet(t *testing.T) {
	set, err := DecodeRules(rawRules(
		`{"kind": "flow", "resource": "good", "threshold": 1}`,
		`{"kind": "flow", "resource": "bad", "threshold": -1}`,
	))
	if err == nil || !reflect.DeepEqual(set, engine.ResourceRules{}) {
		t.Fatalf("got %+v, %v; want no rule and an error", set, err)
	}
}
