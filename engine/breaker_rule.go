package engine

import "math"

// BreakerStrategy is what a circuit breaker counts as a failure.
type BreakerStrategy string

// Circuit breaker strategies.
const (
	// StrategySlowRequestRatio opens when the share of calls slower than
	// maxAllowedRtMs exceeds the threshold.
	StrategySlowRequestRatio BreakerStrategy = "slowRequestRatio"
	// StrategyErrorRatio opens when the share of failed calls exceeds the
	// threshold.
	StrategyErrorRatio BreakerStrategy = "errorRatio"
	// StrategyErrorCount opens when the failed calls reach the threshold.
	StrategyErrorCount BreakerStrategy = "errorCount"
)

// Limits and defaults of circuit breaker rule fields.
const (
	DefaultMinRequestAmount      = 5
	DefaultBreakerStatIntervalMs = 1000
	MinBreakerStatIntervalMs     = 1000
	MaxBreakerStatIntervalMs     = 600_000
	DefaultProbeNum              = 1
	MaxRetryTimeoutMs            = 86_400_000
	maxBreakerCount              = 1_000_000_000
)

// CircuitBreakerRule stops calls to a resource for retryTimeoutMs once its
// calls fail too often, then lets probeNum probes through (half-open) and
// closes again if they succeed. Zero values of optional fields mean their
// defaults; the field table (CircuitBreakerKind) names them in JSON.
type CircuitBreakerRule struct {
	// Name identifies the rule in block errors and state changes.
	Name     string
	Resource string
	Mode     Mode
	Strategy BreakerStrategy
	// Threshold is a ratio in [0, 1] for the ratio strategies (opens when
	// exceeded) and a whole count >= 1 for errorCount (opens when reached).
	Threshold float64
	// MaxAllowedRtMs: slower calls are slow (slowRequestRatio only).
	MaxAllowedRtMs   int64
	RetryTimeoutMs   int64
	MinRequestAmount int64
	StatIntervalMs   int64
	ProbeNum         int64
	// ExpiresAtMs, if not 0, is when the rule stops applying (see
	// FlowRule.ExpiresAtMs).
	ExpiresAtMs int64
}

// CircuitBreakerKind is the kind of circuit breaker rules
// (CircuitBreakerRule).
var CircuitBreakerKind = kindOf(Kind{Name: KindCircuitBreaker, Label: "Circuit breaker", Title: "Circuit breaker",
	Help: "stop calls to a failing resource", Fields: BreakerRuleFields,
	Summary: "opens on [strategy=slowRequestRatio:slow (> {maxAllowedRtMs} ms) ratio > {threshold}][strategy=errorRatio:error ratio > {threshold}]" +
		"[strategy=errorCount:errors ≥ {threshold}] in {statIntervalMs} ms, retries after {retryTimeoutMs} ms"},
	nil, checkBreaker, setOf[CircuitBreakerRule]{list: "circuitBreakers", book: breakerKind, check: breakerSetCheck,
		rules:  func(set *ResourceRules) *[]CircuitBreakerRule { return &set.CircuitBreakers },
		staged: func(c *ruleChange, resource string) *[]CircuitBreakerRule { return &c.resources[resource].breakers }})

// WithDefaults returns the rule with every unset optional field set to its
// default.
func (r CircuitBreakerRule) WithDefaults() CircuitBreakerRule {
	CircuitBreakerKind.WithDefaults(&r)
	return r
}

// Validate checks the rule as WithDefaults would complete it and returns one
// FieldError for every bad field, named as in JSON; nil when it is valid.
func (r CircuitBreakerRule) Validate() []FieldError { return CircuitBreakerKind.validateOwn(&r) }

// checkBreaker checks r's threshold, whose range is its strategy's.
func checkBreaker(r *CircuitBreakerRule, errs *fieldErrors) {
	ratio := r.Strategy == StrategySlowRequestRatio || r.Strategy == StrategyErrorRatio
	switch {
	case math.IsNaN(r.Threshold) || math.IsInf(r.Threshold, 0):
	case ratio && (r.Threshold < 0 || r.Threshold > 1):
		errs.add("threshold", "must be a ratio between 0 and 1 for strategy "+string(r.Strategy))
	case r.Strategy == StrategyErrorCount && (r.Threshold < 1 || r.Threshold != math.Trunc(r.Threshold) || r.Threshold > maxBreakerCount):
		errs.add("threshold", "must be a whole count >= 1 for strategy errorCount")
	}
}
