package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestFlowRuleValidate(t *testing.T) {
	valid := FlowRule{Name: "orders-qps", Resource: "orders", Threshold: 10}
	tests := []struct {
		name   string
		edit   func(*FlowRule)
		fields []string // the fields reported, in order; none for a valid rule
	}{
		{"minimal rule", func(r *FlowRule) {}, nil},
		{"no name", func(r *FlowRule) { r.Name = "" }, nil},
		{"name upper case", func(r *FlowRule) { r.Name = "Orders" }, []string{"name"}},
		{"name ends with dash", func(r *FlowRule) { r.Name = "orders-" }, []string{"name"}},
		{"name of 128", func(r *FlowRule) { r.Name = strings.Repeat("a", 128) }, nil},
		{"name of 129", func(r *FlowRule) { r.Name = strings.Repeat("a", 129) }, []string{"name"}},
		{"no resource", func(r *FlowRule) { r.Resource = "" }, []string{"resource"}},
		{"resource of 256 runes", func(r *FlowRule) { r.Resource = strings.Repeat("é", 256) }, nil},
		{"resource of 257 runes", func(r *FlowRule) { r.Resource = strings.Repeat("é", 257) }, []string{"resource"}},
		{"resource with a tab", func(r *FlowRule) { r.Resource = "a\tb" }, []string{"resource"}},
		{"resource with C1 control", func(r *FlowRule) { r.Resource = "a\u0085b" }, []string{"resource"}},
		{"resource not UTF-8", func(r *FlowRule) { r.Resource = "a\xffb" }, []string{"resource"}},
		{"resource with spaces and slashes", func(r *FlowRule) { r.Resource = "GET /api/orders/{id}" }, nil},
		{"shadow mode", func(r *FlowRule) { r.Mode = ModeShadow }, nil},
		{"unknown mode", func(r *FlowRule) { r.Mode = "dry" }, []string{"mode"}},
		{"unknown metric", func(r *FlowRule) { r.Metric = "rps" }, []string{"metric"}},
		{"negative threshold", func(r *FlowRule) { r.Threshold = -1 }, []string{"threshold"}},
		{"NaN threshold", func(r *FlowRule) { r.Threshold = math.NaN() }, []string{"threshold"}},
		{"infinite threshold", func(r *FlowRule) { r.Threshold = math.Inf(1) }, []string{"threshold"}},
		{"huge threshold", func(r *FlowRule) { r.Threshold = 2e12 }, []string{"threshold"}},
		{"zero threshold", func(r *FlowRule) { r.Threshold = 0 }, nil},
		{"fractional qps threshold", func(r *FlowRule) { r.Threshold = 0.5 }, nil},
		{"fractional concurrency", func(r *FlowRule) { r.Metric = MetricConcurrency; r.Threshold = 1.5 }, []string{"threshold"}},
		{"stat interval 99", func(r *FlowRule) { r.StatIntervalMs = 99 }, []string{"statIntervalMs"}},
		{"stat interval 100", func(r *FlowRule) { r.StatIntervalMs = 100 }, nil},
		{"stat interval 600000", func(r *FlowRule) { r.StatIntervalMs = 600000 }, nil},
		{"stat interval over a day", func(r *FlowRule) { r.StatIntervalMs = MaxStatIntervalMs + 1 }, []string{"statIntervalMs"}},
		{"stat interval negative", func(r *FlowRule) { r.StatIntervalMs = -1000 }, []string{"statIntervalMs"}},
		{"stat interval on concurrency", func(r *FlowRule) { r.Metric = MetricConcurrency; r.StatIntervalMs = 1000 }, []string{"statIntervalMs"}},
		{"unknown behaviour", func(r *FlowRule) { r.ControlBehavior = "queue" }, []string{"controlBehavior"}},
		{"throttling on concurrency", func(r *FlowRule) { r.Metric = MetricConcurrency; r.ControlBehavior = BehaviorThrottling }, []string{"controlBehavior"}},
		{"queueing on reject", func(r *FlowRule) { r.MaxQueueingTimeMs = 10 }, []string{"maxQueueingTimeMs"}},
		{"queueing 60000", func(r *FlowRule) { r.ControlBehavior = BehaviorThrottling; r.MaxQueueingTimeMs = 60000 }, nil},
		{"queueing 60001", func(r *FlowRule) { r.ControlBehavior = BehaviorThrottling; r.MaxQueueingTimeMs = 60001 }, []string{"maxQueueingTimeMs"}},
		{"queueing negative", func(r *FlowRule) { r.ControlBehavior = BehaviorThrottling; r.MaxQueueingTimeMs = -1 }, []string{"maxQueueingTimeMs"}},
		{"unknown strategy", func(r *FlowRule) { r.TokenCalculateStrategy = "ramp" }, []string{"tokenCalculateStrategy"}},
		{"warm-up without period", func(r *FlowRule) { r.TokenCalculateStrategy = StrategyWarmUp }, []string{"warmUpPeriodSec"}},
		{"warm-up", func(r *FlowRule) { r.TokenCalculateStrategy = StrategyWarmUp; r.WarmUpPeriodSec = 10 }, nil},
		{"warm-up on concurrency", func(r *FlowRule) {
			r.Metric = MetricConcurrency
			r.TokenCalculateStrategy = StrategyWarmUp
			r.WarmUpPeriodSec = 10
		}, []string{"tokenCalculateStrategy"}},
		{"warm-up period with direct", func(r *FlowRule) { r.WarmUpPeriodSec = 10 }, []string{"warmUpPeriodSec"}},
		{"cold factor with direct", func(r *FlowRule) { r.WarmUpColdFactor = 3 }, []string{"warmUpColdFactor"}},
		{"cold factor 1", func(r *FlowRule) {
			r.TokenCalculateStrategy = StrategyWarmUp
			r.WarmUpPeriodSec = 10
			r.WarmUpColdFactor = 1
		}, []string{"warmUpColdFactor"}},
		{"associated without ref", func(r *FlowRule) { r.RelationStrategy = RelationAssociated }, []string{"refResource"}},
		{"associated", func(r *FlowRule) { r.RelationStrategy = RelationAssociated; r.RefResource = "db" }, nil},
		{"associated with bad ref", func(r *FlowRule) { r.RelationStrategy = RelationAssociated; r.RefResource = "a\nb" }, []string{"refResource"}},
		{"ref with current", func(r *FlowRule) { r.RefResource = "db" }, []string{"refResource"}},
		{"cluster scope on throttling", func(r *FlowRule) { r.Name = "a"; r.Scope = ScopeCluster; r.ControlBehavior = BehaviorThrottling }, []string{"scope"}},
		{"unknown scope", func(r *FlowRule) { r.Scope = "global" }, []string{"scope"}},
		{"unknown relation", func(r *FlowRule) { r.RelationStrategy = "sibling" }, []string{"relationStrategy"}},
		{"every field wrong", func(r *FlowRule) {
			*r = FlowRule{Name: "-", Mode: "x", Metric: "y", Threshold: -1, StatIntervalMs: 1,
				ControlBehavior: "z", MaxQueueingTimeMs: 5, TokenCalculateStrategy: "w",
				WarmUpPeriodSec: 1, WarmUpColdFactor: 1, RelationStrategy: "v"}
		}, []string{"name", "resource", "mode", "metric", "threshold", "statIntervalMs", "controlBehavior",
			"maxQueueingTimeMs", "tokenCalculateStrategy", "warmUpPeriodSec", "warmUpColdFactor", "relationStrategy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := valid
			tt.edit(&rule)
			got := rule.Validate()
			var fields []string
			for _, fe := range got {
				if fe.Message == "" {
					t.Errorf("field %s has no message", fe.Field)
				}
				fields = append(fields, fe.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tt.fields, ",") {
				t.Fatalf("Validate() = %+v, want fields %v", got, tt.fields)
			}
		})
	}
}

// decodeFlowRule decodes one rule as the REST API does: strictly.
func decodeFlowRule(data []byte) (FlowRule, error) {
	var rule FlowRule
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&rule)
	return rule, err
}

// FuzzFlowRuleJSON decodes arbitrary JSON into a rule and validates it: no
// input may panic, a rule Validate accepts must load and run, and a valid
// rule survives a JSON round trip unchanged.
func FuzzFlowRuleJSON(f *testing.F) {
	for _, seed := range []string{
		`{"resource":"orders","threshold":100}`,
		`{"name":"orders-qps","resource":"orders","threshold":100,"statIntervalMs":2000,"mode":"shadow"}`,
		`{"resource":"orders","threshold":10,"controlBehavior":"throttling","maxQueueingTimeMs":500}`,
		`{"resource":"orders","threshold":10,"tokenCalculateStrategy":"warmUp","warmUpPeriodSec":10,"warmUpColdFactor":4}`,
		`{"resource":"orders","threshold":10,"tokenCalculateStrategy":"warmUp","warmUpPeriodSec":10,"controlBehavior":"throttling"}`,
		`{"resource":"orders","metric":"concurrency","threshold":4}`,
		`{"resource":"write","threshold":4,"relationStrategy":"associated","refResource":"read"}`,
		`{"resource":"","threshold":-1,"statIntervalMs":7}`,
		`{"resource":"x","threshold":1e308}`,
		`{"resource":"x","threshold":"1"}`,
		`{"resource":"x","threshold":1,"unknown":true}`,
		`{"resource":"x\u0000","threshold":1}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rule, err := decodeFlowRule(data)
		if err != nil {
			return
		}
		if errs := rule.Validate(); len(errs) > 0 {
			return
		}
		e, clock := newTestEngine(t, 0)
		if err := e.LoadFlowRules([]FlowRule{rule}); err != nil {
			t.Fatalf("Validate accepted %+v but LoadFlowRules refused it: %v", rule, err)
		}
		for ms := range int64(3) {
			clock.Set(ms * 700)
			if en, blk := e.Entry(rule.Resource, WithNoWait()); blk == nil {
				en.Exit()
			}
		}
		encoded, err := json.Marshal(rule)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeFlowRule(encoded)
		if err != nil || again != rule {
			t.Fatalf("round trip of %+v gave %+v, %v", rule, again, err)
		}
	})
}

// TestValidateWithoutLoading: each kind's Validate function passes what
// its Load function takes and refuses what it refuses, naming the field,
// so that callers can check a set of rules before they store it.
func TestValidateWithoutLoading(t *testing.T) {
	tests := []struct {
		name      string
		good, bad func() error
		field     string
	}{
		{
			name: "authority",
			good: func() error {
				return ValidateAuthorityRules([]AuthorityRule{{Resource: "r", Strategy: AuthorityDeny, Origins: []string{"crawler"}}})
			},
			bad:   func() error { return ValidateAuthorityRules([]AuthorityRule{{Resource: "r", Strategy: "maybe"}}) },
			field: "rules[0].strategy",
		},
		{
			name: "circuit breaker",
			good: func() error {
				return ValidateCircuitBreakerRules([]CircuitBreakerRule{{Resource: "pay", Strategy: StrategyErrorCount,
					Threshold: 3, MinRequestAmount: 5, RetryTimeoutMs: 5000}})
			},
			bad: func() error {
				return ValidateCircuitBreakerRules([]CircuitBreakerRule{{Resource: "pay", Strategy: StrategyErrorCount,
					Threshold: -1, MinRequestAmount: 5, RetryTimeoutMs: 5000}})
			},
			field: "rules[0].threshold",
		},
		{
			name: "hotspot",
			good: func() error {
				return ValidateHotspotRules([]HotspotRule{{Resource: "r", ParamKey: "user", Threshold: 2}})
			},
			bad: func() error {
				return ValidateHotspotRules([]HotspotRule{{Resource: "r", ParamKey: "user", Threshold: -2}})
			},
			field: "rules[0].threshold",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.good(); err != nil {
				t.Fatalf("a good rule: %v", err)
			}
			var verr *ValidationError
			if err := tt.bad(); !errors.As(err, &verr) {
				t.Fatalf("a bad rule: %v, want a *ValidationError", err)
			}
			for _, f := range verr.Fields {
				if f.Field == tt.field {
					return
				}
			}
			t.Errorf("fields %+v do not name %s", verr.Fields, tt.field)
		})
	}
}
