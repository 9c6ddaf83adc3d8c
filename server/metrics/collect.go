package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// Options configures a Pipeline.
type Options struct {
	// Engine is the engine whose figures are collected. Required.
	Engine *engine.Engine
	// Store keeps the minute and hour rows. Required.
	Store *store.Store
	// Clock tells the time of every metric figure: minutes, retention,
	// the default ranges. Optional. Default: Engine.Clock().
	Clock engine.Clock
	// Logger receives the jobs' failures and warnings. Optional.
	// Default: slog.Default().
	Logger *slog.Logger
	// FlushInterval is how often Start's job flushes. Optional.
	// Default: DefaultFlushInterval.
	FlushInterval time.Duration
	// Retention is how long Start's job keeps rows. Optional. Default:
	// DefaultRetention.
	Retention time.Duration
	// Purge runs with every retention pass, for the rows of the store
	// that expire by other rules than the metrics' (the console's
	// sessions). Optional. Default: none.
	Purge func(ctx context.Context) error
	// OnOverflow is told, with the warning logged at most once a minute,
	// how many calls the engine counted under engine.OverflowResource
	// since the last warning, and a name of one of them; it runs on the
	// watch's goroutine. Optional. Default: none.
	OnOverflow func(calls int64, example string)
}

// Pipeline is the one consumer of the engine's CollectMinutes. It fans
// every delta out to the batch the next flush writes to the store and to
// the running totals that the Prometheus exposition shows, so the two
// always agree; reads see the store and the pending batch together.
type Pipeline struct {
	engine *engine.Engine
	store  *store.Store
	clock  engine.Clock
	logger *slog.Logger

	flushInterval, retention time.Duration
	purge                    func(ctx context.Context) error
	onOverflow               func(calls int64, example string)
	jobs                     *jobs
	registry                 *prometheus.Registry
	backlog                  *Backlog
	fleet                    fleetTotals

	// flushMu is held for writing by a flush, from taking the pending batch
	// to its commit, and for reading by those who read the store and the
	// pending batch together: they see every delta exactly once.
	flushMu sync.RWMutex
	// startMs is when the pipeline was made: every minute since, the
	// server is up. beatMs is the last minute whose heartbeat a flush
	// wrote (guarded by flushMu).
	startMs, beatMs int64

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

	// foldWarn gates the warning that a report's minutes were counted
	// under engine.OverflowResource.
	foldWarn WarnGate

	liveMu sync.Mutex // guards the fields below
	// instanceLive is the last live figures of each instance, by its id.
	instanceLive map[string]*instanceLive
	// instanceHot is the last hot values of each instance, by its id.
	instanceHot map[string]*instanceHot
}

type minuteKey struct {
	resource string
	startMs  int64
}

// resourceTally is what the pipeline has collected for one resource since
// the server started, or since the engine last evicted it: a tally is
// dropped once its resource has left the engine and all of it is stored.
type resourceTally struct {
	totals      engine.Counts
	byReason    reasonCounts
	rt          rtHistogram // the exposition's response time buckets
	firstSeenMs int64
	lastSeenMs  int64
}

// New returns the pipeline of opts' engine and store. Its background jobs
// run from Start.
func New(opts Options) *Pipeline {
	p := &Pipeline{
		engine:        opts.Engine,
		store:         opts.Store,
		clock:         opts.Clock,
		logger:        opts.Logger,
		flushInterval: cmp.Or(opts.FlushInterval, DefaultFlushInterval),
		retention:     cmp.Or(opts.Retention, DefaultRetention),
		purge:         opts.Purge,
		onOverflow:    opts.OnOverflow,
		pending:       map[minuteKey]*store.MinuteDelta{},
		resources:     map[string]*resourceTally{},
		unstored:      map[string]struct{}{},
		instanceLive:  map[string]*instanceLive{},
		instanceHot:   map[string]*instanceHot{},
		backlog:       NewBacklog(BacklogResources),
	}
	if p.clock == nil {
		p.clock = opts.Engine.Clock()
	}
	p.startMs = p.NowMs()
	p.beatMs = floorMs(p.startMs, store.MinuteMs) - store.MinuteMs
	if p.logger == nil {
		p.logger = slog.Default()
	}
	p.registry = newRegistry(opts.Engine)
	return p
}

// NowMs reads the pipeline's clock, which every metric time follows.
func (p *Pipeline) NowMs() int64 { return p.clock.NowMs() }

// Retention is how long the history keeps rows.
func (p *Pipeline) Retention() time.Duration { return p.retention }

// FlushInterval is how often the figures reach the store: how fresh the
// history is.
func (p *Pipeline) FlushInterval() time.Duration { return p.flushInterval }

// Collect takes what the engine recorded since the last call into the
// pending batch and the totals.
func (p *Pipeline) Collect() {
	p.mu.Lock()
	defer p.mu.Unlock()
	nowMs := p.NowMs()
	p.collectedMs, p.collectedCreated = nowMs, p.engine.ResourcesCreated()
	for _, st := range p.engine.CollectMinutes() {
		firstMs := st.StartMs
		if _, known := p.resources[st.Resource]; !known {
			if r := p.engine.Lookup(st.Resource); r != nil {
				// The engine's creation time of a resource is more
				// precise than the start of its first minute.
				firstMs = max(firstMs, r.FirstSeenMs())
			}
		}
		p.addLocked(nowMs, st.Resource, st.StartMs, firstMs, st.Counts, st.BlockedBy)
	}
}

// addLocked adds one minute's delta, its blocks per rule blockedBy, to the
// pending batch and the resource's tally; firstMs is the earliest the
// resource may have been seen in it. The caller holds mu.
func (p *Pipeline) addLocked(nowMs int64, resource string, startMs, firstMs int64, counts engine.Counts, blockedBy []engine.RuleBlocks) {
	// Seen up to now, or to the end of a minute collected late.
	last := max(startMs, min(nowMs, startMs+store.MinuteMs-1))
	tally, known := p.resources[resource]
	if !known {
		tally = &resourceTally{firstSeenMs: min(firstMs, last), lastSeenMs: last}
		p.resources[resource] = tally
		p.unstored[resource] = struct{}{}
	}
	tally.totals.Merge(counts)
	tally.byReason.add(blockedBy)
	tally.rt.observe(counts)
	tally.lastSeenMs = max(tally.lastSeenMs, last)
	// Nothing in this minute came before the resource existed.
	first := min(max(startMs, tally.firstSeenMs), last)
	mergePending(p.pending, &store.MinuteDelta{Resource: resource, StartMs: startMs, Counts: counts, BlockedBy: blockedBy, FirstSeenMs: first, LastSeenMs: last})
}

// mergePending adds d to the batch.
func mergePending(batch map[minuteKey]*store.MinuteDelta, d *store.MinuteDelta) {
	k := minuteKey{resource: d.Resource, startMs: d.StartMs}
	b, ok := batch[k]
	if !ok {
		batch[k] = d
		return
	}
	b.Merge(d.Counts)
	b.BlockedBy = engine.MergeBlocks(b.BlockedBy, d.BlockedBy)
	b.FirstSeenMs = min(b.FirstSeenMs, d.FirstSeenMs)
	b.LastSeenMs = max(b.LastSeenMs, d.LastSeenMs)
}
