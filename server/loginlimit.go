package server

import (
	"strings"
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
	// pendingWaitMs is the wait of a login that only the logins still
	// being checked keep out: they settle within a password check.
	pendingWaitMs = 1000
)

// loginLimiter counts failed logins per key ("user:alice", "ip:10.0.0.1").
type loginLimiter struct {
	mu   sync.Mutex
	keys map[string]*window.LeapArray
	// pending counts, by key, the logins let through whose password is
	// still being checked. Each may be a failure, so each counts against
	// the limit: else a burst of concurrent guesses would all pass before
	// the first failure is counted.
	pending map[string]int64
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{keys: map[string]*window.LeapArray{}, pending: map[string]int64{}}
}

// loginKey is a key logins are counted under, with its limit.
type loginKey struct {
	name  string
	limit int64
}

// loginKeys are the keys of a login for user from client. A username is
// counted in lower case, as logins match it: else each spelling of it
// (alice, Alice, ALICE…) would get guesses of its own.
func loginKeys(user, client string) [2]loginKey {
	return [2]loginKey{{"user:" + strings.ToLower(user), maxFailuresPerUser}, {"ip:" + client, maxFailuresPerClient}}
}

// begin lets a login for user from client through, counted as pending
// until fail, succeed or abandon settles it, and returns 0; or returns
// how long it must wait, and counts nothing.
func (l *loginLimiter) begin(nowMs int64, user, client string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := loginKeys(user, client)
	var wait int64
	for _, k := range keys {
		wait = max(wait, l.waitMs(nowMs, k))
	}
	if wait > 0 {
		return wait
	}
	for _, k := range keys {
		l.pending[k.name]++
	}
	return 0
}

// waitMs is how long a login under k must wait: while k's failures are
// at its limit, until the oldest leaves the window; while only the
// pending logins take it there, pendingWaitMs; else 0.
func (l *loginLimiter) waitMs(nowMs int64, k loginKey) int64 {
	var failures int64
	la := l.keys[k.name]
	if la != nil {
		failures = la.Sum(nowMs, window.Error)
	}
	switch {
	case failures >= k.limit:
		oldest := nowMs
		for i := range la.Len() {
			if b := la.At(i); b.Get(window.Error) > 0 && b.StartMs() > nowMs-loginWindowMs {
				oldest = min(oldest, b.StartMs())
			}
		}
		return oldest + loginWindowMs - nowMs
	case failures+l.pending[k.name] >= k.limit:
		return pendingWaitMs
	}
	return 0
}

// settle ends a pending login. Called with l.mu held.
func (l *loginLimiter) settle(keys [2]loginKey) {
	for _, k := range keys {
		if l.pending[k.name]--; l.pending[k.name] <= 0 {
			delete(l.pending, k.name)
		}
	}
}

// fail settles a login as failed: it counts for the user and the client.
func (l *loginLimiter) fail(nowMs int64, user, client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := loginKeys(user, client)
	l.settle(keys)
	if len(l.keys) >= maxLoginKeys {
		for key, la := range l.keys {
			if la.Sum(nowMs, window.Error) == 0 {
				delete(l.keys, key)
			}
		}
	}
	for _, k := range keys {
		la := l.keys[k.name]
		if la == nil {
			la, _ = window.New(loginWindowBuckets, loginWindowMs, nil)
			l.keys[k.name] = la
		}
		la.Current(nowMs).Add(window.Error, 1)
	}
}

// succeed settles a login as successful: the user's failures are
// forgotten.
func (l *loginLimiter) succeed(user, client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := loginKeys(user, client)
	l.settle(keys)
	delete(l.keys, keys[0].name)
}

// abandon settles a login whose password could not be checked (the
// store failed): it counts neither way.
func (l *loginLimiter) abandon(user, client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(loginKeys(user, client))
}
