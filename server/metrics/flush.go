package metrics

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/store"
)

// finalFlushTimeout bounds the flush on shutdown, which gets its own time:
// the requests in flight may have used up the caller's.
const finalFlushTimeout = 10 * time.Second

// Flush collects and writes everything pending, and the heartbeats of
// the minutes since the last flush, in one store write. If it fails, what
// it held stays pending for the next flush.
func (p *Pipeline) Flush(ctx context.Context) error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	nowMinute := floorMs(p.NowMs(), store.MinuteMs)
	beats := p.unbeaten(nowMinute)
	p.Collect()
	p.mu.Lock()
	batch := p.pending
	p.pending = map[minuteKey]*store.MinuteDelta{}
	p.mu.Unlock()
	deltas := make([]store.MinuteDelta, 0, len(batch))
	for _, k := range slices.SortedFunc(maps.Keys(batch), compareMinuteKeys) {
		deltas = append(deltas, *batch[k])
	}
	if err := p.store.AddFlush(ctx, store.Flush{Deltas: deltas, HeartbeatsMs: beats}); err != nil {
		p.mu.Lock()
		for _, d := range batch {
			mergePending(p.pending, d)
		}
		p.mu.Unlock()
		return err
	}
	p.beatMs = max(p.beatMs, nowMinute)
	if len(batch) > 0 {
		p.stored(batch)
	}
	return nil
}

// unbeaten returns the minutes from the last one whose heartbeat is
// written to nowMinute, as far back as the retention: the server has been
// up through them. The caller holds flushMu.
func (p *Pipeline) unbeaten(nowMinute int64) []int64 {
	var minutes []int64
	for m := max(p.beatMs+store.MinuteMs, nowMinute-p.retention.Milliseconds()); m <= nowMinute; m += store.MinuteMs {
		minutes = append(minutes, m)
	}
	return minutes
}

// FinalFlush writes what is still pending as the server stops, with its
// own time: ctx may be all but spent on the requests in flight.
func (p *Pipeline) FinalFlush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
	defer cancel()
	return p.Flush(ctx)
}

// stored notes that batch is written, and forgets the tallies of the
// resources the engine no longer tracks whose figures are all stored, so
// that the tallies stay as bounded as the engine.
func (p *Pipeline) stored(batch map[minuteKey]*store.MinuteDelta) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range batch {
		delete(p.unstored, k.resource)
	}
	pending := make(map[string]bool, len(p.pending))
	for k := range p.pending {
		pending[k.resource] = true
	}
	for name := range p.resources {
		if _, unstored := p.unstored[name]; !unstored && !pending[name] && p.engine.Lookup(name) == nil {
			delete(p.resources, name)
		}
	}
}

func compareMinuteKeys(a, b minuteKey) int {
	return cmp.Or(cmp.Compare(a.resource, b.resource), cmp.Compare(a.startMs, b.startMs))
}
