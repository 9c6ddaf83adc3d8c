package engine

// Options configures an Engine.
type Options struct {
	// Clock tells the engine the time. Optional. Default: a cached real
	// clock refreshed every millisecond and stopped by Close.
	Clock Clock
}

// Engine decides whether calls to resources may pass. It is safe for
// concurrent use; create one with New and share it.
type Engine struct {
	clock     Clock
	ownsClock bool
}

// New returns an engine with no rules.
func New(opts Options) *Engine {
	e := &Engine{clock: opts.Clock}
	if e.clock == nil {
		e.clock = NewRealClock()
		e.ownsClock = true
	}
	return e
}

// Close stops the engine's own clock. Entries still work afterwards, with a
// clock that no longer advances.
func (e *Engine) Close() {
	if rc, ok := e.clock.(*RealClock); ok && e.ownsClock {
		rc.Stop()
	}
}
