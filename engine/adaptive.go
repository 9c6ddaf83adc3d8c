package engine

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// ReasonAdaptive is an adaptive concurrency rule: the resource's calls in
// flight are at the limit the rule has learned (BlockError.Limit).
const ReasonAdaptive BlockReason = "adaptive"

// AdaptiveAlgorithm is how an adaptive concurrency rule moves its limit.
type AdaptiveAlgorithm string

// Adaptive algorithms.
const (
	// AdaptiveGradient2 multiplies the limit by the ratio of the no-load
	// latency, times the tolerance, to the latest latency (at most 1, at
	// least 0.5), adds the square root of the limit as a queue allowance
	// while latency is within its tolerance, and takes smoothing of that
	// estimate: Netflix's Gradient2, with the no-load latency learned
	// only at light load (see adaptiveLimiter.learn).
	AdaptiveGradient2 AdaptiveAlgorithm = "gradient2"
	// AdaptiveAIMD adds one to the limit while latency is within its
	// tolerance and the limit is in use, and multiplies it by
	// backoffRatio when latency is past it or calls fail.
	AdaptiveAIMD AdaptiveAlgorithm = "aimd"
)

// Limits and defaults of adaptive concurrency rule fields.
const (
	DefaultAdaptiveInitialLimit = 20
	DefaultAdaptiveMinLimit     = 4
	DefaultAdaptiveMaxLimit     = 1000
	MaxAdaptiveLimit            = 1_000_000
	DefaultAdaptiveTolerance    = 1.1
	MaxAdaptiveTolerance        = 10
	DefaultAdaptiveSmoothing    = 0.2
	DefaultAdaptiveBackoffRatio = 0.9
)

// AdaptiveConcurrencyRule limits a resource's calls in flight to a limit
// it learns from the calls' response times, between MinLimit and
// MaxLimit: the limit comes down when latency rises past Tolerance times
// its no-load level, and goes up while latency holds. One rule per
// resource. Zero values of optional fields mean their defaults; the
// field table (AdaptiveConcurrencyKind) names them in JSON.
type AdaptiveConcurrencyRule struct {
	// Name identifies the rule in block errors.
	Name     string
	Resource string
	Mode     Mode

	Algorithm    AdaptiveAlgorithm
	InitialLimit int64
	MinLimit     int64
	MaxLimit     int64
	Tolerance    float64
	// Smoothing applies to gradient2, BackoffRatio to aimd.
	Smoothing    float64
	BackoffRatio float64
	// ExpiresAtMs, if not 0, is when the rule stops applying (see
	// FlowRule.ExpiresAtMs).
	ExpiresAtMs int64
}

// AdaptiveConcurrencyKind is the kind of adaptive concurrency rules
// (AdaptiveConcurrencyRule).
var AdaptiveConcurrencyKind = kindOf(Kind{Name: KindAdaptiveConcurrency, Label: "Adaptive concurrency", Title: "Adaptive concurrency rule",
	Help: "limit calls in flight to what the resource's latency shows it can take", Fields: AdaptiveRuleFields,
	Doc: "The rule learns its limit from the response times the engine records: every 100 ms span with at least 10 completed calls " +
		"(or after a second with fewer), it compares their mean latency with the resource's no-load latency, learned from the spans " +
		"in which the calls in flight were at most half the limit, and moves the limit; a call is blocked, reason `adaptive`, " +
		"when the calls in flight are at the limit. In `shadow` mode it learns and records its limit and blocks nothing: watch " +
		"it on the resource's page before enforcing it; the limit it learned is kept when only the mode changes. One rule per " +
		"resource, and calls must be exited (their response time is what it learns from). See " +
		"[Adaptive concurrency](docs/engine.md#adaptive-concurrency).",
	Summary: "calls in flight at most what latency allows ([algorithm=gradient2:gradient2][algorithm=aimd:aimd]), " +
		"{minLimit} to {maxLimit}, from {initialLimit}, latency up to {tolerance}× its no-load level"},
	nil, checkAdaptive, setOf[AdaptiveConcurrencyRule]{list: "adaptiveConcurrency", book: adaptiveKind, check: adaptiveSetCheck,
		rules: func(set *ResourceRules) *[]AdaptiveConcurrencyRule { return &set.AdaptiveConcurrency },
		staged: func(c *ruleChange, resource string) *[]AdaptiveConcurrencyRule {
			return &c.resources[resource].adaptive
		}})

// WithDefaults returns the rule with every unset field that applies to it
// set to its default.
func (r AdaptiveConcurrencyRule) WithDefaults() AdaptiveConcurrencyRule {
	AdaptiveConcurrencyKind.WithDefaults(&r)
	return r
}

// Validate checks the rule as WithDefaults would complete it and returns
// one FieldError for every bad field, named as in JSON.
func (r AdaptiveConcurrencyRule) Validate() []FieldError {
	return AdaptiveConcurrencyKind.validateOwn(&r)
}

// checkAdaptive checks that the initial limit is within the limits.
func checkAdaptive(r *AdaptiveConcurrencyRule, errs *fieldErrors) {
	switch {
	case r.MinLimit > r.MaxLimit:
		errs.add("minLimit", "must be at most maxLimit: "+strconv.FormatInt(r.MaxLimit, 10))
	case r.InitialLimit < r.MinLimit:
		errs.add("initialLimit", "must be at least minLimit: "+strconv.FormatInt(r.MinLimit, 10))
	case r.InitialLimit > r.MaxLimit:
		errs.add("initialLimit", "must be at most maxLimit: "+strconv.FormatInt(r.MaxLimit, 10))
	}
}

// AdaptiveCause is why an adaptive limit changed.
type AdaptiveCause string

// Adaptive causes.
const (
	// AdaptiveLatency: mean latency rose past the tolerance over its
	// no-load level.
	AdaptiveLatency AdaptiveCause = "latency"
	// AdaptiveErrors: more than a tenth of the calls failed (aimd).
	AdaptiveErrors AdaptiveCause = "errors"
	// AdaptiveHeadroom: latency was within its tolerance and the limit
	// in use, so the limit went up.
	AdaptiveHeadroom AdaptiveCause = "headroom"
)

// AdaptiveChange is the latest change of an adaptive limit and what
// caused it.
type AdaptiveChange struct {
	AtMs     int64
	From, To int64
	Cause    AdaptiveCause
	// ShortRttMs is the mean response time of the calls the change was
	// decided on; NoLoadRttMs the resource's no-load latency then.
	ShortRttMs, NoLoadRttMs float64
}

// Explain says the change in words, as the console shows it: "latency
// rose 40% over its no-load level: limit 120 → 96".
func (c AdaptiveChange) Explain() string {
	limit := fmt.Sprintf("limit %d → %d", c.From, c.To)
	switch c.Cause {
	case AdaptiveLatency:
		return fmt.Sprintf("latency rose %.0f%% over its no-load level: %s", c.overPercent(), limit)
	case AdaptiveErrors:
		return "more than a tenth of the calls failed: " + limit
	case AdaptiveHeadroom:
		return fmt.Sprintf("latency held within %.0f%% of its no-load level with the limit in use: %s", max(c.overPercent(), 0), limit)
	}
	return limit
}

// overPercent is how far the short latency was over the no-load one.
func (c AdaptiveChange) overPercent() float64 {
	if c.NoLoadRttMs <= 0 {
		return 0
	}
	return (c.ShortRttMs/c.NoLoadRttMs - 1) * 100
}

// AdaptiveStatus is an adaptive concurrency rule's limit now, the figures
// it learned from and its latest change.
type AdaptiveStatus struct {
	Rule      string
	Resource  string
	Algorithm AdaptiveAlgorithm
	Mode      Mode
	// Limit is the calls in flight the rule allows now; InFlight the
	// resource's calls in flight.
	Limit    int64
	InFlight int64
	// ShortRttMs is the mean response time of the latest calls the rule
	// learned from; NoLoadRttMs the no-load latency it compares it with
	// (0 before the first).
	ShortRttMs, NoLoadRttMs float64
	// LastChange is the latest change of the limit; its AtMs is 0 before
	// the first.
	LastChange AdaptiveChange
}

// Learning from the calls' response times, as the resource's tally
// counts them in spans of window.SpanMs.
const (
	// adaptiveMinSamples is the fewest completed calls the limit moves
	// on, unless adaptiveMaxWindowMs has passed.
	adaptiveMinSamples  = 10
	adaptiveMaxWindowMs = window.Spans * window.SpanMs
	// noLoadFall and noLoadRise are how much of the distance to a span's
	// latency the no-load latency moves: down at once when the span was
	// faster, up slowly when it was lightly loaded.
	noLoadFall = 0.5
	noLoadRise = 0.1
	// adaptiveMinGradient bounds how far one update may cut the
	// gradient2 estimate.
	adaptiveMinGradient = 0.5
	// rttFloorMs: the engine records whole milliseconds; faster calls
	// count as this, so that ratios stay finite.
	rttFloorMs = 1
)

// adaptiveLimiter is a loaded adaptive concurrency rule. Entry reads its
// limit with one atomic load; Exit compares the time with nextMs and,
// once per span, the call that wins updating learns from the span's
// completed calls in the resource's tally and publishes a new state if
// the limit changed. No call waits for another.
type adaptiveLimiter struct {
	rule   AdaptiveConcurrencyRule
	res    *Resource
	shadow bool

	// state is the limit and what blocks at it, swapped when the limit
	// changes.
	state atomic.Pointer[adaptiveState]
	// blocks counts the rule's blocks, whatever the limit was.
	blocks *blockTally
	// nextMs is when the span after the latest one learned from ends,
	// the first time an Exit tries to learn; updating is held by the
	// call that does.
	nextMs   atomic.Int64
	updating atomic.Bool
	// shortRtt and noLoadRtt are the latest figures, as float64 bits, for
	// AdaptiveStatus.
	shortRtt, noLoadRtt atomic.Uint64

	// minutes keeps the limit's least, greatest and latest in the last two
	// minutes, for their rows; here rather than in the resource's tally,
	// so that only resources with a rule pay for it.
	minutes [2]minuteLimits

	// Guarded by updating.
	fromMs      int64   // the start of the first span not learned from
	limit       float64 // the limit, unrounded
	noLoadRttMs float64 // 0 until the first span
}

// minuteLimits is the least, greatest and latest limit of one minute,
// written by the learner alone (it holds updating), read by collections.
type minuteLimits struct {
	// start is the minute held; noMinute while being written.
	start             atomic.Int64
	least, most, last atomic.Int64
}

// noMinute marks a minuteLimits slot that holds no minute.
const noMinute = math.MinInt64

// observeLimit records the limit held now, in the minute of the
// resource's newest call. The caller holds updating.
func (a *adaptiveLimiter) observeLimit(limit int64) {
	minute, ok := a.res.second.NewestMinuteMs()
	if !ok {
		return
	}
	m := &a.minutes[minute/minuteMs%2]
	if m.start.Load() != minute {
		m.start.Store(noMinute)
		m.least.Store(limit)
		m.most.Store(limit)
		m.last.Store(limit)
		m.start.Store(minute)
		return
	}
	m.least.Store(min(m.least.Load(), limit))
	m.most.Store(max(m.most.Load(), limit))
	m.last.Store(limit)
}

// minuteLimit returns the least, greatest and latest limit of the minute
// that starts at startMs, and false if none was recorded for it.
func (a *adaptiveLimiter) minuteLimit(startMs int64) (least, most, last int64, ok bool) {
	m := &a.minutes[startMs/minuteMs%2]
	if m.start.Load() != startMs {
		return 0, 0, 0, false
	}
	least, most, last = m.least.Load(), m.most.Load(), m.last.Load()
	// A slot rewritten meanwhile holds another minute.
	return least, most, last, m.start.Load() == startMs
}

// adaptiveState is a limit as Entry reads it.
type adaptiveState struct {
	limit   int64
	blocked *BlockError
	change  AdaptiveChange
}

// newAdaptiveLimiter returns the limiter of rule on res at nowMs, which
// follows prior, the limiter of the resource's rule it replaces (nil if
// none): a rule changed only in mode or bounds keeps the limit and
// no-load latency learned, within its bounds.
func newAdaptiveLimiter(rule AdaptiveConcurrencyRule, res *Resource, prior *adaptiveLimiter, nowMs int64) *adaptiveLimiter {
	a := &adaptiveLimiter{rule: rule, res: res, shadow: rule.Mode == ModeShadow, limit: float64(rule.InitialLimit), blocks: new(blockTally)}
	for i := range a.minutes {
		a.minutes[i].start.Store(noMinute)
	}
	var change AdaptiveChange
	if prior != nil && prior.rule.Algorithm == rule.Algorithm {
		st := prior.state.Load()
		a.limit = min(max(float64(st.limit), float64(rule.MinLimit)), float64(rule.MaxLimit))
		a.noLoadRttMs = math.Float64frombits(prior.noLoadRtt.Load())
		a.shortRtt.Store(prior.shortRtt.Load())
		change = st.change
		for i := range a.minutes {
			m, p := &a.minutes[i], &prior.minutes[i]
			m.least.Store(p.least.Load())
			m.most.Store(p.most.Load())
			m.last.Store(p.last.Load())
			m.start.Store(p.start.Load())
		}
	}
	a.noLoadRtt.Store(math.Float64bits(a.noLoadRttMs))
	a.fromMs = spanStart(nowMs)
	a.nextMs.Store(a.fromMs + window.SpanMs)
	a.publish(int64(a.limit), change)
	return a
}

// spanStart is the start of the tally span of ms.
func spanStart(ms int64) int64 {
	r := ms % window.SpanMs
	if r < 0 {
		r += window.SpanMs
	}
	return ms - r
}

// publish makes limit the one Entry reads, changed by change.
func (a *adaptiveLimiter) publish(limit int64, change AdaptiveChange) {
	a.state.Store(&adaptiveState{limit: limit, change: change,
		blocked: &BlockError{reason: ReasonAdaptive, rule: a.rule.Name, limit: limit, tally: a.blocks}})
}

// admits reports whether count more calls fit the limit with inFlight
// calls in flight, and the block if they do not.
func (a *adaptiveLimiter) admits(inFlight, count int64) (bool, *BlockError) {
	st := a.state.Load()
	if inFlight+count <= st.limit {
		return true, nil
	}
	return false, st.blocked
}

// observe lets the limiter learn from the spans over by nowMs, when a
// call completes: at most once per span, by the call that gets there
// first.
func (a *adaptiveLimiter) observe(nowMs int64) {
	if nowMs < a.nextMs.Load() || !a.updating.CompareAndSwap(false, true) {
		return
	}
	a.learn(nowMs)
	a.updating.Store(false)
}

// learn reads the spans from fromMs to the one of nowMs, which it leaves
// out as it is not over, and moves the limit on them. The caller holds
// updating.
//
// The no-load latency falls at once to a faster span's latency, and
// rises only from spans in which the calls in flight were at most half
// the limit, or at most its least: at load, latency shows the
// queue the limit lets build, not the resource's own pace, and learning
// from it would let the limit drift up with the queue (as Gradient2's
// long-window average does under sustained load). The calls in flight
// over a span are its completed calls' response times over its length
// (Little's law), so the rule counts nothing of its own per call.
func (a *adaptiveLimiter) learn(nowMs int64) {
	start := spanStart(nowMs)
	if start < a.nextMs.Load() {
		return
	}
	a.nextMs.Store(start + window.SpanMs)
	// The minute's row keeps the limit the span ended with and the one
	// the next starts with.
	a.observeLimit(a.state.Load().limit)
	defer func() { a.observeLimit(a.state.Load().limit) }()
	sums := a.res.second.SumSpans(a.fromMs, start)
	completes, elapsedMs := sums[window.Complete], start-a.fromMs
	if completes < adaptiveMinSamples && elapsedMs < adaptiveMaxWindowMs {
		return
	}
	a.fromMs = start
	if completes == 0 {
		return
	}
	r := &a.rule
	short := max(float64(sums[window.RtSum])/float64(completes), rttFloorMs)
	inFlight := float64(sums[window.RtSum]) / float64(min(elapsedMs, adaptiveMaxWindowMs))
	lightLoad := inFlight <= a.limit/2
	switch {
	case a.noLoadRttMs == 0:
		a.noLoadRttMs = short
	case short < a.noLoadRttMs:
		a.noLoadRttMs += (short - a.noLoadRttMs) * noLoadFall
	case lightLoad || inFlight <= float64(r.MinLimit):
		a.noLoadRttMs += (short - a.noLoadRttMs) * noLoadRise
	}
	a.shortRtt.Store(math.Float64bits(short))
	a.noLoadRtt.Store(math.Float64bits(a.noLoadRttMs))
	if lightLoad {
		// The limit is not what holds the calls back: nothing shows
		// whether more would fit.
		return
	}
	target := short <= r.Tolerance*a.noLoadRttMs
	limit, cause := a.limit, AdaptiveHeadroom
	switch r.Algorithm {
	case AdaptiveAIMD:
		switch {
		case sums[window.Error]*10 > completes:
			limit, cause = limit*r.BackoffRatio, AdaptiveErrors
		case !target:
			limit, cause = limit*r.BackoffRatio, AdaptiveLatency
		default:
			limit++
		}
	default:
		gradient := max(adaptiveMinGradient, min(1, r.Tolerance*a.noLoadRttMs/short))
		estimate := limit * gradient
		if target {
			estimate += math.Sqrt(limit)
		} else {
			cause = AdaptiveLatency
		}
		limit = limit*(1-r.Smoothing) + estimate*r.Smoothing
	}
	a.limit = min(max(limit, float64(r.MinLimit)), float64(r.MaxLimit))
	if from, to := a.state.Load().limit, int64(a.limit); to != from {
		a.publish(to, AdaptiveChange{AtMs: nowMs, From: from, To: to, Cause: cause, ShortRttMs: short, NoLoadRttMs: a.noLoadRttMs})
	}
}

// status is the limiter's status, the resource's calls in flight read now.
func (a *adaptiveLimiter) status() AdaptiveStatus {
	st := a.state.Load()
	return AdaptiveStatus{Rule: a.rule.Name, Resource: a.rule.Resource, Algorithm: a.rule.Algorithm, Mode: a.rule.Mode,
		Limit: st.limit, InFlight: a.res.Concurrency(),
		ShortRttMs: math.Float64frombits(a.shortRtt.Load()), NoLoadRttMs: math.Float64frombits(a.noLoadRtt.Load()),
		LastChange: st.change}
}

// LoadAdaptiveConcurrencyRules replaces every adaptive concurrency rule
// with rules, as LoadFlowRules does for flow rules.
func (e *Engine) LoadAdaptiveConcurrencyRules(rules []AdaptiveConcurrencyRule) error {
	loaded, err := validateAdaptiveRules("rules", rules)
	if err != nil {
		return err
	}
	c := newRuleChange(len(loaded))
	for _, rule := range loaded {
		rc := c.of(rule.Resource)
		rc.adaptive = append(rc.adaptive, rule)
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.commitEvery(c, adaptiveKind)
	return nil
}

// ValidateAdaptiveConcurrencyRules checks rules as
// LoadAdaptiveConcurrencyRules would, without loading them.
func ValidateAdaptiveConcurrencyRules(rules []AdaptiveConcurrencyRule) error {
	_, err := validateAdaptiveRules("rules", rules)
	return err
}

// validateAdaptiveRules validates adaptive rules as a set.
func validateAdaptiveRules(prefix string, rules []AdaptiveConcurrencyRule) ([]AdaptiveConcurrencyRule, error) {
	return validateSet(AdaptiveConcurrencyKind, prefix, rules, adaptiveSetCheck(prefix, false))
}

// adaptiveSetCheck is the check of a set of adaptive rules: one per
// resource, since a resource has one count of calls in flight to limit.
func adaptiveSetCheck(prefix string, _ bool) func(i int, rule AdaptiveConcurrencyRule, errs *fieldErrors) {
	first := map[string]int{}
	return func(i int, rule AdaptiveConcurrencyRule, errs *fieldErrors) {
		if j, taken := first[rule.Resource]; taken {
			errs.add(fmt.Sprintf("%s[%d].resource", prefix, i), fmt.Sprintf("has an adaptive concurrency rule already (%s[%d]): at most one", prefix, j))
			return
		}
		first[rule.Resource] = i
	}
}

// AdaptiveConcurrencyRules returns the loaded adaptive concurrency rules,
// defaults filled in, in the order of AdaptiveLimits.
func (e *Engine) AdaptiveConcurrencyRules() []AdaptiveConcurrencyRule {
	var rules []AdaptiveConcurrencyRule
	for _, a := range e.loadedAdaptive() {
		rules = append(rules, a.rule)
	}
	return rules
}

// AdaptiveLimits returns the status of every loaded adaptive concurrency
// rule, by resource in the order they got their first rule.
func (e *Engine) AdaptiveLimits() []AdaptiveStatus {
	limiters := e.loadedAdaptive()
	out := make([]AdaptiveStatus, len(limiters))
	for i, a := range limiters {
		out[i] = a.status()
	}
	return out
}

func (e *Engine) loadedAdaptive() []*adaptiveLimiter {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	var limiters []*adaptiveLimiter
	for _, set := range e.book.inOrder(maps.Keys(e.book.entries)) {
		if a := set.adaptive(); a != nil {
			limiters = append(limiters, a)
		}
	}
	return limiters
}

// AdaptiveLimit returns the status of the resource's adaptive concurrency
// rule, and false if it has none in force.
func (r *Resource) AdaptiveLimit() (AdaptiveStatus, bool) {
	if r == nil {
		return AdaptiveStatus{}, false
	}
	a := r.current().rules.Load().adaptive()
	if a == nil {
		return AdaptiveStatus{}, false
	}
	return a.status(), true
}
