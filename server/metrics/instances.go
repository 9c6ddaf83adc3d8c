package metrics

import (
	"context"
	"maps"
	"slices"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// InstanceLiveMs is how long an instance's live figures count after its
// report: instances report every second, so a few missed reports leave
// their traffic in the live figures, and a stopped instance's leaves them
// soon after.
const InstanceLiveMs = 3000

// instanceLive is the live figures an instance reported last.
type instanceLive struct {
	atMs    int64
	figures map[string]engine.LiveStats
}

// instanceHot is an instance's last reported hot values, by resource.
type instanceHot struct {
	atMs       int64
	byResource map[string][]engine.HotValues
}

// AddInstanceMinutes adds the finished minutes an instance reported,
// instanceID being its registry key, to the history: at once, in the
// store's summed rows and the instance's own. A minute of a resource the
// instance reported before (a retry) is counted once. The store keeps at
// most the engine's MaxResources names: a new name beyond is counted under
// engine.OverflowResource (store.AddInstanceMinutes), and a warning says
// so at most once a minute. The new minutes count in the fleet's
// Prometheus counters under app. It returns how many minutes were new.
func (p *Pipeline) AddInstanceMinutes(ctx context.Context, instanceID int64, app string, minutes []store.MinuteDelta) (int, error) {
	n, err := p.store.AddInstanceMinutes(ctx, instanceID, minutes, p.engine.MaxResources())
	if err != nil {
		return 0, err
	}
	p.fleet.add(app, n.Counts, n.Blocks, p.engine.MaxResources())
	if n.Folded > 0 {
		p.warnFolded(minutes, n.Folded)
	}
	return n.Added, nil
}

// warnFolded warns, at most once a minute, that a report's minutes of new
// names were counted under engine.OverflowResource.
func (p *Pipeline) warnFolded(minutes []store.MinuteDelta, folded int) {
	if !p.foldWarn.Pass(p.NowMs()) {
		return
	}
	p.logger.Warn("resources: the database holds its maximum of resources; instances' minutes of new ones are counted under "+engine.OverflowResource+
		" (raise --max-resources if these names are meant to be resources of their own)",
		"minutes", folded, "maxResources", p.engine.MaxResources(), "example", minutes[len(minutes)-1].Resource)
}

// SetInstanceLive replaces the live figures of instance uid, by resource:
// the live figures are the engine's plus those of every instance that
// reported within InstanceLiveMs. A resource with figures is listed from
// then on, as one the engine counted would be; while the pipeline knows
// the engine's MaxResources resources, the figures of a new one count
// under engine.OverflowResource instead, so that reports cannot grow the
// pipeline's memory without bound.
func (p *Pipeline) SetInstanceLive(uid string, figures map[string]engine.LiveStats) {
	nowMs := p.NowMs()
	p.mu.Lock()
	kept := make(map[string]engine.LiveStats, len(figures))
	for name, l := range figures {
		if l == (engine.LiveStats{}) {
			continue
		}
		tally, known := p.resources[name]
		if !known && len(p.resources) >= p.engine.MaxResources() {
			name = engine.OverflowResource
			tally, known = p.resources[name]
		}
		if !known {
			tally = &resourceTally{firstSeenMs: nowMs}
			p.resources[name] = tally
			p.unstored[name] = struct{}{}
		}
		tally.lastSeenMs = max(tally.lastSeenMs, nowMs)
		sum := kept[name]
		addLive(&sum, l)
		kept[name] = sum
	}
	p.mu.Unlock()
	p.liveMu.Lock()
	p.instanceLive[uid] = &instanceLive{atMs: nowMs, figures: kept}
	p.liveMu.Unlock()
}

// reportedLive sums, by resource, the live figures of the instances that
// reported within InstanceLiveMs, and forgets the others; nil if none
// did.
func (p *Pipeline) reportedLive() map[string]engine.LiveStats {
	nowMs := p.NowMs()
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	var sums map[string]engine.LiveStats
	for uid, in := range p.instanceLive {
		if nowMs-in.atMs > InstanceLiveMs {
			delete(p.instanceLive, uid)
			continue
		}
		if sums == nil {
			sums = map[string]engine.LiveStats{}
		}
		for name, l := range in.figures {
			sum := sums[name]
			addLive(&sum, l)
			sums[name] = sum
		}
	}
	return sums
}

// eachLive calls fn with the live figures of every resource with traffic
// or calls in flight, in the engine or in a reporting instance: the
// engine's resources first, then those only instances count, by name.
func (p *Pipeline) eachLive(fn func(name string, live engine.LiveStats)) {
	reported := p.reportedLive()
	for _, r := range p.engine.Resources() {
		l := r.Live()
		if extra, ok := reported[r.Name()]; ok {
			addLive(&l, extra)
			delete(reported, r.Name())
		}
		if l != (engine.LiveStats{}) {
			fn(r.Name(), l)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(reported)) {
		if l := reported[name]; l != (engine.LiveStats{}) {
			fn(name, l)
		}
	}
}

// liveOf is the live figures of one resource, the engine's and the
// reporting instances'.
func (p *Pipeline) liveOf(name string) engine.LiveStats {
	var l engine.LiveStats
	if r := p.engine.Lookup(name); r != nil {
		l = r.Live()
	}
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	nowMs := p.NowMs()
	for _, in := range p.instanceLive {
		if nowMs-in.atMs <= InstanceLiveMs {
			addLive(&l, in.figures[name])
		}
	}
	return l
}

// addLive adds o's figures to l: rates and calls in flight add, the mean
// response time is weighted by the completions.
func addLive(l *engine.LiveStats, o engine.LiveStats) {
	if complete := l.CompleteQps + o.CompleteQps; complete > 0 {
		l.AvgRtMs = (l.AvgRtMs*l.CompleteQps + o.AvgRtMs*o.CompleteQps) / complete
	}
	l.PassQps += o.PassQps
	l.BlockQps += o.BlockQps
	l.ShadowBlockQps += o.ShadowBlockQps
	l.CompleteQps += o.CompleteQps
	l.ErrorQps += o.ErrorQps
	l.Concurrency += o.Concurrency
}

// SetInstanceHot replaces the hot values instance uid reported, by
// resource; they count for InstanceLiveMs, as its live figures do. An
// empty report forgets the instance's.
func (p *Pipeline) SetInstanceHot(uid string, byResource map[string][]engine.HotValues) {
	nowMs := p.NowMs()
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	if len(byResource) == 0 {
		delete(p.instanceHot, uid)
		return
	}
	p.instanceHot[uid] = &instanceHot{atMs: nowMs, byResource: byResource}
}

// ReportedHot returns the hot values of resource that each instance
// reported within InstanceLiveMs, one list per instance, and forgets the
// instances that did not report since.
func (p *Pipeline) ReportedHot(resource string) [][]engine.HotValues {
	nowMs := p.NowMs()
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	var out [][]engine.HotValues
	for uid, in := range p.instanceHot {
		if nowMs-in.atMs > InstanceLiveMs {
			delete(p.instanceHot, uid)
			continue
		}
		if hot := in.byResource[resource]; len(hot) > 0 {
			out = append(out, hot)
		}
	}
	return out
}
