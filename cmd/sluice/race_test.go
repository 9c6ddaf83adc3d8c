//go:build race

package main

// raceDetector reports whether the test binary runs under the race
// detector, which the tests of a size, not of concurrency, skip: make test
// runs them again without it.
const raceDetector = true
