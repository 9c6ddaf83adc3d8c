package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the engine the time in milliseconds and lets it wait.
type Clock interface {
	// NowMs returns the current time in milliseconds. It never goes
	// backwards for the real clock; a manual clock may be set back.
	NowMs() int64
	// Sleep waits for d (throttled callers that are told to queue).
	Sleep(d time.Duration)
}

// RealClock is a cached millisecond clock: NowMs is one atomic load, and a
// ticker refreshes the value every millisecond from the monotonic clock, so
// it never steps back when the wall clock is adjusted.
//
// A cached reading lags real time: by up to a millisecond always, and by
// more when the ticker is not scheduled on time (busy cores, GC). SlackMs
// says by how much recently, so that decisions can allow for it.
type RealClock struct {
	nowMs    atomic.Int64
	slackMs  atomic.Int64
	base     time.Time
	stop     chan struct{}
	stopped  chan struct{} // closed when the ticker goroutine has returned
	stopOnce sync.Once

	// Owned by the ticker goroutine.
	lastRefresh time.Duration
	ticks       int64
}

// slackDecayTicks is how many ticks it takes the slack to shrink by one
// millisecond after a late tick: a stall of n ms is allowed for over n
// seconds, longer than the one-second windows it matters most to.
const slackDecayTicks = 1000

// NewRealClock starts a cached clock; Stop ends its ticker.
func NewRealClock() *RealClock {
	c := &RealClock{base: time.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	c.slackMs.Store(1)
	c.refresh()
	go c.run()
	return c
}

func (c *RealClock) refresh() {
	elapsed := time.Since(c.base)
	c.nowMs.Store(c.base.UnixMilli() + elapsed.Milliseconds())
	// A reading taken just before this refresh was stale by up to the gap
	// since the previous one, plus the millisecond the value rounds off.
	gapMs := int64((elapsed-c.lastRefresh+time.Millisecond-1)/time.Millisecond) + 1
	c.lastRefresh = elapsed
	c.ticks++
	slack := c.slackMs.Load()
	if c.ticks%slackDecayTicks == 0 && slack > 1 {
		slack--
	}
	c.slackMs.Store(max(slack, gapMs))
}

func (c *RealClock) run() {
	defer close(c.stopped)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.refresh()
		case <-c.stop:
			return
		}
	}
}

// SlackMs returns how far behind real time a reading of the clock may have
// been recently: 2 ms when the ticker keeps time, more after it was late.
func (c *RealClock) SlackMs() int64 { return c.slackMs.Load() }

// NowMs returns Unix milliseconds as of the last tick.
func (c *RealClock) NowMs() int64 { return c.nowMs.Load() }

// Sleep waits for d of real time.
func (c *RealClock) Sleep(d time.Duration) { time.Sleep(d) }

// Stop ends the ticker and waits until its last refresh is done; NowMs
// keeps answering the last value. Safe to call more than once.
func (c *RealClock) Stop() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.stopped
}

// ManualClock is a clock that moves only when told to, for deterministic
// tests. Sleep advances it.
type ManualClock struct {
	nowMs atomic.Int64
}

// NewManualClock returns a manual clock set to startMs.
func NewManualClock(startMs int64) *ManualClock {
	c := &ManualClock{}
	c.nowMs.Store(startMs)
	return c
}

// NowMs returns the clock's current value.
func (c *ManualClock) NowMs() int64 { return c.nowMs.Load() }

// Set moves the clock to ms, backwards included.
func (c *ManualClock) Set(ms int64) { c.nowMs.Store(ms) }

// Advance moves the clock forward by ms.
func (c *ManualClock) Advance(ms int64) { c.nowMs.Add(ms) }

// Sleep advances the clock by d, rounded up to whole milliseconds.
func (c *ManualClock) Sleep(d time.Duration) {
	c.nowMs.Add(int64((d + time.Millisecond - 1) / time.Millisecond))
}
