package engine

import (
	"sync"
	"testing"
	"time"
)

func TestRealClockAdvancesAndStops(t *testing.T) {
	// The clock reads the wall clock when it is made, and so reads no
	// earlier than a reading before it, nor later than one after its own:
	// bounds that hold however long the test is held off a core between
	// the readings.
	before := time.Now().UnixMilli()
	c := NewRealClock()
	start := c.NowMs()
	after := time.Now().UnixMilli()
	if start < before || start > after {
		t.Fatalf("clock reads %d, outside the wall clock's %d to %d around it", start, before, after)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.NowMs() < start+3 {
		if time.Now().After(deadline) {
			t.Fatal("the cached clock did not advance 3 ms in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	c.Stop()
	c.Stop() // idempotent
	stopped := c.NowMs()
	time.Sleep(20 * time.Millisecond)
	if got := c.NowMs(); got > stopped+1 {
		t.Fatalf("clock moved from %d to %d after Stop", stopped, got)
	}
}

func TestManualClock(t *testing.T) {
	c := NewManualClock(100)
	c.Advance(50)
	c.Sleep(1500 * time.Microsecond) // rounds up to 2 ms
	if got := c.NowMs(); got != 152 {
		t.Fatalf("NowMs = %d, want 152", got)
	}
	c.Set(10)
	if got := c.NowMs(); got != 10 {
		t.Fatalf("NowMs after Set back = %d, want 10", got)
	}
}

func TestEngineOwnsItsClock(t *testing.T) {
	e := New(Options{})
	rc, ok := e.Clock().(*RealClock)
	if !ok {
		t.Fatalf("default clock is %T, want *RealClock", e.Clock())
	}
	e.Close()
	select {
	case <-rc.stop:
	default:
		t.Fatal("Close did not stop the engine's own clock")
	}
	manual := NewManualClock(0)
	New(Options{Clock: manual}).Close() // must not touch a clock it was given
}

// TestRealClockSlackFollowsLateTicks drives a clock's refreshes by hand: a
// late tick raises the slack of every span that reaches back to it, and
// only of those, so a stall is not paid for after it stops mattering.
func TestRealClockSlackFollowsLateTicks(t *testing.T) {
	base := time.Now()
	c := &RealClock{base: base, baseMs: base.UnixMilli(), lastRefresh: -time.Millisecond}
	c.refreshAt(0)
	tickUntil := func(from, to time.Duration) {
		for at := from; at <= to; at += time.Millisecond {
			c.refreshAt(at)
		}
	}
	want := func(withinMs, slack int64) {
		t.Helper()
		if got := c.SlackMs(withinMs); got != slack {
			t.Fatalf("at %v, slack within %d ms = %d ms, want %d", c.lastRefresh, withinMs, got, slack)
		}
	}
	// A reading rounds down and waits for the next tick.
	want(1000, 2)
	tickUntil(time.Millisecond, 1500*time.Millisecond)
	want(1000, 2)
	want(MaxStatIntervalMs, 2)
	// The ticker ran 50 ms late: readings were stale that long.
	tickUntil(1550*time.Millisecond, 1550*time.Millisecond)
	for _, within := range []int64{0, 100, 1000, 60_000, MaxStatIntervalMs} {
		want(within, 51)
	}
	tickUntil(1551*time.Millisecond, 2999*time.Millisecond)
	want(1000, 51)
	// From second 3 on, a one-second window no longer reaches second 1.
	tickUntil(3000*time.Millisecond, 3000*time.Millisecond)
	want(100, 2)
	want(1000, 2)
	want(2000, 51)
	tickUntil(3001*time.Millisecond, 61_999*time.Millisecond)
	want(1000, 2)
	want(60_000, 51)
	tickUntil(62*time.Second, 62*time.Second)
	want(60_000, 2)
	want(MaxStatIntervalMs, 51)
	// A stall of 2.5 s spans the seconds it slept through.
	tickUntil(62*time.Second+time.Millisecond, 70*time.Second)
	tickUntil(72500*time.Millisecond, 72500*time.Millisecond)
	want(1000, 2501)
	tickUntil(72501*time.Millisecond, 73999*time.Millisecond)
	want(1000, 2501)
	tickUntil(74*time.Second, 74*time.Second)
	want(1000, 2)
	want(2000, 2501)
	// Ten minutes on, the ring has forgotten the stall; a day's window
	// (a quota) still allows for it.
	tickUntil(74*time.Second+time.Millisecond, 700*time.Second)
	want(600_000, 2)
	want(MaxStatIntervalMs, 2501)
}

// TestRealClockParksWhenUnread: a clock nobody reads stops ticking; the
// next read takes the exact time and starts the ticker again, without
// counting the parked spell as a late tick.
func TestRealClockParksWhenUnread(t *testing.T) {
	c := NewRealClock()
	t.Cleanup(c.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for c.nowMs.Load() != 0 { // not NowMs: that would be a read
		if time.Now().After(deadline) {
			t.Fatal("the ticker did not park within 10 s without a read")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	before := time.Now().UnixMilli()
	got := c.NowMs()
	after := time.Now().UnixMilli()
	// Readings count whole milliseconds since the clock's start, which
	// need not fall on a wall-clock millisecond: one off at most.
	if got < before-1 || got > after {
		t.Fatalf("a read of a parked clock = %d, want the time itself, in [%d, %d]", got, before-1, after)
	}
	for c.nowMs.Load() < got+3 {
		if time.Now().After(deadline) {
			t.Fatal("the ticker did not tick again after a read woke it")
		}
		time.Sleep(time.Millisecond)
	}
	if slack := c.SlackMs(1000); slack > 50 {
		t.Fatalf("slack after waking = %d ms: the parked spell counted as a late tick", slack)
	}
}

// TestRealClockReadersRaceAWake: readers that find the clock parked all
// see it move forward, never back.
func TestRealClockReadersRaceAWake(t *testing.T) {
	c := NewRealClock()
	t.Cleanup(c.Stop)
	for range 20 {
		for c.nowMs.Load() != 0 {
			time.Sleep(time.Millisecond)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				last := int64(0)
				for range 1000 {
					now := c.NowMs()
					if now < last {
						t.Errorf("the clock went back from %d to %d", last, now)
						return
					}
					last = now
				}
			})
		}
		wg.Wait()
	}
}

func TestRealClockStopsWhileParked(t *testing.T) {
	c := NewRealClock()
	for c.nowMs.Load() != 0 {
		time.Sleep(10 * time.Millisecond)
	}
	before := time.Now().UnixMilli()
	c.Stop()
	if got := c.NowMs(); got < before-1 || got > time.Now().UnixMilli() {
		t.Fatalf("a clock stopped while parked reads %d, want the time it stopped at (%d or just after)", got, before-1)
	}
}

// TestRealClockRemembersWhenReadingsWereReplaced drives refreshes by hand:
// a reading is replaced when a refresh publishes a later one, a late
// refresh replaces it late, and readings older than the ring are unknown.
func TestRealClockRemembersWhenReadingsWereReplaced(t *testing.T) {
	base := time.Now()
	c := &RealClock{base: base, baseMs: base.UnixMilli(), lastRefresh: -time.Millisecond}
	c.refreshAt(0)
	reading := func(d time.Duration) int64 { return c.baseMs + d.Milliseconds() }
	at := func(d time.Duration) int64 { return c.baseMs*int64(time.Millisecond) + int64(d) }
	c.refreshAt(time.Millisecond)
	c.refreshAt(1500 * time.Microsecond) // the same reading: nothing replaced
	c.refreshAt(40 * time.Millisecond)   // late: reading 1 ms was current until 40 ms
	for _, tc := range []struct {
		name    string
		reading int64
		atNs    int64
		want    bool
	}{
		{"replaced on time", reading(0), at(time.Millisecond), true},
		{"not yet replaced a nanosecond before", reading(0), at(time.Millisecond) - 1, false},
		{"replaced late", reading(time.Millisecond), at(40 * time.Millisecond), true},
		{"still current during the late tick", reading(time.Millisecond), at(39 * time.Millisecond), false},
		{"the current reading", reading(40 * time.Millisecond), at(time.Hour), false},
		{"never a reading", reading(20 * time.Millisecond), at(time.Hour), false},
		{"before the clock", reading(0) - 1, at(time.Hour), false},
	} {
		if got := c.replacedAt(tc.reading, tc.atNs); got != tc.want {
			t.Errorf("%s: replacedAt = %v, want %v", tc.name, got, tc.want)
		}
	}
	for d := 41 * time.Millisecond; d <= (replacedRing+41)*time.Millisecond; d += time.Millisecond {
		c.refreshAt(d)
	}
	if c.replacedAt(reading(time.Millisecond), at(time.Hour)) {
		t.Error("a reading older than the ring is still known")
	}
	if !c.replacedAt(reading(replacedRing*time.Millisecond), at(time.Hour)) {
		t.Error("a reading within the ring is unknown")
	}
}
