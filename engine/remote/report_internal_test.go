package remote

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

func TestLiveFiguresKeepTheBusiestResources(t *testing.T) {
	e := engine.New(engine.Options{Clock: engine.NewManualClock(0)})
	defer e.Close()
	for i := range maxLivePerReport + 10 {
		if entry, blk := e.Entry(fmt.Sprintf("quiet-%d", i)); blk == nil {
			entry.Exit()
		}
	}
	for range 5 {
		if entry, blk := e.Entry("busy"); blk == nil {
			entry.Exit()
		}
	}
	live := newReporter(10, 0).liveFigures(engineStats{e})
	if len(live) != maxLivePerReport || live[0].Resource != "busy" || live[0].PassQps != 5 {
		t.Fatalf("got %d live figures, the first %+v; want %d, busy's first", len(live), live[0], maxLivePerReport)
	}
}

// TestMinutesWaitTheirSpread: a finished minute stays out of the outbox
// until the reporter's delay past its end, the counts collected meanwhile
// still added to it, and a flush takes it whatever the delay.
func TestMinutesWaitTheirSpread(t *testing.T) {
	clock := engine.NewManualClock(0)
	e := engine.New(engine.Options{Clock: clock})
	defer e.Close()
	r := newReporter(10, 5*time.Second)
	call := func() {
		if entry, blk := e.Entry("r"); blk == nil {
			entry.Exit()
		}
	}
	call()
	clock.Advance(minuteMs + 4_999)
	r.collect(engineStats{e}, false)
	if n, _ := r.counts(); n != 0 {
		t.Fatalf("%d minutes finished 4.999 s after the minute, want none before the 5 s delay", n)
	}
	clock.Advance(1)
	r.collect(engineStats{e}, false)
	if n, _ := r.counts(); n != 1 || r.outbox[0].Counts.Pass != 1 {
		t.Fatalf("outbox %+v at the delay, want minute 0 with its pass", r.outbox)
	}
	call()
	r.collect(engineStats{e}, true)
	if n, _ := r.counts(); n != 2 {
		t.Fatalf("%d minutes after a flush, want the open one too", n)
	}
	for range 100 {
		if d := spreadDelay(time.Second); d < 0 || d >= time.Second {
			t.Fatalf("a delay of %v, want one in [0, 1s)", d)
		}
	}
	if d := spreadDelay(0); d != 0 {
		t.Fatalf("a delay of %v with no spread", d)
	}
}
