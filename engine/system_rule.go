package engine

import "math"

// ReasonSystem is a system rule: the process is past a system rule's
// trigger, and the call is inbound (WithInbound).
const ReasonSystem BlockReason = "system"

// SystemMetric is the figure of the engine's process a system rule
// watches.
type SystemMetric string

// System metrics, in sentinel-golang's order (its metricType 0 … 4).
const (
	// SystemLoad is the one-minute load average divided by the CPUs.
	SystemLoad SystemMetric = "load"
	// SystemAvgRt is the mean response time, in milliseconds, of the
	// inbound calls completed in the last second.
	SystemAvgRt SystemMetric = "avgRt"
	// SystemConcurrency is the inbound calls in flight.
	SystemConcurrency SystemMetric = "concurrency"
	// SystemInboundQPS is the inbound calls let through in the last
	// second.
	SystemInboundQPS SystemMetric = "inboundQps"
	// SystemCPUUsage is the process's CPU time over the last second as a
	// ratio of its CPU quota (its cgroup's, else every CPU).
	SystemCPUUsage SystemMetric = "cpuUsage"
)

// SystemStrategy is what a system rule does past its trigger.
type SystemStrategy string

// System strategies.
const (
	// SystemNoAdaptive blocks every inbound call past the trigger.
	SystemNoAdaptive SystemStrategy = "noAdaptive"
	// SystemBBR, past the trigger, still admits an inbound call while the
	// inbound calls in flight are at most 1 or at most what the process
	// completes at best: its most completions per second × its least
	// response time, both over the last second (Sentinel's BBR check). It
	// applies to load and cpuUsage, and is their default.
	SystemBBR SystemStrategy = "bbr"
)

// SystemRule guards every inbound call of the engine's process (Entry
// WithInbound) against a figure of the process itself, whatever the
// resource: it has none. Zero values of optional fields mean their
// defaults; the field table (SystemKind) names them in JSON.
type SystemRule struct {
	// Name identifies the rule in block errors.
	Name string
	Mode Mode

	MetricType SystemMetric
	// TriggerCount is the figure past which inbound calls are blocked:
	// calls per second (inboundQps), calls in flight (concurrency),
	// milliseconds (avgRt), a ratio in (0, 1] of the CPU quota (cpuUsage),
	// or the load per CPU (load). A call passes while, with it, the
	// inbound calls or the calls in flight are at most the trigger, and
	// while the other figures are at most the trigger.
	TriggerCount float64
	Strategy     SystemStrategy
	// ExpiresAtMs, if not 0, is when the rule stops applying (see
	// FlowRule.ExpiresAtMs).
	ExpiresAtMs int64
}

// SystemKind is the kind of system rules (SystemRule), which have no
// resource.
var SystemKind = kindOf(Kind{Name: KindSystem, Label: "System", Title: "System rule",
	Help: "protect the whole process: CPU, load, response time, calls in flight", Fields: SystemRuleFields, NoResource: true,
	Doc: "Each engine judges its own process and blocks *inbound* calls past the trigger: `load` is the load average per CPU, " +
		"`cpuUsage` a ratio in (0, 1] of the process's cgroup CPU quota; `bbr`, the default for those two, lets calls through while " +
		"those in flight are at most what the process completes at best. The middleware marks every request it guards inbound, so " +
		"the server's own API is protected by the system rules without an app (admins are still served, and health and login are " +
		"never guarded); checks sent to `POST /check` are not inbound calls of the server and system rules leave them alone.",
	Summary: "past [metricType=load:a load per CPU of][metricType=cpuUsage:a CPU usage of][metricType=avgRt:an average response time (ms) of]" +
		"[metricType=concurrency:inbound calls in flight numbering][metricType=inboundQps:inbound calls per second numbering] {triggerCount}, " +
		"each engine blocks [strategy=bbr:the inbound calls beyond what it completes at best][strategy=noAdaptive:every inbound call]"},
	systemDefaults, checkSystem, setOf[SystemRule]{list: "system",
		rules:  func(set *ResourceRules) *[]SystemRule { return &set.System },
		staged: func(c *ruleChange, _ string) *[]SystemRule { return &c.system }})

// WithDefaults returns the rule with its mode and strategy set if unset.
func (r SystemRule) WithDefaults() SystemRule {
	SystemKind.WithDefaults(&r)
	return r
}

// systemDefaults sets the strategy, whose default is its metric's.
func systemDefaults(r *SystemRule) {
	if r.Strategy == "" {
		r.Strategy = SystemNoAdaptive
		if r.MetricType.sampled() {
			r.Strategy = SystemBBR
		}
	}
}

// sampled reports whether m is a figure the engine samples from the
// operating system, not one it counts.
func (m SystemMetric) sampled() bool { return m == SystemLoad || m == SystemCPUUsage }

// Validate checks the rule as WithDefaults would complete it and returns
// one FieldError for every bad field, named as in JSON.
func (r SystemRule) Validate() []FieldError { return SystemKind.validateOwn(&r) }

// checkSystem checks the trigger, whose range is its metric's, and the
// strategy, which bbr limits to sampled metrics.
func checkSystem(r *SystemRule, errs *fieldErrors) {
	switch {
	case math.IsNaN(r.TriggerCount) || math.IsInf(r.TriggerCount, 0):
	case r.TriggerCount <= 0:
		errs.add("triggerCount", "must be > 0")
	case r.MetricType == SystemCPUUsage && r.TriggerCount > 1:
		errs.add("triggerCount", "must be at most 1 for metricType cpuUsage: a ratio of the CPU quota")
	}
	if r.Strategy == SystemBBR && !r.MetricType.sampled() {
		errs.add("strategy", "bbr applies only to metricType load and cpuUsage")
	}
}
