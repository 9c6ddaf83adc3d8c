package metrics

import (
	"context"
	"sync"
	"time"
)

// Defaults of the metric jobs.
const (
	// DefaultFlushInterval is how often the minute figures are written: a
	// crash loses at most this much.
	DefaultFlushInterval = 10 * time.Second
	// DefaultRetention is how long minute and hour rows are kept.
	DefaultRetention = 30 * 24 * time.Hour
	// pruneInterval is how often the retention job runs.
	pruneInterval = 10 * time.Minute
)

// jobs are the pipeline's background loops, from Start to Stop.
type jobs struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
}

// Start flushes every flush interval, prunes at once and then every
// pruneInterval, and samples the live backlog and watches the engine's
// overflow every second, until Stop. Call it once.
func (p *Pipeline) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.jobs = &jobs{cancel: cancel}
	p.jobs.done.Go(func() {
		every(ctx, p.flushInterval, false, func() {
			if err := p.Flush(ctx); err != nil && ctx.Err() == nil {
				p.logger.Error("metrics: flush failed; the figures stay pending for the next one", "error", err)
			}
		})
	})
	p.jobs.done.Go(func() {
		every(ctx, time.Second, true, p.SampleLive)
	})
	p.jobs.done.Go(func() {
		every(ctx, overflowCheckInterval, false, (&overflowWatch{engine: p.engine, clock: p.clock, logger: p.logger, tell: p.onOverflow}).check)
	})
	p.jobs.done.Go(func() {
		every(ctx, pruneInterval, true, func() {
			if err := p.Prune(ctx, p.retention); err != nil && ctx.Err() == nil {
				p.logger.Error("metrics: retention failed", "error", err)
			}
		})
	})
}

// Stop ends the jobs and waits for them, without a last flush
// (FinalFlush).
func (p *Pipeline) Stop() {
	if p.jobs == nil {
		return
	}
	p.jobs.once.Do(func() {
		p.jobs.cancel()
		p.jobs.done.Wait()
	})
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
