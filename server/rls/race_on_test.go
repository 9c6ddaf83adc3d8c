//go:build race

package rls_test

// raceDetector is true when the tests run under the race detector, which
// slows every call several times over: figures that measure time are held
// to looser bounds then.
const raceDetector = true
