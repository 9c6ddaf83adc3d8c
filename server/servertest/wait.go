package servertest

import (
	"testing"
	"time"
)

// WaitUntil polls check every 10 ms until it reports true, and fails t,
// naming what it waited for, once timeout has passed: for what a test
// sees happen over a real listener or in another process, where no clock
// of the test's own can be moved.
func WaitUntil(t testing.TB, what string, timeout time.Duration, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		<-tick.C
	}
}
