package engine

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
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
	DefaultStatIntervalMs   = 1000
	MinStatIntervalMs       = 100
	MaxStatIntervalMs       = 600_000
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
// fields mean their defaults (see WithDefaults); JSON names are those of the
// REST API.
type FlowRule struct {
	// Name identifies the rule in block errors; optional for embedded use,
	// unique within a rule set when given.
	Name     string `json:"name,omitempty"`
	Resource string `json:"resource"`
	Mode     Mode   `json:"mode,omitempty"`

	Metric                 FlowMetric             `json:"metric,omitempty"`
	Threshold              float64                `json:"threshold"`
	StatIntervalMs         int64                  `json:"statIntervalMs,omitempty"`
	ControlBehavior        ControlBehavior        `json:"controlBehavior,omitempty"`
	MaxQueueingTimeMs      int64                  `json:"maxQueueingTimeMs,omitempty"`
	TokenCalculateStrategy TokenCalculateStrategy `json:"tokenCalculateStrategy,omitempty"`
	WarmUpPeriodSec        int64                  `json:"warmUpPeriodSec,omitempty"`
	WarmUpColdFactor       int64                  `json:"warmUpColdFactor,omitempty"`
	RelationStrategy       RelationStrategy       `json:"relationStrategy,omitempty"`
	RefResource            string                 `json:"refResource,omitempty"`
	Scope                  Scope                  `json:"scope,omitempty"`
	// ClusterFallback and ClusterFallbackThreshold apply to cluster rules
	// only; a ClusterFallbackThreshold of 0 means the threshold divided
	// by the engines that shared the rule last.
	ClusterFallback          ClusterFallback `json:"clusterFallback,omitempty"`
	ClusterFallbackThreshold float64         `json:"clusterFallbackThreshold,omitempty"`
	// LimitApp says whose calls the rule counts and limits:
	// LimitAppDefault every caller's together; an origin's name only that
	// origin's (WithOrigin), on their own statistics; LimitAppOther each
	// origin that no other flow rule of the resource names, apart.
	LimitApp string `json:"limitApp,omitempty"`
	// ExpiresAtMs, if not 0, is when the rule stops applying, in Unix
	// milliseconds of the engine's clock (the API's expiresAt): it stays
	// loaded and listed, and calls stop seeing it then without a load.
	ExpiresAtMs int64 `json:"expiresAtMs,omitempty"`
}

// WithDefaults returns the rule with every unset field that applies to it set
// to its default. Fields that do not apply (statIntervalMs of a concurrency
// rule, warmUpColdFactor without warm-up) stay zero.
func (r FlowRule) WithDefaults() FlowRule {
	if r.Mode == "" {
		r.Mode = ModeEnforce
	}
	if r.Metric == "" {
		r.Metric = MetricQPS
	}
	if r.ControlBehavior == "" {
		r.ControlBehavior = BehaviorReject
	}
	if r.TokenCalculateStrategy == "" {
		r.TokenCalculateStrategy = StrategyDirect
	}
	if r.RelationStrategy == "" {
		r.RelationStrategy = RelationCurrent
	}
	if r.Scope == "" {
		r.Scope = ScopeLocal
	}
	if r.Scope == ScopeCluster && r.ClusterFallback == "" {
		r.ClusterFallback = FallbackLocal
	}
	if r.LimitApp == "" {
		r.LimitApp = LimitAppDefault
	}
	if r.Metric == MetricQPS && r.StatIntervalMs == 0 {
		r.StatIntervalMs = DefaultStatIntervalMs
	}
	if r.TokenCalculateStrategy == StrategyWarmUp && r.WarmUpColdFactor == 0 {
		r.WarmUpColdFactor = DefaultWarmUpColdFactor
	}
	return r
}

// Validate checks the rule as WithDefaults would complete it and returns one
// FieldError for every bad field, named as in JSON; nil when the rule is
// valid.
func (r FlowRule) Validate() []FieldError {
	var errs fieldErrors
	r = r.WithDefaults()
	if r.Name != "" && !RuleNamePattern.MatchString(r.Name) {
		errs.add("name", fmt.Sprintf("must be 1-%d characters of a-z, 0-9, '.', '_' or '-', starting and ending with a letter or digit", maxRuleNameLen))
	}
	errs.check("resource", validateResourceName(r.Resource))
	switch r.Mode {
	case ModeEnforce, ModeShadow:
	default:
		errs.add("mode", "must be one of enforce, shadow")
	}
	if r.ExpiresAtMs < 0 {
		errs.add("expiresAtMs", "must be >= 0 (0: never)")
	}

	fields := FlowRuleFields
	qps := r.Metric == MetricQPS
	switch r.Metric {
	case MetricQPS, MetricConcurrency:
	default:
		errs.add("metric", fields.field("metric").mustBeOneOf())
	}
	threshold := fields.field("threshold")
	switch {
	case math.IsNaN(r.Threshold) || math.IsInf(r.Threshold, 0):
		errs.add("threshold", "must be a finite number")
	case r.Threshold < *threshold.Min:
		errs.add("threshold", "must be >= "+formatBound(*threshold.Min))
	case r.Threshold > *threshold.Max:
		errs.add("threshold", "must be at most "+strings.Replace(fmt.Sprintf("%g", *threshold.Max), "e+", "e", 1))
	case r.Metric == MetricConcurrency && r.Threshold != math.Trunc(r.Threshold):
		errs.add("threshold", "must be a whole number for metric concurrency")
	}
	interval := fields.field("statIntervalMs")
	switch {
	case !qps && r.StatIntervalMs != 0:
		errs.add("statIntervalMs", interval.appliesOnly())
	case qps && interval.outside(float64(r.StatIntervalMs)):
		errs.add("statIntervalMs", interval.between())
	}

	behavior := fields.field("controlBehavior")
	throttling := r.ControlBehavior == BehaviorThrottling
	switch {
	case r.ControlBehavior != BehaviorReject && !throttling:
		errs.add("controlBehavior", behavior.mustBeOneOf())
	case throttling && !qps:
		errs.add("controlBehavior", string(BehaviorThrottling)+" "+behavior.appliesOnly())
	}
	queueing := fields.field("maxQueueingTimeMs")
	switch {
	case !throttling && r.MaxQueueingTimeMs != 0:
		errs.add("maxQueueingTimeMs", queueing.appliesOnly())
	case queueing.outside(float64(r.MaxQueueingTimeMs)):
		errs.add("maxQueueingTimeMs", queueing.between())
	}

	strategy := fields.field("tokenCalculateStrategy")
	warmUp := r.TokenCalculateStrategy == StrategyWarmUp
	switch {
	case r.TokenCalculateStrategy != StrategyDirect && !warmUp:
		errs.add("tokenCalculateStrategy", strategy.mustBeOneOf())
	case warmUp && !qps:
		errs.add("tokenCalculateStrategy", string(StrategyWarmUp)+" "+strategy.appliesOnly())
	}
	period := fields.field("warmUpPeriodSec")
	switch {
	case !warmUp && r.WarmUpPeriodSec != 0:
		errs.add("warmUpPeriodSec", period.appliesOnly())
	case warmUp && period.outside(float64(r.WarmUpPeriodSec)):
		errs.add("warmUpPeriodSec", "is required with warmUp and "+period.between())
	}
	coldFactor := fields.field("warmUpColdFactor")
	switch {
	case !warmUp && r.WarmUpColdFactor != 0:
		errs.add("warmUpColdFactor", coldFactor.appliesOnly())
	case warmUp && coldFactor.outside(float64(r.WarmUpColdFactor)):
		errs.add("warmUpColdFactor", "must be > "+formatBound(*coldFactor.Min-1))
	}

	ref := fields.field("refResource")
	switch r.RelationStrategy {
	case RelationCurrent:
		if r.RefResource != "" {
			errs.add("refResource", ref.appliesOnly())
		}
	case RelationAssociated:
		if r.RefResource == "" {
			errs.add("refResource", "is required with relationStrategy associated")
		} else {
			errs.check("refResource", validateResourceName(r.RefResource))
		}
	default:
		errs.add("relationStrategy", fields.field("relationStrategy").mustBeOneOf())
	}

	if p := validateOrigin(r.LimitApp); p != "" {
		errs.add("limitApp", p)
	} else if r.LimitApp != LimitAppDefault && (r.RelationStrategy != RelationCurrent || warmUp) {
		errs.add("limitApp", "other than default applies only with relationStrategy current and tokenCalculateStrategy direct")
	}

	switch r.Scope {
	case ScopeLocal:
		if r.ClusterFallback != "" {
			errs.add("clusterFallback", "applies only with scope cluster")
		}
		if r.ClusterFallbackThreshold != 0 {
			errs.add("clusterFallbackThreshold", "applies only with scope cluster")
		}
	case ScopeCluster:
		r.validateCluster(&errs)
	default:
		errs.add("scope", fields.field("scope").mustBeOneOf())
	}
	return errs
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
	switch r.ClusterFallback {
	case FallbackLocal, FallbackPass, FallbackBlock:
	default:
		errs.add("clusterFallback", FlowRuleFields.field("clusterFallback").mustBeOneOf())
	}
	if t := r.ClusterFallbackThreshold; math.IsNaN(t) || t < 0 || t > MaxThreshold {
		errs.add("clusterFallbackThreshold", fmt.Sprintf("must be between 0 and %g (0: threshold divided by the engines sharing the rule)", float64(MaxThreshold)))
	} else if t != 0 && r.ClusterFallback != FallbackLocal {
		errs.add("clusterFallbackThreshold", "applies only with clusterFallback local")
	}
}

func (r FlowRule) ruleName() string { return r.Name }

// ValidateResourceName says why name is not a valid resource name (1 to
// MaxResourceNameLen characters of UTF-8, no control characters), or
// returns "" when it is.
func ValidateResourceName(name string) string {
	if len(name) > 0 && len(name) <= MaxResourceNameLen && plainASCII(name) {
		return ""
	}
	return validateResourceName(name)
}

// plainASCII reports whether s is printable ASCII only, the common case
// the full check need not look at rune by rune.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// validateResourceName returns why name is not a valid resource name, or "".
func validateResourceName(name string) string {
	switch {
	case name == "":
		return "is required"
	case !utf8.ValidString(name):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(name) > MaxResourceNameLen:
		return fmt.Sprintf("must be at most %d characters", MaxResourceNameLen)
	case strings.IndexFunc(name, func(c rune) bool { return unicode.Is(unicode.Cc, c) }) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// FieldError is one invalid field: its JSON name (a path such as
// "rules[3].threshold" where rules are validated as a set) and why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
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
