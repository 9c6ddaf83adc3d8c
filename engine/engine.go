package engine

import (
	"sync"
)

// DefaultMaxResources is the default limit of resources an engine tracks.
const DefaultMaxResources = 100_000

// Options configures an Engine.
type Options struct {
	// Clock tells the engine the time. Optional. Default: a cached real
	// clock refreshed every millisecond and stopped by Close.
	Clock Clock
	// MaxResources caps the resources the engine creates on first use, so
	// that callers inventing names cannot exhaust memory; past it, calls to
	// new names pass uncounted. Resources named by rules are always
	// created. Optional. Default: DefaultMaxResources.
	MaxResources int
	// OnBreakerStateChange is told of every circuit breaker transition. It
	// runs on the goroutine of the call that caused it, so it must return
	// quickly and must not call back into the engine. Optional.
	OnBreakerStateChange func(BreakerStateChange)
}

// Engine decides whether calls to resources may pass. It is safe for
// concurrent use; create one with New and share it.
type Engine struct {
	clock        Clock
	ownsClock    bool
	maxResources int
	resources    resourceIndex

	onBreakerChange func(BreakerStateChange)

	loadMu sync.Mutex // serialises rule loads
	book   ruleBook   // the loaded rules, by resource; guarded by loadMu

	collectMu sync.Mutex // one CollectMinutes at a time
}

// New returns an engine with no rules.
func New(opts Options) *Engine {
	e := &Engine{clock: opts.Clock, maxResources: opts.MaxResources, onBreakerChange: opts.OnBreakerStateChange}
	if e.clock == nil {
		e.clock = NewRealClock()
		e.ownsClock = true
	}
	if e.maxResources <= 0 {
		e.maxResources = DefaultMaxResources
	}
	e.resources.init()
	return e
}

// Close stops the engine's own clock. Entries still work afterwards, with a
// clock that no longer advances.
func (e *Engine) Close() {
	if rc, ok := e.clock.(*RealClock); ok && e.ownsClock {
		rc.Stop()
	}
}

// Clock returns the engine's clock.
func (e *Engine) Clock() Clock { return e.clock }

// Resource returns the handle of the named resource, creating it on first
// use; nil once MaxResources resources exist (a nil handle lets calls pass
// uncounted). Fiber and other callers that reuse string memory need not copy
// name: the engine keeps its own copy.
func (e *Engine) Resource(name string) *Resource {
	if r := e.resources.get(name); r != nil {
		return r
	}
	return e.resources.create(name, e.maxResources, func() *Resource {
		return newResource(name, e.clock, e.clock.NowMs())
	})
}

// Lookup returns the named resource if the engine tracks it, else nil; it
// never creates one.
func (e *Engine) Lookup(name string) *Resource {
	return e.resources.get(name)
}

// Entry is Resource(name).Entry(opts...).
func (e *Engine) Entry(name string, opts ...EntryOption) (Entry, *BlockError) {
	if r, ok := (*e.resources.read.Load())[name]; ok {
		return r.Entry(opts...)
	}
	return e.Resource(name).Entry(opts...)
}

// Resources returns every resource the engine tracks, in no order.
func (e *Engine) Resources() []*Resource { return e.resources.all() }

// resourceFor returns the named resource regardless of MaxResources: rules
// always get their resource.
func (e *Engine) resourceFor(name string) *Resource {
	if r := e.resources.get(name); r != nil {
		return r
	}
	return e.resources.create(name, 0, func() *Resource {
		return newResource(name, e.clock, e.clock.NowMs())
	})
}
