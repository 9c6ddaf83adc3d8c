//go:build !race

package main

// raceDetector reports whether the test binary runs under the race
// detector (race_test.go).
const raceDetector = false
