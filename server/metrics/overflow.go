package metrics

import (
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine"
)

const (
	// overflowCheckInterval is how often the pipeline looks whether the
	// engine counted calls under its overflow resource.
	overflowCheckInterval = time.Second
	// overflowWarnEveryMs is how often, at most, it warns about it.
	overflowWarnEveryMs = int64(time.Minute / time.Millisecond)
)

// WarnGate lets a warning through at most once a minute, on the caller's
// clock, so that a condition met on every request logs a line a minute,
// not one a request. The zero value lets the first through; safe for
// concurrent use.
type WarnGate struct {
	mu     sync.Mutex
	lastMs int64 // when one was last let through, if passed
	passed bool
}

// Pass reports whether a warning at nowMs may be logged, and if it may,
// counts it as logged.
func (g *WarnGate) Pass(nowMs int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.passed && nowMs-g.lastMs < overflowWarnEveryMs {
		return false
	}
	g.lastMs, g.passed = nowMs, true
	return true
}

// overflowWatch warns, at most once a minute, that the engine is full and
// counts calls on new resources under engine.OverflowResource, and tells
// Options.OnOverflow.
type overflowWatch struct {
	engine *engine.Engine
	clock  engine.Clock
	logger *slog.Logger
	tell   func(calls int64, example string) // Options.OnOverflow; may be nil

	// Owned by the one goroutine that calls check.
	warnedCalls int64 // the engine's overflow count at the last warning
	gate        WarnGate
}

// check warns if calls overflowed since the last warning, unless that was
// less than a minute ago.
func (w *overflowWatch) check() {
	o := w.engine.Overflow()
	if o.Calls == w.warnedCalls {
		return
	}
	if !w.gate.Pass(w.clock.NowMs()) {
		return
	}
	w.logger.Warn("resources: the engine tracks its maximum of resources; calls on new ones are counted under "+engine.OverflowResource+
		" (raise --max-resources, or lower --resource-idle-ttl, if these names are meant to be resources of their own)",
		"calls", o.Calls-w.warnedCalls, "maxResources", w.engine.MaxResources(), "example", o.RecentName)
	if w.tell != nil {
		w.tell(o.Calls-w.warnedCalls, o.RecentName)
	}
	w.warnedCalls = o.Calls
}
