package engine

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

func TestScratchHeap(t *testing.T) {
	runtime.MemProfileRate = 1
	clock := NewManualClock(0)
	e := New(Options{Clock: clock})
	rules := make([]FlowRule, 10000)
	for i := range rules {
		rules[i] = FlowRule{Name: fmt.Sprintf("rule-%d", i), Resource: fmt.Sprintf("resource-%d", i), Threshold: 100}
	}
	if err := e.LoadFlowRules(rules); err != nil {
		t.Fatal(err)
	}
	for ms := range int64(3) {
		clock.Set(ms * 250)
		for i := range rules {
			if en, blk := e.Entry(rules[i].Resource); blk == nil {
				en.Exit()
			}
		}
	}
	rules = nil
	runtime.GC()
	f, _ := os.Create("/tmp/exact/heap.out")
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	runtime.KeepAlive(e)
}
