//go:build !race

package server

// raceDetector is true when the tests run under the race detector, whose
// sync.Pool drops items at random: allocation counts are not held then.
const raceDetector = false
