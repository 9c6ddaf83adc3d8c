package remote

import (
	"math/rand/v2"
	"time"
)

// backoff spaces the retries of a failing call: each delay doubles from
// min up to max, and is drawn between half of it and all of it, so that a
// fleet that lost the server at once does not come back at once.
type backoff struct {
	min, max time.Duration
	current  time.Duration // 0 after a success
}

// next returns how long to wait before the next retry.
func (b *backoff) next() time.Duration {
	if b.current == 0 {
		b.current = b.min
	} else {
		b.current = min(2*b.current, b.max)
	}
	half := b.current / 2
	return half + rand.N(b.current-half+1)
}

// reset starts the delays over, after a success.
func (b *backoff) reset() { b.current = 0 }
