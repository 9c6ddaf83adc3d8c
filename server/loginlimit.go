package server

import (
	"sync"

	"github.com/sluicehq/sluice/engine/window"
)

// Login throttling: failed logins counted over a sliding window, per
// username and per client address, with the engine's own LeapArray.
const (
	loginWindowMs        = 5 * 60 * 1000
	loginWindowBuckets   = 10
	maxFailuresPerUser   = 5
	maxFailuresPerClient = 20
	// maxLoginKeys bounds the keys kept; past it, idle ones are dropped.
	maxLoginKeys = 10_000
)

// loginLimiter counts failed logins per key ("user:alice", "ip:10.0.0.1").
type loginLimiter struct {
	mu   sync.Mutex
	keys map[string]*window.LeapArray
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{keys: map[string]*window.LeapArray{}}
}

// retryAfterMs returns how long a login for any of keys must wait: 0 if
// none has reached its limit.
func (l *loginLimiter) retryAfterMs(nowMs int64, user, client string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var wait int64
	for key, limit := range map[string]int64{"user:" + user: maxFailuresPerUser, "ip:" + client: maxFailuresPerClient} {
		la := l.keys[key]
		if la == nil || la.Sum(nowMs, window.Error) < limit {
			continue
		}
		// Until the oldest bucket with failures leaves the window.
		oldest := nowMs
		for i := range la.Len() {
			if b := la.At(i); b.Get(window.Error) > 0 && b.StartMs() > nowMs-loginWindowMs {
				oldest = min(oldest, b.StartMs())
			}
		}
		wait = max(wait, oldest+loginWindowMs-nowMs)
	}
	return wait
}

// fail counts a failed login for the user and the client.
func (l *loginLimiter) fail(nowMs int64, user, client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.keys) >= maxLoginKeys {
		for key, la := range l.keys {
			if la.Sum(nowMs, window.Error) == 0 {
				delete(l.keys, key)
			}
		}
	}
	for _, key := range []string{"user:" + user, "ip:" + client} {
		la := l.keys[key]
		if la == nil {
			la, _ = window.New(loginWindowBuckets, loginWindowMs, nil)
			l.keys[key] = la
		}
		la.Current(nowMs).Add(window.Error, 1)
	}
}

// succeed forgets the user's failures.
func (l *loginLimiter) succeed(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, "user:"+user)
}
