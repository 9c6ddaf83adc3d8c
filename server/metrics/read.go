package metrics

import (
	"context"
	"maps"
	"slices"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// readStore runs fn with no flush under way, so that the store and the
// pending batch hold every delta exactly once, after a collection unless
// the last one is recent enough for a read: in the current minute (so the
// last finished minute is all in), with no resource created since (so
// every resource the engine tracks has a tally). A collection walks every
// resource; reads should not pay for it each time.
func (p *Pipeline) readStore(fn func() error) error {
	p.flushMu.RLock()
	defer p.flushMu.RUnlock()
	created, nowMs := p.engine.ResourcesCreated(), p.NowMs()
	p.mu.Lock()
	recent := created == p.collectedCreated && floorMs(p.collectedMs, store.MinuteMs) == floorMs(nowMs, store.MinuteMs)
	p.mu.Unlock()
	if !recent {
		p.Collect()
	}
	return fn()
}

// unstoredNames returns the names of the resources collected but not yet
// written by a flush. Call it within readStore.
func (p *Pipeline) unstoredNames() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Collect(maps.Keys(p.unstored))
}

// catalogued notes that the store's catalogue holds names already, as it
// may for a resource seen before a restart: no flush needs to say so.
func (p *Pipeline) catalogued(names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range names {
		delete(p.unstored, name)
	}
}

// seen returns the tallies of names that have one.
func (p *Pipeline) seen(names []string) map[string]resourceTally {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]resourceTally, len(names))
	for _, name := range names {
		if t, ok := p.resources[name]; ok {
			out[name] = *t
		}
	}
	return out
}

// collected reports whether the pipeline holds figures of the resource,
// collected from the engine or an instance, that no flush may have stored
// yet: a resource the resource list holds though the catalogue does not.
// That the engine tracks it is not enough: the engine keeps a resource a
// deleted rule named, though it never had traffic.
func (p *Pipeline) collected(name string) bool {
	var tallied bool
	_ = p.readStore(func() error {
		tallied = len(p.seen([]string{name})) > 0
		return nil
	})
	return tallied
}

// minuteFigures returns the named resources' figures for the minute that
// starts at startMs: what is stored plus what is not flushed yet. Call it
// within readStore.
func (p *Pipeline) minuteFigures(ctx context.Context, startMs int64, names []string) (map[string]engine.Counts, error) {
	figures, err := p.store.MinuteMetrics(ctx, startMs, names)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range names {
		if d, ok := p.pending[minuteKey{resource: name, startMs: startMs}]; ok {
			c := figures[name]
			c.Merge(d.Counts)
			figures[name] = c
		}
	}
	return figures, nil
}

// minuteBlocks returns the named resources' blocks per rule and reason in
// the minute that starts at startMs, stored and not flushed yet alike.
// Call it within readStore.
func (p *Pipeline) minuteBlocks(ctx context.Context, startMs int64, names []string) (map[string][]engine.RuleBlocks, error) {
	blocks, err := p.store.MinuteBlocks(ctx, startMs, names)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range names {
		if d, ok := p.pending[minuteKey{resource: name, startMs: startMs}]; ok && len(d.BlockedBy) > 0 {
			blocks[name] = engine.MergeBlocks(blocks[name], d.BlockedBy)
		}
	}
	return blocks, nil
}

// floorMs rounds ms (>= 0) down to a multiple of step.
func floorMs(ms, step int64) int64 { return ms - ms%step }

// ceilMs rounds ms (>= 0) up to a multiple of step.
func ceilMs(ms, step int64) int64 { return floorMs(ms+step-1, step) }
