package remote

import (
	"testing"
	"time"
)

func TestBackoffDoublesWithJitterUpToItsBound(t *testing.T) {
	b := backoff{min: 500 * time.Millisecond, max: 30 * time.Second}
	ceilings := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for round := range 100 {
		b.reset()
		for i, ceiling := range ceilings {
			if d := b.next(); d < ceiling/2 || d > ceiling {
				t.Fatalf("round %d, retry %d waits %s, want between %s and %s", round, i, d, ceiling/2, ceiling)
			}
		}
	}
}
