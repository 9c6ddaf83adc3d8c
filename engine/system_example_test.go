package engine_test

import (
	"fmt"

	"github.com/sluicehq/sluice/engine"
)

// System rules guard every call the process serves, whatever its
// resource: those marked WithInbound. Calls the process makes pass.
func ExampleEngine_LoadSystemRules() {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	err := eng.LoadSystemRules([]engine.SystemRule{
		{Name: "inbound-cap", MetricType: engine.SystemConcurrency, TriggerCount: 1},
	})
	if err != nil {
		panic(err)
	}
	serving, blk := eng.Entry("GET:/orders", engine.WithInbound())
	fmt.Println("first request:", blk == nil)
	_, blk = eng.Entry("GET:/stock", engine.WithInbound())
	fmt.Println("second request:", blk.Reason(), blk.Rule())
	call, blk := eng.Entry("stock-service")
	fmt.Println("outbound call:", blk == nil)
	call.Exit()
	serving.Exit()
	// Output:
	// first request: true
	// second request: system inbound-cap
	// outbound call: true
}
