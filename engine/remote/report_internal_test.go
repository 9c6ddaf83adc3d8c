package remote

import (
	"fmt"
	"testing"

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
	live := newReporter(10).liveFigures(engineStats{e})
	if len(live) != maxLivePerReport || live[0].Resource != "busy" || live[0].PassQps != 5 {
		t.Fatalf("got %d live figures, the first %+v; want %d, busy's first", len(live), live[0], maxLivePerReport)
	}
}
