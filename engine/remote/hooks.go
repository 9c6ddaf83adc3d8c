package remote

import (
	"errors"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// Hooks let a Client sync and report for something other than an engine
// of its own, such as another flow-control library's rules and
// statistics: the same long poll, cache, backoff and report outbox, with
// the rule sets handed to Load and the figures read from Stats.
type Hooks struct {
	// Load puts a snapshot's rules in force in place of the previous
	// set, from the server or the cache; an error refuses the set whole,
	// which is then neither cached nor asked for again until the
	// revision moves. Required.
	Load func(wire.Snapshot) error
	// Stats are the figures reported. Required.
	Stats Stats
}

// Stats is what a Client reports: the figures of the resources, by
// minute and over the last second.
type Stats interface {
	// NowMs is the time of the minutes, in Unix milliseconds: a minute
	// is over, and reported, once NowMs is past its end.
	NowMs() int64
	// CollectMinutes hands out what was recorded since the previous
	// call, per resource and minute, as engine.Engine.CollectMinutes
	// does: the parts of a minute add up with engine.Counts.Merge.
	CollectMinutes() []engine.MinuteStat
	// Live appends to dst the last second's figures of every resource
	// with traffic or calls in flight, and returns it.
	Live(dst []wire.ReportLive) []wire.ReportLive
}

// HotStats is a Stats that also reports its hotspot rules' hottest
// values, so that the server's hot-values panel sums the fleet; a Client
// reports none for a Stats without it.
type HotStats interface {
	// HotValues appends to dst each hotspot rule's hottest values over
	// the last minute, at most wire.MaxReportHotValues per ranking, and
	// returns it.
	HotValues(dst []wire.ReportHotValues) []wire.ReportHotValues
}

// hotValuesOf is what stats reports of its hot values: nil without
// HotStats, and at most wire.MaxReportHotRules rules.
func hotValuesOf(stats Stats) []wire.ReportHotValues {
	hs, ok := stats.(HotStats)
	if !ok {
		return nil
	}
	hot := hs.HotValues(nil)
	return hot[:min(len(hot), wire.MaxReportHotRules)]
}

// NewWith is New for a Client that runs no engine: it syncs the rules into
// hooks.Load and reports hooks.Stats. Its Engine is nil, and
// cfg.Engine is not used.
func NewWith(cfg Config, hooks Hooks) (*Client, error) {
	if hooks.Load == nil || hooks.Stats == nil {
		return nil, errors.New("remote: Hooks.Load and Hooks.Stats are required")
	}
	return newClient(cfg, &hooks)
}

// engineStats is the Stats of a Client's own engine.
type engineStats struct{ e *engine.Engine }

func (s engineStats) NowMs() int64                        { return s.e.Clock().NowMs() }
func (s engineStats) CollectMinutes() []engine.MinuteStat { return s.e.CollectMinutes() }

func (s engineStats) Live(dst []wire.ReportLive) []wire.ReportLive {
	for _, res := range s.e.Resources() {
		if l := res.Live(); l != (engine.LiveStats{}) {
			dst = append(dst, wire.ReportLive{Resource: res.Name(), LiveStats: wire.LiveStatsOf(l)})
		}
	}
	return dst
}

func (s engineStats) HotValues(dst []wire.ReportHotValues) []wire.ReportHotValues {
	for _, res := range s.e.Resources() {
		if hot := res.HotValues(wire.MaxReportHotValues); len(hot) > 0 {
			dst = append(dst, wire.HotValuesOf(res.Name(), hot)...)
		}
	}
	return dst
}
