package engine_test

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/engine"
)

// A Go program embeds the engine, loads its rules and asks before each call.
func Example() {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	err := eng.LoadFlowRules([]engine.FlowRule{
		{Name: "orders-qps", Resource: "orders", Threshold: 2},
	})
	if err != nil {
		panic(err)
	}
	orders := eng.Resource("orders") // a handle skips the name lookup
	for i := range 3 {
		e, blk := orders.Entry()
		if blk != nil {
			fmt.Printf("call %d blocked by %s rule %s\n", i, blk.Reason(), blk.Rule())
			continue
		}
		callErr := placeOrder()
		e.Exit(engine.WithError(callErr))
		fmt.Printf("call %d passed\n", i)
	}
	// Output:
	// call 0 passed
	// call 1 passed
	// call 2 blocked by flow rule orders-qps
}

func placeOrder() error { return nil }

// Rules are validated as a set; every bad field is named.
func ExampleEngine_LoadFlowRules() {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	err := eng.LoadFlowRules([]engine.FlowRule{
		{Resource: "orders", Threshold: -1, MaxQueueingTimeMs: 100},
	})
	var invalid *engine.ValidationError
	if errors.As(err, &invalid) {
		for _, f := range invalid.Fields {
			fmt.Println(f.Field, f.Message)
		}
	}
	// Output:
	// rules[0].threshold must be >= 0
	// rules[0].maxQueueingTimeMs applies only to controlBehavior throttling
}

// A throttling rule spaces calls evenly; with WithNoWait the caller is told
// how long to wait instead of being put to sleep.
func ExampleWithNoWait() {
	clock := engine.NewManualClock(0)
	eng := engine.New(engine.Options{Clock: clock})
	defer eng.Close()
	err := eng.LoadFlowRules([]engine.FlowRule{{
		Resource: "emails", Threshold: 10, // 10 a second: one every 100 ms
		ControlBehavior: engine.BehaviorThrottling, MaxQueueingTimeMs: 250,
	}})
	if err != nil {
		panic(err)
	}
	for range 4 {
		e, blk := eng.Entry("emails", engine.WithNoWait())
		if blk != nil {
			fmt.Println("blocked: the queue is longer than 250 ms")
			continue
		}
		fmt.Printf("send in %d ms\n", e.WaitMs())
		e.Exit()
	}
	// Output:
	// send in 0 ms
	// send in 100 ms
	// send in 200 ms
	// blocked: the queue is longer than 250 ms
}
