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
type RealClock struct {
	nowMs    atomic.Int64
	base     time.Time
	stop     chan struct{}
	stopOnce sync.Once
}

// NewRealClock starts a cached clock; Stop ends its ticker.
func NewRealClock() *RealClock {
	c := &RealClock{base: time.Now(), stop: make(chan struct{})}
	c.refresh()
	go c.run()
	return c
}

func (c *RealClock) refresh() {
	c.nowMs.Store(c.base.UnixMilli() + time.Since(c.base).Milliseconds())
}

func (c *RealClock) run() {
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

// NowMs returns Unix milliseconds as of the last tick.
func (c *RealClock) NowMs() int64 { return c.nowMs.Load() }

// Sleep waits for d of real time.
func (c *RealClock) Sleep(d time.Duration) { time.Sleep(d) }

// Stop ends the ticker; NowMs keeps answering the last value. Safe to call
// more than once.
func (c *RealClock) Stop() { c.stopOnce.Do(func() { close(c.stop) }) }

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
