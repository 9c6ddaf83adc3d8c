package engine

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Mode says whether a rule's blocks are enforced.
type Mode string

// Rule modes.
const (
	// ModeEnforce blocks calls the rule does not allow.
	ModeEnforce Mode = "enforce"
	// ModeShadow evaluates the rule and counts its would-be blocks as
	// shadowBlock, but lets the calls pass: a way to roll a rule out safely.
	ModeShadow Mode = "shadow"
)

// FlowMetric is what a flow rule limits.
type FlowMetric string

// Flow metrics.
const (
	// MetricQPS limits passes per statIntervalMs.
	MetricQPS FlowMetric = "qps"
	// MetricConcurrency limits calls in flight (entered, not yet exited).
	MetricConcurrency FlowMetric = "concurrency"
)

// ControlBehavior is what a QPS rule does with calls over its threshold.
type ControlBehavior string

// Control behaviours.
const (
	// BehaviorReject blocks calls over the threshold at once.
	BehaviorReject ControlBehavior = "reject"
	// BehaviorThrottling spaces passes evenly (leaky bucket); a caller that
	// would wait longer than maxQueueingTimeMs is blocked.
	BehaviorThrottling ControlBehavior = "throttling"
)

// TokenCalculateStrategy is how a QPS rule derives its current threshold.
type TokenCalculateStrategy string

// Token calculation strategies.
const (
	// StrategyDirect uses the threshold as it is.
	StrategyDirect TokenCalculateStrategy = "direct"
	// StrategyWarmUp ramps the threshold from threshold/coldFactor up to
	// threshold over warmUpPeriodSec after the resource has been idle.
	StrategyWarmUp TokenCalculateStrategy = "warmUp"
)

// RelationStrategy says whose traffic a flow rule measures.
type RelationStrategy string

// Relation strategies.
const (
	// RelationCurrent measures the rule's own resource.
	RelationCurrent RelationStrategy = "current"
	// RelationAssociated limits the resource by refResource's traffic.
	RelationAssociated RelationStrategy = "associated"
)

// Scope says which engines' traffic a flow rule's threshold counts.
type Scope string

// Scopes.
const (
	// ScopeLocal counts each engine's own traffic against the threshold.
	ScopeLocal Scope = "local"
	// ScopeCluster counts the traffic of every engine that shares the
	// engine's cluster count (Options.Cluster) against one threshold.
	ScopeCluster Scope = "cluster"
)

// ClusterFallback says what a cluster rule does while its engine cannot
// reach the shared count.
type ClusterFallback string

// Cluster fallbacks.
const (
	// FallbackLocal limits the engine's own traffic to the rule's
	// clusterFallbackThreshold (by default its threshold divided by the
	// engines that shared it last).
	FallbackLocal ClusterFallback = "local"
	// FallbackPass lets every call through.
	FallbackPass ClusterFallback = "pass"
	// FallbackBlock blocks every call.
	FallbackBlock ClusterFallback = "block"
)

// LimitApp values with a meaning of their own; any other is an origin.
const (
	// LimitAppDefault counts every caller together.
	LimitAppDefault = "default"
	// LimitAppOther counts each origin no other rule of the resource
	// names, each apart.
	LimitAppOther = "other"
)

// maxOriginsTracked bounds the origins a limitApp other rule keeps
// statistics for; past it, the least recently used are forgotten.
const maxOriginsTracked = 10_000

// Limits and defaults of flow rule fields.
const (
	DefaultStatIntervalMs = 1000
	MinStatIntervalMs     = 100
	// MaxStatIntervalMs is a day: windows of an hour and a day are
	// quotas, decided on the same bounded pass log as a second's
	// (docs/engine.md#hour-and-day-quotas).
	MaxStatIntervalMs       = 86_400_000
	MaxQueueingTimeMs       = 60_000
	DefaultWarmUpColdFactor = 3
	MaxWarmUpPeriodSec      = 86_400
	MaxResourceNameLen      = 256
	maxRuleNameLen          = 128
	MaxThreshold            = 1e12
)

// RuleNamePattern is what a rule name must match (docs/api.md).
var RuleNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$`)

// FlowRule limits the traffic of one resource. Zero values of optional
// fields mean their defaults (see WithDefaults); the field table
// (FlowKind) names them in JSON.
type FlowRule struct {
	// Name identifies the rule in block errors; optional for embedded use,
	// unique within a rule set when given.
	Name     string
	Resource string
	Mode     Mode

	Metric                 FlowMetric
	Threshold              float64
	StatIntervalMs         int64
	ControlBehavior        ControlBehavior
	MaxQueueingTimeMs      int64
	TokenCalculateStrategy TokenCalculateStrategy
	WarmUpPeriodSec        int64
	WarmUpColdFactor       int64
	RelationStrategy       RelationStrategy
	RefResource            string
	Scope                  Scope
	// ClusterFallback and ClusterFallbackThreshold apply to cluster rules
	// only; a ClusterFallbackThreshold of 0 means the threshold divided
	// by the engines that shared the rule last.
	ClusterFallback          ClusterFallback
	ClusterFallbackThreshold float64
	// LimitApp says whose calls the rule counts and limits:
	// LimitAppDefault every caller's together; an origin's name only that
	// origin's (WithOrigin), on their own statistics; LimitAppOther each
	// origin that no other flow rule of the resource names, apart.
	LimitApp string
	// Replaces names, separated by commas, the rules this one replaces
	// when Envoy's rate limit service asks about both in one request
	// (envoyproxy/ratelimit's replaces); the engine itself ignores it. A
	// string, not a slice, keeps FlowRule comparable.
	Replaces string
	// ExpiresAtMs, if not 0, is when the rule stops applying, in Unix
	// milliseconds of the engine's clock (the API's expiresAt): it stays
	// loaded and listed, and calls stop seeing it then without a load.
	ExpiresAtMs int64
}

// FlowKind is the kind of flow rules (FlowRule).
var FlowKind = kindOf(Kind{Name: KindFlow, Label: "Flow", Title: "Flow rule",
	Help: "cap requests per second or calls in flight", Fields: FlowRuleFields,
	Doc: "Field names follow sentinel-golang's. A rule with `scope` `cluster` holds its threshold across every engine that runs it, " +
		"with `clusterFallback` and `clusterFallbackThreshold` for when Redis is away: see " +
		"[Cluster-wide limits on Redis](docs/operations.md#cluster-wide-limits-on-redis).",
	Summary: "[metric=concurrency:{threshold} in flight at most][metric=qps:{threshold} per {statIntervalMs|per}" +
		"[controlBehavior=throttling:, spaced evenly (wait up to {maxQueueingTimeMs} ms)][tokenCalculateStrategy=warmUp:, warm-up {warmUpPeriodSec} s]" +
		"[relationStrategy=associated:, by the traffic of {refResource}][limitApp=other:, for each origin no other rule names]" +
		"[limitApp!=default,other:, for the calls of {limitApp} only]]"},
	flowDefaults, checkFlow, setOf[FlowRule]{list: "flow", book: flowKind, check: flowSetCheck,
		rules:  func(set *ResourceRules) *[]FlowRule { return &set.Flow },
		staged: func(c *ruleChange, resource string) *[]FlowRule { return &c.resources[resource].flow }})

// WithDefaults returns the rule with every unset field that applies to it set
// to its default. Fields that do not apply (statIntervalMs of a concurrency
// rule, warmUpColdFactor without warm-up) stay zero.
func (r FlowRule) WithDefaults() FlowRule {
	FlowKind.WithDefaults(&r)
	return r
}

// Validate checks the rule as WithDefaults would complete it and returns one
// FieldError for every bad field, named as in JSON; nil when the rule is
// valid.
func (r FlowRule) Validate() []FieldError { return FlowKind.validateOwn(&r) }

// flowDefaults keeps a concurrency rule's behaviours, which do not apply
// to it, at their defaults, as Sentinel's rules always carry them.
func flowDefaults(r *FlowRule) {
	if r.ControlBehavior == "" {
		r.ControlBehavior = BehaviorReject
	}
	if r.TokenCalculateStrategy == "" {
		r.TokenCalculateStrategy = StrategyDirect
	}
}

// checkFlow adds what the field table cannot say of r to errs.
func checkFlow(r *FlowRule, errs *fieldErrors) {
	if r.Metric == MetricConcurrency && r.Threshold != math.Trunc(r.Threshold) && !math.IsInf(r.Threshold, 0) {
		errs.add("threshold", "must be a whole number for metric concurrency")
	}
	if r.RelationStrategy == RelationAssociated && r.RefResource != "" {
		errs.check("refResource", validateResourceName(r.RefResource))
	}
	if p := validateOrigin(r.LimitApp); p != "" {
		errs.add("limitApp", p)
	} else if r.LimitApp != LimitAppDefault && (r.RelationStrategy != RelationCurrent || r.TokenCalculateStrategy == StrategyWarmUp) {
		errs.add("limitApp", "other than default applies only with relationStrategy current and tokenCalculateStrategy direct")
	}
	if r.Scope == ScopeCluster {
		r.validateCluster(errs)
	}
	errs.check("replaces", replacesProblem(r.Replaces, r.Name))
}

// MaxReplaces bounds the rules one rule replaces.
const MaxReplaces = 16

// replacesProblem says why replaces, the field of a rule named name, is
// not a list of rule names separated by commas, or "".
func replacesProblem(replaces, name string) string {
	if replaces == "" {
		return ""
	}
	names := strings.Split(replaces, ",")
	if len(names) > MaxReplaces {
		return fmt.Sprintf("must name at most %d rules", MaxReplaces)
	}
	for _, n := range names {
		switch {
		case !RuleNamePattern.MatchString(n):
			return fmt.Sprintf("must be rule names separated by commas: %q is not one", n)
		case n == name:
			return "must not name the rule itself"
		}
	}
	return ""
}

// validateCluster adds what is wrong with the cluster fields of r, a rule
// of scope cluster, to errs. The shared count holds passes per window:
// cluster rules are qps reject rules on their own resource's traffic,
// counting every caller, and named, since the name keys the count.
func (r FlowRule) validateCluster(errs *fieldErrors) {
	if r.Name == "" {
		errs.add("name", "is required with scope cluster: it names the count the engines share")
	}
	plain := r.Metric == MetricQPS && r.ControlBehavior == BehaviorReject && r.TokenCalculateStrategy == StrategyDirect &&
		r.RelationStrategy == RelationCurrent && r.LimitApp == LimitAppDefault
	if !plain {
		errs.add("scope", "cluster applies only to metric qps, controlBehavior reject, tokenCalculateStrategy direct, relationStrategy current and limitApp default")
	} else if r.StatIntervalMs < MinClusterStatIntervalMs {
		errs.add("statIntervalMs", fmt.Sprintf("must be at least %d with scope cluster", MinClusterStatIntervalMs))
	}
	if t := r.ClusterFallbackThreshold; math.IsNaN(t) || t < 0 || t > MaxThreshold {
		errs.add("clusterFallbackThreshold", fmt.Sprintf("must be between 0 and %g (0: threshold divided by the engines sharing the rule)", float64(MaxThreshold)))
	} else if t != 0 && r.ClusterFallback != FallbackLocal {
		errs.add("clusterFallbackThreshold", "applies only with clusterFallback local")
	}
}

// FieldError is one invalid field: its JSON name (a path such as
// "rules[3].threshold" where rules are validated as a set) and why.
type FieldError struct {
	Field   string
	Message string
}

// ValidationError lists every invalid field of a rejected rule set.
type ValidationError struct {
	Fields []FieldError
}

// Error summarises the invalid fields.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + " " + f.Message
	}
	return "invalid rules: " + strings.Join(parts, "; ")
}

type fieldErrors []FieldError

func (e *fieldErrors) add(field, message string) {
	*e = append(*e, FieldError{Field: field, Message: message})
}

func (e *fieldErrors) check(field, message string) {
	if message != "" {
		e.add(field, message)
	}
}
