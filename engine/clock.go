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
// says by how much, over the span a decision looks back on, so that the
// decision can allow for it without paying for a stall long after it.
//
// At a window's edge a decision can do better than allow for the slack:
// the clock remembers, for each reading of the last few seconds, when it
// was replaced by a later one, and a pass recorded at a reading happened
// before then (ReplacedBy).
//
// A clock nobody reads costs nothing: after idleTicks ticks without a
// read the ticker parks, and the next read takes the time itself and wakes
// it. A reading taken so is exact.
type RealClock struct {
	// nowMs is the cached reading, 0 while the ticker is parked. touched
	// says whether it was read since the ticker last looked: it shares
	// nowMs's cache line, which the ticker writes every millisecond anyway,
	// and a reader writes it only when it is false, once per idleTicks at
	// most, so saying so costs the readers nothing they did not pay.
	nowMs   atomic.Int64
	touched atomic.Bool
	// wokeAt is when the read that woke the ticker took the time, since
	// base; wake signals the ticker.
	wokeAt atomic.Int64
	wake   chan struct{}
	// slackWithin[k] is the largest lag of a refresh in the second in
	// progress and the k seconds before it; it grows with k.
	slackWithin [slackSeconds]atomic.Int64
	// slackEver is the largest lag of a refresh since the clock started.
	slackEver atomic.Int64
	// replaced[ms % replacedRing] says when the reading ms was replaced:
	// the high bits tag the reading (ms / replacedRing), the low
	// replacedBits how long after ms began, in microseconds, rounded up.
	replaced [replacedRing]atomic.Uint64
	base     time.Time
	baseMs   int64 // base in Unix milliseconds: readings are baseMs + elapsed ms
	stop     chan struct{}
	stopped  chan struct{} // closed when the ticker goroutine has returned
	stopOnce sync.Once

	// Owned by the ticker goroutine.
	lastRefresh time.Duration
	second      int64               // the second of lastRefresh, counted from base
	gaps        [slackSeconds]int64 // the largest lag of each second, a ring indexed by second
}

// idleTicks is how many ticks without a read park the ticker: ten
// milliseconds, so that a process whose only readers are background jobs
// every few seconds keeps its ticker parked nearly all the time (an idle
// sluice spent 0.5% of a core with a tenth of a second, 0.07% with this),
// and one read every few milliseconds keeps it ticking: a wake-up's
// reading is exact, but the refreshes after it may come late, and late
// refreshes are what a decision must allow for (SlackMs).
const idleTicks = 10

// slackSeconds is how many seconds of refresh lags the clock remembers one
// by one: ten minutes, the second in progress and one more for an interval
// that does not start on a second. A longer window (an hour or a day
// quota) allows for the largest lag since the clock started (slackEver).
const slackSeconds = 600 + 2

// replacedRing is how many milliseconds of readings the clock remembers
// the replacement of: a one-second rule's edge is a second back, and four
// leave room for intervals up to three seconds and late decisions.
// replacedBits holds a replacement up to 12 days after its reading.
const (
	replacedRing = 4096
	replacedBits = 40
)

// NewRealClock starts a cached clock; Stop ends its ticker.
func NewRealClock() *RealClock {
	// The first reading is taken as if a refresh came a tick before: it is
	// stale by up to the tick to come and the millisecond it rounds off.
	base := time.Now()
	c := &RealClock{base: base, baseMs: base.UnixMilli(), lastRefresh: -time.Millisecond,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	c.touched.Store(true)
	c.refreshAt(0)
	go c.run()
	return c
}

func (c *RealClock) refresh() { c.refreshAt(time.Since(c.base)) }

// refreshAt sets the clock to elapsed since base and notes how stale a
// reading taken just before could have been: the gap since the previous
// refresh, plus the millisecond the value rounds off.
func (c *RealClock) refreshAt(elapsed time.Duration) {
	now := c.baseMs + elapsed.Milliseconds()
	if was := c.nowMs.Swap(now); was != 0 && was != now {
		c.noteReplaced(was, elapsed)
	}
	gapMs := int64((elapsed-c.lastRefresh+time.Millisecond-1)/time.Millisecond) + 1
	c.lastRefresh = elapsed
	if gapMs > c.slackEver.Load() {
		c.slackEver.Store(gapMs)
	}
	second := int64(elapsed / time.Second)
	if second != c.second {
		// Seconds the ticker slept through lagged by this gap as well.
		for s := c.second + 1; s <= second && s <= c.second+slackSeconds; s++ {
			c.gaps[s%slackSeconds] = gapMs
		}
		c.second = second
		c.publishSlack()
		return
	}
	if i := second % slackSeconds; gapMs > c.gaps[i] {
		c.gaps[i] = gapMs
		for k := range c.slackWithin {
			if c.slackWithin[k].Load() >= gapMs {
				break // and so is every longer span
			}
			c.slackWithin[k].Store(gapMs)
		}
	}
}

// noteReplaced records that the reading ms stopped being read at elapsed
// since base.
func (c *RealClock) noteReplaced(ms int64, elapsed time.Duration) {
	afterUs := (c.baseMs*int64(time.Millisecond) + int64(elapsed) - ms*int64(time.Millisecond) + 999) / 1000
	if afterUs >= 1<<replacedBits || ms < 0 {
		return // unknown: such a reading is out of every window it could matter to
	}
	c.replaced[ms%replacedRing].Store(uint64(ms/replacedRing)<<replacedBits | uint64(afterUs))
}

// ReplacedBy reports whether the reading ms was replaced by a later one at
// least agoMs before now, in real time: whether anything recorded at that
// reading happened before the window of agoMs that ends now. It reads the
// time, so it is meant for a window's edge, not for every call; false when
// the clock does not remember the reading.
func (c *RealClock) ReplacedBy(ms, agoMs int64) bool {
	return c.replacedAt(ms, c.baseMs*int64(time.Millisecond)+int64(time.Since(c.base))-agoMs*int64(time.Millisecond))
}

// ceilMs returns the time, in Unix milliseconds as the clock counts them,
// rounded up: no reading of the clock is later.
func (c *RealClock) ceilMs() int64 {
	return c.baseMs + int64((time.Since(c.base)+time.Millisecond-1)/time.Millisecond)
}

// replacedAt reports whether the reading ms was replaced at or before atNs,
// in Unix nanoseconds as the clock counts them.
func (c *RealClock) replacedAt(ms, atNs int64) bool {
	if ms < 0 {
		return false
	}
	e := c.replaced[ms%replacedRing].Load()
	if e>>replacedBits != uint64(ms/replacedRing)&(1<<(64-replacedBits)-1) {
		return false
	}
	return ms*int64(time.Millisecond)+int64(e&(1<<replacedBits-1))*int64(time.Microsecond) <= atNs
}

// publishSlack recomputes every span's slack from the ring, once a second.
func (c *RealClock) publishSlack() {
	var most int64
	for k := range c.slackWithin {
		most = max(most, c.gaps[(c.second-int64(k)+slackSeconds)%slackSeconds])
		c.slackWithin[k].Store(most)
	}
}

func (c *RealClock) run() {
	defer close(c.stopped)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for ticks := 1; ; ticks++ {
		select {
		case <-t.C:
			c.refresh()
		case <-c.stop:
			return
		}
		if ticks%idleTicks != 0 {
			continue
		}
		if c.touched.Load() {
			c.touched.Store(false)
			continue
		}
		t.Stop()
		if !c.park() {
			return
		}
		t.Reset(time.Millisecond)
	}
}

// park stops refreshing until a read wakes the clock, and reports whether
// one did (false: the clock was stopped). The reading woken with was
// exact: the first refresh after it allows only for the time since.
func (c *RealClock) park() bool {
	if was := c.nowMs.Swap(0); was != 0 {
		c.noteReplaced(was, time.Since(c.base))
	}
	select {
	case <-c.wake:
		c.lastRefresh = time.Duration(c.wokeAt.Load())
		c.refresh()
		return true
	case <-c.stop:
		// Readings after Stop keep answering the time it stopped at.
		if !c.nowMs.CompareAndSwap(0, c.baseMs+time.Since(c.base).Milliseconds()) {
			c.lastRefresh = time.Duration(c.wokeAt.Load())
			c.refresh()
		}
		return false
	}
}

// wakeUp is NowMs while the ticker is parked: it takes the time itself, and
// the first reader to publish its reading wakes the ticker. Another reader
// racing with it answers the published reading, so that no goroutine sees
// the clock go back.
func (c *RealClock) wakeUp() int64 {
	for {
		elapsed := time.Since(c.base)
		now := c.baseMs + elapsed.Milliseconds()
		if c.nowMs.CompareAndSwap(0, now) {
			c.wokeAt.Store(int64(elapsed)) // read by the ticker once signalled
			select {
			case c.wake <- struct{}{}:
			default: // the ticker was stopped, or is already woken
			}
			return now
		}
		if now := c.nowMs.Load(); now != 0 {
			return now
		}
	}
}

// SlackMs returns how far behind real time a reading of the clock may have
// been within the last withinMs: 2 ms when the ticker kept time, more when
// it was late. A reading taken just before a late refresh is stale by the
// whole delay, which is known once that refresh comes; so a pass recorded
// at a reading that may still matter to a window of withinMs ended its
// stale spell within the last withinMs, and the spans cover that.
func (c *RealClock) SlackMs(withinMs int64) int64 {
	k := (max(withinMs, 0) + 999) / 1000
	if k >= slackSeconds-1 {
		return max(c.slackWithin[slackSeconds-1].Load(), c.slackEver.Load())
	}
	return c.slackWithin[k].Load()
}

// NowMs returns Unix milliseconds as of the last tick, or of now if the
// ticker was parked.
func (c *RealClock) NowMs() int64 {
	if !c.touched.Load() {
		c.touched.Store(true)
	}
	if now := c.nowMs.Load(); now != 0 {
		return now
	}
	return c.wakeUp()
}

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
