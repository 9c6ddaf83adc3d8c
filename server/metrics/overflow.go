package metrics

import (
	"log/slog"
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

// overflowWatch warns, at most once a minute, that the engine is full and
// counts calls on new resources under engine.OverflowResource.
type overflowWatch struct {
	engine *engine.Engine
	clock  engine.Clock
	logger *slog.Logger

	// Owned by the one goroutine that calls check.
	warnedCalls int64 // the engine's overflow count at the last warning
	warnedMs    int64 // when that was, on the pipeline's clock
	warned      bool
}

// check warns if calls overflowed since the last warning, unless that was
// less than a minute ago.
func (w *overflowWatch) check() {
	o := w.engine.Overflow()
	if o.Calls == w.warnedCalls {
		return
	}
	now := w.clock.NowMs()
	if w.warned && now-w.warnedMs < overflowWarnEveryMs {
		return
	}
	w.logger.Warn("resources: the engine tracks its maximum of resources; calls on new ones are counted under "+engine.OverflowResource+
		" (raise --max-resources, or lower --resource-idle-ttl, if these names are meant to be resources of their own)",
		"calls", o.Calls-w.warnedCalls, "maxResources", w.engine.MaxResources(), "example", o.RecentName)
	w.warnedCalls, w.warnedMs, w.warned = o.Calls, now, true
}
