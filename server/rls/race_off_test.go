//go:build !race

package rls_test

// raceDetector is true when the tests run under the race detector (see
// race_on_test.go).
const raceDetector = false
