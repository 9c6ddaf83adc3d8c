package wire

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// Snapshot is the answer of GET /rules/snapshot (docs/api.md,
// "Snapshots"): the rules an app's engines run, read with DecodeRules, and
// the revision they are at.
type Snapshot struct {
	Revision int64             `json:"revision"`
	Rules    []json.RawMessage `json:"rules"`
}

// Report is the body of POST /instances/report (docs/api.md,
// "Instances"): who reports, its finished minutes and its last second.
type Report struct {
	Instance ReportInstance `json:"instance"`
	Minutes  []ReportMinute `json:"minutes"`
	Live     []ReportLive   `json:"live"`
	// HotValues are the hottest values of the instance's hotspot rules
	// over the last minute; absent from the reports of instances older
	// than the field, and of those without a hotspot rule.
	HotValues []ReportHotValues `json:"hotValues,omitempty"`
}

// Bounds of a report's hot values: the server refuses a report beyond
// them (422 naming the field).
const (
	// MaxReportHotRules is the most hotspot rules one report carries.
	MaxReportHotRules = 1000
	// MaxReportHotValues is the most values of one ranking (byPass,
	// byBlock) of a rule: enough for the server's panel to sum a fleet's
	// top values, as few as keep a report small.
	MaxReportHotValues = 20
	// MaxReportHotValueBytes bounds a value's length.
	MaxReportHotValueBytes = 256
)

// ReportHotValues is one hotspot rule's hottest values over the last
// minute, as engine.Resource.HotValues gives them.
type ReportHotValues struct {
	Resource    string           `json:"resource"`
	Rule        string           `json:"rule"`
	ParamKey    string           `json:"paramKey"`
	Approximate bool             `json:"approximate"`
	ByPass      []ReportHotValue `json:"byPass"`
	ByBlock     []ReportHotValue `json:"byBlock"`
}

// ReportHotValue is one value's passes and blocks over the last minute.
type ReportHotValue struct {
	Value string `json:"value"`
	Pass  int64  `json:"pass"`
	Block int64  `json:"block"`
}

// HotValuesOf is a resource's hot values as a report carries them, at
// most MaxReportHotValues per ranking and none longer than
// MaxReportHotValueBytes (a longer value's ranking entry is left out).
func HotValuesOf(resource string, hot []engine.HotValues) []ReportHotValues {
	out := make([]ReportHotValues, 0, len(hot))
	for _, h := range hot {
		out = append(out, ReportHotValues{Resource: resource, Rule: h.Rule, ParamKey: h.ParamKey,
			Approximate: h.Approximate, ByPass: reportHotValues(h.ByPass), ByBlock: reportHotValues(h.ByBlock)})
	}
	return out
}

func reportHotValues(values []engine.HotValue) []ReportHotValue {
	out := make([]ReportHotValue, 0, min(len(values), MaxReportHotValues))
	for _, v := range values {
		if len(out) == MaxReportHotValues {
			break
		}
		if len(v.Value) <= MaxReportHotValueBytes {
			out = append(out, ReportHotValue{Value: v.Value, Pass: v.Pass, Block: v.Block})
		}
	}
	return out
}

// ReportInstance is who reports.
type ReportInstance struct {
	ID            string `json:"id"`
	App           string `json:"app"`
	Hostname      string `json:"hostname"`
	PID           int    `json:"pid"`
	Version       string `json:"version"`
	RulesRevision int64  `json:"rulesRevision"`
}

// ReportMinute is one resource's figures of one finished minute. The
// server counts a minute once per (instance, resource, time), so it is
// only ever sent whole, and sent again as it was if a report fails.
type ReportMinute struct {
	Resource string    `json:"resource"`
	Time     time.Time `json:"time" format:"date-time"`
	Counts
	// BlockedBy splits Block by the rule that blocked, at most
	// MaxReportBlocks entries (BlocksOf folds the rest); absent without
	// blocks, and from the reports of instances older than the field.
	BlockedBy []ReportBlocks `json:"blockedBy,omitempty"`
}

// MaxReportBlocks is the most entries a report's minute splits its blocks
// into: a resource's rules that blocked in the minute, and what no rule of
// it decided.
const MaxReportBlocks = 64

// ReportBlocks is engine.RuleBlocks as a report's minute carries it.
type ReportBlocks struct {
	Reason  string `json:"reason"`
	Rule    string `json:"rule"`
	Blocked int64  `json:"blocked"`
}

// BlocksOf is list as a report carries it: past MaxReportBlocks entries,
// the rules that blocked least are summed per reason under the rule "",
// so that the entries still sum to the minute's blocks.
func BlocksOf(list []engine.RuleBlocks) []ReportBlocks {
	if len(list) == 0 {
		return nil
	}
	sorted := slices.Clone(list)
	if len(sorted) > MaxReportBlocks {
		slices.SortStableFunc(sorted, func(a, b engine.RuleBlocks) int { return cmp.Compare(b.Blocked, a.Blocked) })
		// Room for one folded entry per reason.
		kept := MaxReportBlocks - len(engine.BlockReasons)
		folded := make([]engine.RuleBlocks, 0, len(engine.BlockReasons))
		for _, b := range sorted[kept:] {
			folded = engine.MergeBlocks(folded, []engine.RuleBlocks{{Reason: b.Reason, Blocked: b.Blocked}})
		}
		sorted = engine.MergeBlocks(sorted[:kept:kept], folded)
	}
	out := make([]ReportBlocks, len(sorted))
	for i, b := range sorted {
		out[i] = ReportBlocks{Reason: string(b.Reason), Rule: b.Rule, Blocked: b.Blocked}
	}
	return out
}

// IsBlockReason reports whether reason is one a block has.
func IsBlockReason(reason string) bool {
	return slices.Contains(engine.BlockReasons[:], engine.BlockReason(reason))
}

// Counts is engine.Counts as a report's minute carries it.
type Counts struct {
	Pass           int64 `json:"pass"`
	Block          int64 `json:"block"`
	ShadowBlock    int64 `json:"shadowBlock"`
	Complete       int64 `json:"complete"`
	Error          int64 `json:"error"`
	RtSumMs        int64 `json:"rtSumMs"`
	MinRtMs        int64 `json:"minRtMs"`
	MaxRtMs        int64 `json:"maxRtMs"`
	MaxConcurrency int64 `json:"maxConcurrency"`
	// BusiestSecond is absent from the reports of instances older than
	// the field.
	BusiestSecond int64 `json:"busiestSecond,omitempty"`
	// AdaptiveLimitMin, AdaptiveLimitMax and AdaptiveLimitLast are absent
	// for a resource without an adaptive concurrency rule, and from the
	// reports of instances older than the fields.
	AdaptiveLimitMin  int64 `json:"adaptiveLimitMin,omitempty"`
	AdaptiveLimitMax  int64 `json:"adaptiveLimitMax,omitempty"`
	AdaptiveLimitLast int64 `json:"adaptiveLimitLast,omitempty"`
}

// CountsOf is c as a report carries it.
func CountsOf(c engine.Counts) Counts {
	return Counts{Pass: c.Pass, Block: c.Block, ShadowBlock: c.ShadowBlock, Complete: c.Complete, Error: c.Error,
		RtSumMs: c.RtSumMs, MinRtMs: c.MinRtMs, MaxRtMs: c.MaxRtMs, MaxConcurrency: c.MaxConcurrency,
		BusiestSecond: c.BusiestSecond, AdaptiveLimitMin: c.AdaptiveLimitMin, AdaptiveLimitMax: c.AdaptiveLimitMax,
		AdaptiveLimitLast: c.AdaptiveLimitLast}
}

// ReportLive is one resource's figures over the last second.
type ReportLive struct {
	Resource string `json:"resource"`
	LiveStats
}

// LiveStats is engine.LiveStats as a report and the API carry it.
type LiveStats struct {
	PassQps        float64 `json:"passQps" format:"double"`
	BlockQps       float64 `json:"blockQps" format:"double"`
	ShadowBlockQps float64 `json:"shadowBlockQps" format:"double"`
	CompleteQps    float64 `json:"completeQps" format:"double"`
	ErrorQps       float64 `json:"errorQps" format:"double"`
	AvgRtMs        float64 `json:"avgRtMs" format:"double"`
	Concurrency    int64   `json:"concurrency"`
}

// LiveStatsOf is l as a report carries it.
func LiveStatsOf(l engine.LiveStats) LiveStats {
	return LiveStats{PassQps: l.PassQps, BlockQps: l.BlockQps, ShadowBlockQps: l.ShadowBlockQps,
		CompleteQps: l.CompleteQps, ErrorQps: l.ErrorQps, AvgRtMs: l.AvgRtMs, Concurrency: l.Concurrency}
}
