package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the engine's resource bounds.
const (
	// DefaultMaxResources is the default limit of resources an engine
	// tracks.
	DefaultMaxResources = 100_000
	// DefaultResourceIdleTTL is how long, by default, a resource no rule
	// names may go without traffic before the engine forgets it.
	DefaultResourceIdleTTL = time.Hour
)

// Options configures an Engine.
type Options struct {
	// Clock tells the engine the time. Optional. Default: a cached real
	// clock refreshed every millisecond and stopped by Close.
	Clock Clock
	// MaxResources caps the resources the engine tracks, so that callers
	// inventing names cannot exhaust memory. Past it, a call on a new name
	// is counted under OverflowResource (see Engine.Resource). Resources
	// named by rules are always tracked, beyond the cap if need be.
	// Optional. Default: DefaultMaxResources (100,000).
	MaxResources int
	// ResourceIdleTTL is how long a resource that no rule names and that
	// has no call in flight may go without traffic before the engine
	// forgets it (see Engine.EvictIdle), making room for others. Traffic
	// is known to the minute, so a resource may stay up to a minute
	// longer. Optional. Default: DefaultResourceIdleTTL (1h).
	ResourceIdleTTL time.Duration
	// OnBreakerStateChange is told of every circuit breaker transition. It
	// runs on the goroutine of the call that caused it, so it must return
	// quickly and must not call back into the engine. Optional.
	OnBreakerStateChange func(BreakerStateChange)
	// SystemRoot is the directory under which the engine reads its
	// process's figures for system rules (proc/self/stat, proc/loadavg,
	// sys/fs/cgroup/…). Optional. Default: "/"; tests point it at files of
	// their own.
	SystemRoot string
	// Cluster is the count that scope: cluster rules share with the other
	// engines that run them. Optional: without it, loading a cluster rule
	// fails, naming scope.
	Cluster ClusterCounter
	// ClusterEngine identifies the engine to Cluster among those sharing
	// it. Optional. Default: random.
	ClusterEngine string
	// ClusterTimeout bounds each exchange with Cluster: one that takes
	// longer has the cluster rules fall back. Optional. Default: 50 ms.
	ClusterTimeout time.Duration
	// OnClusterStateChange is told when the engine's cluster rules start
	// or stop falling back, the count unreachable or back. It runs on the
	// engine's round goroutine. Optional.
	OnClusterStateChange func(ClusterStateChange)

	// manualClusterRounds leaves the rounds with Cluster to the engine's
	// tests, which hold them one by one on a manual clock.
	manualClusterRounds bool
}

// Engine decides whether calls to resources may pass. It is safe for
// concurrent use; create one with New and share it.
type Engine struct {
	clock        Clock
	ownsClock    bool
	maxResources int
	idleTTLMs    int64
	resources    resourceIndex

	onBreakerChange func(BreakerStateChange)

	loadMu sync.Mutex // serialises rule loads and evictions
	book   ruleBook   // the loaded rules, by resource; guarded by loadMu
	// restored are quota windows saved before a restart, waiting for
	// their rules to load (RestoreQuotaWindows); guarded by loadMu.
	restored map[quotaKey][]QuotaWindow

	collectMu sync.Mutex        // one CollectMinutes at a time; guards retired
	retired   []retiredResource // evicted, still collected for a while
	// orphans are the block tallies of rules their resources dropped,
	// still collected for a while.
	orphans orphanBlocks

	created atomic.Int64 // resources created since New

	system systemGuard // the system rules; loadMu guards most of it

	cluster *clusterLink // nil without Options.Cluster

	overflowCalls    atomic.Int64
	overflowName     atomic.Pointer[string] // a recent name that overflowed
	overflowSampleMs atomic.Int64           // when overflowName was set

	stopSweep chan struct{}
	sweeping  sync.WaitGroup
	closeOnce sync.Once
}

// New returns an engine with no rules. It sweeps idle resources away in
// the background until Close.
func New(opts Options) *Engine {
	e := &Engine{
		clock: opts.Clock, maxResources: opts.MaxResources, onBreakerChange: opts.OnBreakerStateChange,
		stopSweep: make(chan struct{}),
	}
	e.system.files = procFiles{root: opts.SystemRoot}
	if e.system.files.root == "" {
		e.system.files.root = "/"
	}
	if e.clock == nil {
		e.clock = NewRealClock()
		e.ownsClock = true
	}
	if e.maxResources <= 0 {
		e.maxResources = DefaultMaxResources
	}
	ttl := opts.ResourceIdleTTL
	if ttl <= 0 {
		ttl = DefaultResourceIdleTTL
	}
	e.idleTTLMs = max(ttl.Milliseconds(), 1)
	e.overflowSampleMs.Store(-overflowSampleEveryMs)
	e.resources.init()
	e.sweeping.Go(func() { e.sweepEvery(sweepInterval(ttl)) })
	if opts.Cluster != nil {
		e.cluster = newClusterLink(opts, e.clock)
		if opts.manualClusterRounds {
			close(e.cluster.done)
		} else {
			go e.cluster.run()
		}
	}
	return e
}

// Close stops the engine's sweep, its sampling of the process's figures,
// its rounds with the cluster count (returning what its leases left) and
// its own clock. Entries still work afterwards, with a clock that no
// longer advances. Safe to call more than once.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		close(e.stopSweep)
		e.sweeping.Wait()
		e.closeSystem()
		if e.cluster != nil {
			close(e.cluster.stop)
			<-e.cluster.done
		}
		if rc, ok := e.clock.(*RealClock); ok && e.ownsClock {
			rc.Stop()
		}
	})
}

// Clock returns the engine's clock.
func (e *Engine) Clock() Clock { return e.clock }

// Resource returns the handle of the named resource, creating it on first
// use. Once MaxResources resources exist, a name the engine does not track
// gets the handle of OverflowResource instead, which counts the calls of
// every such name (Engine.Overflow says how many). Fiber and other callers
// that reuse string memory need not copy name: the engine keeps its own
// copy.
func (e *Engine) Resource(name string) *Resource {
	if r := e.resources.get(name); r != nil {
		return r
	}
	if r := e.resources.create(name, e.maxResources, func() *Resource { return e.newResource(name) }); r != nil {
		return r
	}
	e.overflowed(name)
	return e.resourceFor(OverflowResource)
}

// Lookup returns the named resource if the engine tracks it, else nil; it
// never creates one.
func (e *Engine) Lookup(name string) *Resource {
	return e.resources.get(name)
}

// Entry is Resource(name).Entry(opts...).
func (e *Engine) Entry(name string, opts ...EntryOption) (Entry, *BlockError) {
	return enter(nil, e, name, opts)
}

// named is Resource(name), its common case (a resource the read map
// holds) first.
func (e *Engine) named(name string) *Resource {
	if r, ok := (*e.resources.read.Load())[name]; ok {
		return r
	}
	return e.Resource(name)
}

// Resources returns every resource the engine tracks, in no order.
func (e *Engine) Resources() []*Resource { return e.resources.all() }

// ResourceCount returns how many resources the engine tracks.
func (e *Engine) ResourceCount() int { return e.resources.len() }

// ResourcesCreated counts the resources the engine created since it
// started, those it evicted and created again included: a reader that saw
// the same count before has seen every resource the engine tracks.
func (e *Engine) ResourcesCreated() int64 { return e.created.Load() }

// MaxResources returns how many resources the engine tracks at most
// (Options.MaxResources), rules' resources aside.
func (e *Engine) MaxResources() int { return e.maxResources }

// resourceFor returns the named resource regardless of MaxResources: rules
// always get their resource.
func (e *Engine) resourceFor(name string) *Resource {
	if r := e.resources.get(name); r != nil {
		return r
	}
	return e.resources.create(name, 0, func() *Resource { return e.newResource(name) })
}
