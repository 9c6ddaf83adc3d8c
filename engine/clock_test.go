package engine

import (
	"testing"
	"time"
)

func TestRealClockAdvancesAndStops(t *testing.T) {
	c := NewRealClock()
	start := c.NowMs()
	if diff := start - time.Now().UnixMilli(); diff > 5 || diff < -5 {
		t.Fatalf("clock reads %d, %d ms off the wall clock", start, diff)
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

func TestRealClockSlackFollowsLateTicks(t *testing.T) {
	c := NewRealClock()
	c.Stop()
	<-c.stop
	if got := c.SlackMs(); got < 2 {
		t.Fatalf("slack of a fresh clock = %d ms, want >= 2 (a reading rounds down and waits for the next tick)", got)
	}
	// The ticker ran 50 ms late: readings were stale that long.
	c.lastRefresh = time.Since(c.base) - 50*time.Millisecond
	c.refresh()
	late := c.SlackMs()
	if late < 51 {
		t.Fatalf("slack after a tick 50 ms late = %d ms, want >= 51", late)
	}
	for range slackDecayTicks {
		c.refresh()
	}
	if got := c.SlackMs(); got != late-1 {
		t.Fatalf("slack after %d on-time ticks = %d ms, want %d", slackDecayTicks, got, late-1)
	}
}
