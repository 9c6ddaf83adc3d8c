package server

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// Defaults and bounds of the metric jobs.
const (
	// DefaultMetricsFlushInterval is how often the minute figures are
	// written: a crash loses at most this much.
	DefaultMetricsFlushInterval = 10 * time.Second
	// DefaultMetricsRetention is how long minute and hour rows are kept.
	DefaultMetricsRetention = 30 * 24 * time.Hour
	// pruneInterval is how often the retention job runs.
	pruneInterval = 10 * time.Minute
	// pruneBatchRows is how many rows one retention transaction deletes,
	// so that a flush never waits long behind it.
	pruneBatchRows = 1000
	// finalFlushTimeout bounds the flush on shutdown, which gets its own
	// time: the requests in flight may have used up the caller's.
	finalFlushTimeout = 10 * time.Second
)

// metricsFlusher is the one consumer of the engine's CollectMinutes. It fans
// every delta out to the batch the next flush writes to the store and to
// the running totals that /metrics exposes, so the two always agree.
type metricsFlusher struct {
	engine *engine.Engine
	store  *store.Store
	logger *slog.Logger

	// flushMu is held for writing by a flush, from taking the pending batch
	// to its commit, and for reading by those who read the store and the
	// pending batch together: they see every delta exactly once.
	flushMu sync.RWMutex

	mu        sync.Mutex // guards the fields below
	pending   map[minuteKey]*store.MinuteDelta
	resources map[string]*resourceTally
	// unstored names the resources collected but not yet written by a
	// flush of this process: those the store's catalogue may lack.
	unstored map[string]struct{}
	// collectedMs and collectedCreated are when the last collection ran
	// and the engine's count of created resources just before it.
	collectedMs      int64
	collectedCreated int64
}

type minuteKey struct {
	resource string
	startMs  int64
}

// resourceTally is what the flusher has collected for one resource since
// the server started, or since the engine last evicted it: a tally is
// dropped once its resource has left the engine and all of it is stored.
type resourceTally struct {
	totals      engine.Counts
	firstSeenMs int64
	lastSeenMs  int64
}

func newMetricsFlusher(eng *engine.Engine, st *store.Store, logger *slog.Logger) *metricsFlusher {
	return &metricsFlusher{
		engine:    eng,
		store:     st,
		logger:    logger,
		pending:   map[minuteKey]*store.MinuteDelta{},
		resources: map[string]*resourceTally{},
		unstored:  map[string]struct{}{},
	}
}

// nowMs reads the engine's clock, which every metric time follows.
func (f *metricsFlusher) nowMs() int64 { return f.engine.Clock().NowMs() }

// collect takes what the engine recorded since the last call into the
// pending batch and the totals.
func (f *metricsFlusher) collect() {
	f.mu.Lock()
	defer f.mu.Unlock()
	nowMs := f.nowMs()
	f.collectedMs, f.collectedCreated = nowMs, f.engine.ResourcesCreated()
	for _, st := range f.engine.CollectMinutes() {
		counts := st.Counts
		// Seen up to now, or to the end of a minute collected late.
		last := max(st.StartMs, min(nowMs, st.StartMs+store.MinuteMs-1))
		tally, known := f.resources[st.Resource]
		if !known {
			// The engine's creation time of a resource is more precise
			// than the start of its first minute.
			first := st.StartMs
			if r := f.engine.Lookup(st.Resource); r != nil {
				first = min(max(first, r.FirstSeenMs()), last)
			}
			tally = &resourceTally{firstSeenMs: first, lastSeenMs: last}
			f.resources[st.Resource] = tally
			f.unstored[st.Resource] = struct{}{}
		}
		tally.totals.Merge(counts)
		tally.lastSeenMs = max(tally.lastSeenMs, last)
		// Nothing in this minute came before the resource existed.
		first := min(max(st.StartMs, tally.firstSeenMs), last)

		d := &store.MinuteDelta{Resource: st.Resource, StartMs: st.StartMs, Counts: counts, FirstSeenMs: first, LastSeenMs: last}
		mergePending(f.pending, d)
	}
}

// mergePending adds d to the batch.
func mergePending(batch map[minuteKey]*store.MinuteDelta, d *store.MinuteDelta) {
	k := minuteKey{resource: d.Resource, startMs: d.StartMs}
	p, ok := batch[k]
	if !ok {
		batch[k] = d
		return
	}
	p.Merge(d.Counts)
	p.FirstSeenMs = min(p.FirstSeenMs, d.FirstSeenMs)
	p.LastSeenMs = max(p.LastSeenMs, d.LastSeenMs)
}

// flush collects and writes everything pending in one transaction. If the
// write fails, the batch stays pending for the next flush.
func (f *metricsFlusher) flush(ctx context.Context) error {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	f.collect()
	f.mu.Lock()
	batch := f.pending
	f.pending = map[minuteKey]*store.MinuteDelta{}
	f.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	deltas := make([]store.MinuteDelta, 0, len(batch))
	for _, k := range slices.SortedFunc(maps.Keys(batch), compareMinuteKeys) {
		deltas = append(deltas, *batch[k])
	}
	if err := f.store.AddMetrics(ctx, deltas); err != nil {
		f.mu.Lock()
		for _, d := range batch {
			mergePending(f.pending, d)
		}
		f.mu.Unlock()
		return err
	}
	f.stored(batch)
	return nil
}

// stored notes that batch is written, and forgets the tallies of the
// resources the engine no longer tracks whose figures are all stored, so
// that the tallies stay as bounded as the engine.
func (f *metricsFlusher) stored(batch map[minuteKey]*store.MinuteDelta) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range batch {
		delete(f.unstored, k.resource)
	}
	pending := make(map[string]bool, len(f.pending))
	for k := range f.pending {
		pending[k.resource] = true
	}
	for name := range f.resources {
		if _, unstored := f.unstored[name]; !unstored && !pending[name] && f.engine.Lookup(name) == nil {
			delete(f.resources, name)
		}
	}
}

func compareMinuteKeys(a, b minuteKey) int {
	return cmp.Or(cmp.Compare(a.resource, b.resource), cmp.Compare(a.startMs, b.startMs))
}

// readStore runs fn with no flush under way, so that the store and the
// pending batch hold every delta exactly once, after a collection unless
// the last one is recent enough for a read: in the current minute (so the
// last finished minute is all in), with no resource created since (so
// every resource the engine tracks has a tally). A collection walks every
// resource; reads should not pay for it each time.
func (f *metricsFlusher) readStore(fn func() error) error {
	f.flushMu.RLock()
	defer f.flushMu.RUnlock()
	created, nowMs := f.engine.ResourcesCreated(), f.nowMs()
	f.mu.Lock()
	recent := created == f.collectedCreated && floorMs(f.collectedMs, store.MinuteMs) == floorMs(nowMs, store.MinuteMs)
	f.mu.Unlock()
	if !recent {
		f.collect()
	}
	return fn()
}

// unstoredNames returns the names of the resources collected but not yet
// written by a flush. Call it within readStore.
func (f *metricsFlusher) unstoredNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.unstored))
}

// catalogued notes that the store's catalogue holds names already, as it
// may for a resource seen before a restart: no flush needs to say so.
func (f *metricsFlusher) catalogued(names []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		delete(f.unstored, name)
	}
}

// seen returns the tallies of names that have one.
func (f *metricsFlusher) seen(names []string) map[string]resourceTally {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]resourceTally, len(names))
	for _, name := range names {
		if t, ok := f.resources[name]; ok {
			out[name] = *t
		}
	}
	return out
}

// minuteFigures returns the named resources' figures for the minute that
// starts at startMs: what is stored plus what is not flushed yet. Call it
// within readStore.
func (f *metricsFlusher) minuteFigures(ctx context.Context, startMs int64, names []string) (map[string]engine.Counts, error) {
	figures, err := f.store.MinuteMetrics(ctx, startMs, names)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		if d, ok := f.pending[minuteKey{resource: name, startMs: startMs}]; ok {
			c := figures[name]
			c.Merge(d.Counts)
			figures[name] = c
		}
	}
	return figures, nil
}

// totals collects, then returns what was collected for each of resources
// since the server started or the resource came back after an eviction:
// zero for one never collected.
func (f *metricsFlusher) totals(resources []*engine.Resource) []engine.Counts {
	f.collect()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]engine.Counts, len(resources))
	for i, r := range resources {
		if t, ok := f.resources[r.Name()]; ok {
			out[i] = t.totals
		}
	}
	return out
}

// prune deletes the rows older than retention, cut at a whole UTC hour so
// that every step of the history agrees on what is left: up to an hour more
// than retention is kept.
func (f *metricsFlusher) prune(ctx context.Context, retention time.Duration) error {
	cutMs := f.nowMs() - retention.Milliseconds()
	cutMs -= ((cutMs % store.HourMs) + store.HourMs) % store.HourMs
	deleted, err := f.store.PruneMetrics(ctx, cutMs, pruneBatchRows)
	if deleted > 0 {
		f.logger.Info("metrics: retention deleted old rows", "rows", deleted, "before", time.UnixMilli(cutMs).UTC())
	}
	return err
}

// metricJobs runs the flusher and the retention job in the background until
// stop.
type metricJobs struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
}

// startMetricJobs flushes every flushInterval, prunes at once and then
// every pruneInterval, and watches the engine's overflow every second.
func startMetricJobs(f *metricsFlusher, flushInterval, retention time.Duration) *metricJobs {
	ctx, cancel := context.WithCancel(context.Background())
	j := &metricJobs{cancel: cancel}
	j.done.Go(func() {
		every(ctx, flushInterval, false, func() {
			if err := f.flush(ctx); err != nil && ctx.Err() == nil {
				f.logger.Error("metrics: flush failed; the figures stay pending for the next one", "error", err)
			}
		})
	})
	j.done.Go(func() {
		every(ctx, overflowCheckInterval, false, (&overflowWatch{engine: f.engine, logger: f.logger}).check)
	})
	j.done.Go(func() {
		every(ctx, pruneInterval, true, func() {
			if err := f.prune(ctx, retention); err != nil && ctx.Err() == nil {
				f.logger.Error("metrics: retention failed", "error", err)
			}
		})
	})
	return j
}

// every runs fn every interval (and once first if now) until ctx is done.
func every(ctx context.Context, interval time.Duration, now bool, fn func()) {
	if now {
		fn()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// stop ends the jobs and waits for them, without a last flush.
func (j *metricJobs) stop() {
	j.once.Do(func() {
		j.cancel()
		j.done.Wait()
	})
}

// finalFlush writes what is still pending as the server stops.
func (f *metricsFlusher) finalFlush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
	defer cancel()
	return f.flush(ctx)
}
