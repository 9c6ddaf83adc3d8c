package server

import "github.com/sluicehq/sluice/engine"

// Calls counts what became of a resource's calls over a span of time, in
// every figure of counted calls the API answers.
type Calls struct {
	Pass        int64 `json:"pass" example:"7200"`
	Block       int64 `json:"block" example:"180"`
	ShadowBlock int64 `json:"shadowBlock" example:"0"`
	Complete    int64 `json:"complete" example:"7190"`
	Error       int64 `json:"error" example:"40"`
}

// callsOf is c as the API answers it.
func callsOf(c engine.Calls) Calls {
	return Calls{Pass: c.Pass, Block: c.Block, ShadowBlock: c.ShadowBlock, Complete: c.Complete, Error: c.Error}
}

// LiveStats is a resource's traffic over the last second.
type LiveStats struct {
	PassQps        float64 `json:"passQps" example:"120" format:"double"`
	BlockQps       float64 `json:"blockQps" example:"3" format:"double"`
	ShadowBlockQps float64 `json:"shadowBlockQps" example:"0" format:"double"`
	CompleteQps    float64 `json:"completeQps" example:"119" format:"double"`
	ErrorQps       float64 `json:"errorQps" example:"1" format:"double"`
	// AvgRtMs is the mean response time of the completed calls, 0 if none.
	AvgRtMs float64 `json:"avgRtMs" example:"12.5" format:"double"`
	// Concurrency is the calls in flight.
	Concurrency int64 `json:"concurrency" example:"4"`
	// AdaptiveLimit is the calls in flight the resource's adaptive
	// concurrency rule allows now (of the server's engine), absent
	// without one; AdaptiveChange says its latest change in words.
	AdaptiveLimit  int64  `json:"adaptiveLimit,omitempty" example:"96"`
	AdaptiveChange string `json:"adaptiveChange,omitempty" example:"latency rose 40% over its no-load level: limit 120 → 96"`
}

// liveStatsOf is l as the API answers it.
func liveStatsOf(l engine.LiveStats) LiveStats {
	s := LiveStats{PassQps: l.PassQps, BlockQps: l.BlockQps, ShadowBlockQps: l.ShadowBlockQps,
		CompleteQps: l.CompleteQps, ErrorQps: l.ErrorQps, AvgRtMs: l.AvgRtMs, Concurrency: l.Concurrency,
		AdaptiveLimit: l.AdaptiveLimit}
	if l.AdaptiveChange.AtMs != 0 {
		s.AdaptiveChange = l.AdaptiveChange.Explain()
	}
	return s
}

// RuleBlocks is the calls one rule blocked.
type RuleBlocks struct {
	// Reason is the kind of rule: clusterFallback is a cluster flow rule
	// blocking on its local fallback while the shared count is out of
	// reach; system, with rule "", is what no rule of the resource
	// decided (the system rules, which guard every inbound call, and the
	// RLS service's per-request limit overrides).
	Reason string `json:"reason" enums:"flow,concurrency,circuitBreaker,hotspot,authority,system,adaptive,clusterFallback" example:"flow"`
	// Rule is the rule's name ("" for reason system).
	Rule    string `json:"rule" example:"r1"`
	Blocked int64  `json:"blocked" example:"12"`
}

// ruleBlocksOf is list as the API writes it.
func ruleBlocksOf(list []engine.RuleBlocks) []RuleBlocks {
	if len(list) == 0 {
		return nil
	}
	out := make([]RuleBlocks, len(list))
	for i, b := range list {
		out[i] = RuleBlocks{Reason: string(b.Reason), Rule: b.Rule, Blocked: b.Blocked}
	}
	return out
}
