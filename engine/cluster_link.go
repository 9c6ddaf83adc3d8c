package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Timing of the rounds of an engine with cluster rules.
const (
	// clusterRoundBusy is the pause between rounds while a cluster rule
	// has calls, clusterRoundIdle while none has.
	clusterRoundBusy = 10 * time.Millisecond
	clusterRoundIdle = 50 * time.Millisecond
	// clusterRoundFailing is the pause between rounds while the count is
	// unreachable: short, since the engines that share a rule come back
	// one by one, each on its first round that reaches the count.
	clusterRoundFailing = 25 * time.Millisecond
	// defaultClusterTimeout bounds a round's exchange by default: with the
	// pause, a count that stops answering is known within 100 ms.
	defaultClusterTimeout = 50 * time.Millisecond
	// clusterAskAheadMs is how long before its lease ends a rule asks for
	// the next bucket's.
	clusterAskAheadMs = 30
	// clusterLivenessMs is how often an idle rule still asks, so that the
	// count knows its engine shares it.
	clusterLivenessMs = 500
	// clusterTopUpLeastMs is the least time a lease must have left for a
	// rule that spent it to ask for more in its bucket.
	clusterTopUpLeastMs = 2
	// clusterHeadroom is how much more than its demand a rule asks for.
	clusterHeadroom = 1.25
	// MinClusterStatIntervalMs is the shortest statIntervalMs of a cluster
	// rule: its buckets must outlast a round.
	MinClusterStatIntervalMs = 1000
)

// ClusterState is whether an engine's cluster rules decide on the shared
// count or on their fallbacks.
type ClusterState string

// Cluster states.
const (
	// ClusterShared: the count answers; cluster rules spend leases of it.
	ClusterShared ClusterState = "cluster"
	// ClusterFallingBack: the count is unreachable; each cluster rule does
	// what its clusterFallback says.
	ClusterFallingBack ClusterState = "fallback"
)

// ClusterStateChange is a change of an engine's ClusterState, told to
// Options.OnClusterStateChange.
type ClusterStateChange struct {
	State ClusterState
	// Err is why the count is unreachable, for ClusterFallingBack.
	Err error
	// AtMs is when the engine decided, by its clock.
	AtMs int64
}

// ClusterStatus is what an engine's cluster rules decide on.
type ClusterStatus struct {
	// Enabled: the engine has a ClusterCounter.
	Enabled bool
	State   ClusterState
	// SinceMs is when the state began, by the engine's clock; LastError
	// why the count was last unreachable.
	SinceMs   int64
	LastError string
	// Changes counts the state changes since the engine started.
	Changes int64
	Rules   []ClusterRuleStatus
}

// ClusterRuleStatus is the state of one loaded cluster rule.
type ClusterRuleStatus struct {
	Rule     string
	Resource string
	// Engines is how many engines shared the rule, as the count last said.
	Engines  int
	Fallback ClusterFallback
	// FallbackThreshold is the threshold of a local fallback: in effect
	// while the state is ClusterFallingBack, what it would be otherwise.
	FallbackThreshold float64
	// FallingBack: the rule decides by its fallback now.
	FallingBack bool
}

// clusterLink runs an engine's rounds with its ClusterCounter.
type clusterLink struct {
	counter ClusterCounter
	engine  string
	// nowMs reads the engine's clock, exactly for the real one: leases
	// are for buckets of real time, which a cached reading may lag.
	nowMs    func() int64
	timeout  time.Duration
	onChange func(ClusterStateChange)

	mu        sync.Mutex
	shares    map[*clusterShare]struct{}
	dropped   []*clusterShare
	state     ClusterState
	sinceMs   int64
	lastError string
	changes   int64

	roundMu      sync.Mutex // one round at a time; guards the fields below
	lastLiveness int64
	lastRound    int64

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newClusterLink(opts Options, clock Clock) *clusterLink {
	k := &clusterLink{
		counter: opts.Cluster, engine: opts.ClusterEngine, nowMs: clock.NowMs, onChange: opts.OnClusterStateChange,
		timeout: cmp.Or(opts.ClusterTimeout, defaultClusterTimeout),
		shares:  map[*clusterShare]struct{}{}, state: ClusterShared, sinceMs: clock.NowMs(),
		lastLiveness: math.MinInt64 / 2, lastRound: clock.NowMs(),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if rc, ok := clock.(*RealClock); ok {
		k.nowMs = func() int64 { return max(rc.NowMs(), rc.ceilMs()) }
	}
	if k.engine == "" {
		var id [8]byte
		_, _ = rand.Read(id[:])
		k.engine = hex.EncodeToString(id[:])
	}
	return k
}

// replace swaps the shares of unloaded cluster rules for those of loaded
// ones; the next round returns what the unloaded held. The caller holds
// the engine's loadMu.
func (k *clusterLink) replace(removed, added []*clusterShare) {
	if len(removed) == 0 && len(added) == 0 {
		return
	}
	k.mu.Lock()
	for _, s := range removed {
		if _, ok := k.shares[s]; ok && !slices.Contains(added, s) {
			delete(k.shares, s)
			k.dropped = append(k.dropped, s)
		}
	}
	for _, s := range added {
		k.shares[s] = struct{}{}
		if k.state == ClusterFallingBack {
			s.fallBack(k.nowMs())
		}
	}
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// run holds rounds until stop, then returns what the leases left.
func (k *clusterLink) run() {
	defer close(k.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		pause, any := k.round(context.Background())
		if !any {
			pause = time.Hour // until a load wakes it
		}
		timer.Reset(pause)
		select {
		case <-k.stop:
			k.mu.Lock()
			for s := range k.shares {
				k.dropped = append(k.dropped, s)
			}
			clear(k.shares)
			k.mu.Unlock()
			k.round(context.Background())
			return
		case <-k.wake:
		case <-timer.C:
		}
	}
}

// round exchanges with the count once: it returns what ended leases left,
// charges the passes made on credit, asks for the leases the rules'
// demand calls for, and applies the answer, or has every rule fall back.
// It returns how long to wait for the next round and whether any rule
// is loaded.
func (k *clusterLink) round(ctx context.Context) (time.Duration, bool) {
	k.roundMu.Lock()
	defer k.roundMu.Unlock()
	now := k.nowMs()
	k.mu.Lock()
	shares := make([]*clusterShare, 0, len(k.shares))
	for s := range k.shares {
		if exp := s.rule.ExpiresAtMs; exp != 0 && now >= exp {
			// Expired: it leases no more, and is no longer listed.
			delete(k.shares, s)
			k.dropped = append(k.dropped, s)
			continue
		}
		shares = append(shares, s)
	}
	dropped := k.dropped
	k.dropped = nil
	failing := k.state == ClusterFallingBack
	k.mu.Unlock()

	x := ClusterExchange{Engine: k.engine}
	for _, s := range dropped {
		s.dropped = true
		x.Returns = s.settle(now, x.Returns)
	}
	type asked struct {
		share *clusterShare
		next  bool
	}
	var asks []asked
	busy := false
	// A failing count is asked every round: the first answer ends the
	// fallback.
	liveness := failing || now-k.lastLiveness >= clusterLivenessMs
	elapsedMs := float64(max(now-k.lastRound, 1))
	k.lastRound = now
	for _, s := range shares {
		x.Returns = s.settle(now, x.Returns)
		calls := s.asked.Swap(0)
		busy = busy || calls > 0
		if calls == 0 {
			s.idle.Store(true)
		}
		// Demand rises at once and falls by halves: a lease sized on a
		// rising demand's average would run out.
		rate := float64(calls) / elapsedMs
		s.ratePerMs = max(rate, 0.5*s.ratePerMs+0.5*rate)
		if calls == 0 && s.ratePerMs < 0.01 {
			s.ratePerMs = 0
		}
		ask := ClusterAsk{Key: s.rule.Name, Threshold: int64(s.rule.Threshold), IntervalMs: s.rule.StatIntervalMs, Charge: s.credit.Swap(0)}
		if ask.Charge > 0 {
			s.spent = append(s.spent, spentLease{endMs: now, passes: ask.Charge})
		}
		if f := s.fallback.Load(); f != nil {
			// Asked every round while the count is away; the first
			// answer ends the fallback, its passes charged over the
			// time they were made in.
			owed, spanMs := f.owed(now, s.rule.StatIntervalMs)
			ask.Charge += owed
			ask.ChargeSpanMs = spanMs
		}
		bucketMs := ClusterBucketMs(s.rule.StatIntervalMs)
		cur, next := s.lease.Load(), s.next.Load()
		switch {
		case s.ratePerMs > 0 && (cur == nil || now >= cur.endMs || now < cur.startMs) && next == nil:
			// Demand and nothing to spend: this bucket's share now.
			ask.Want = s.want(float64(bucketMs - now%bucketMs))
		case s.ratePerMs > 0 && cur != nil && cur.left.Load() <= 0 && calls > 0 && cur.endMs-now > clusterTopUpLeastMs:
			// The lease ran out with the bucket still going: top it up.
			ask.Want = s.want(float64(cur.endMs - now))
		}
		if ask.Want > 0 || ask.Charge > 0 || liveness {
			asks = append(asks, asked{share: s})
			x.Asks = append(x.Asks, ask)
		}
		if s.ratePerMs > 0 && next == nil && cur != nil && cur.endMs-now <= clusterAskAheadMs {
			ahead := ask
			ahead.Charge, ahead.ChargeSpanMs, ahead.Next, ahead.Want = 0, 0, true, s.want(float64(bucketMs))
			asks = append(asks, asked{share: s, next: true})
			x.Asks = append(x.Asks, ahead)
		}
	}
	pause := clusterRoundIdle
	if busy {
		pause = clusterRoundBusy
	}
	if len(x.Asks) == 0 && len(x.Returns) == 0 {
		return pause, len(shares) > 0
	}
	if liveness {
		k.lastLiveness = now
	}
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	leases, err := k.counter.Exchange(ctx, x)
	cancel()
	if err == nil {
		err = x.Validate(leases)
	}
	answered := k.nowMs()
	if err != nil {
		k.fail(answered, err, shares)
		return clusterRoundFailing, len(shares) > 0
	}
	for i, a := range asks {
		a.share.grant(answered, leases[i], a.next, x.Asks[i].Want > 0)
	}
	if failing {
		k.setState(ClusterShared, answered, nil)
	}
	return pause, len(shares) > 0
}

// want is how many passes s asks for to cover spanMs of its demand.
func (s *clusterShare) want(spanMs float64) int64 {
	return min(int64(math.Ceil(s.ratePerMs*spanMs*clusterHeadroom)), int64(s.rule.Threshold))
}

// fail has every rule fall back, the count unreachable since nowMs.
func (k *clusterLink) fail(nowMs int64, err error, shares []*clusterShare) {
	for _, s := range shares {
		s.fallBack(nowMs)
	}
	k.setState(ClusterFallingBack, nowMs, err)
}

func (k *clusterLink) setState(state ClusterState, nowMs int64, err error) {
	k.mu.Lock()
	changed := k.state != state
	if changed {
		k.state, k.sinceMs = state, nowMs
		k.changes++
	}
	if err != nil {
		k.lastError = err.Error()
	}
	if state == ClusterShared {
		for s := range k.shares {
			if f := s.fallback.Swap(nil); f != nil && f.local != nil {
				s.rejoin.Store(&clusterRejoin{local: f.local, untilMs: nowMs + 2*s.rule.StatIntervalMs})
			}
		}
	}
	k.mu.Unlock()
	if changed && k.onChange != nil {
		k.onChange(ClusterStateChange{State: state, Err: err, AtMs: nowMs})
	}
}

// status reports the link's state and its rules'.
func (k *clusterLink) status() ClusterStatus {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := ClusterStatus{Enabled: true, State: k.state, SinceMs: k.sinceMs, LastError: k.lastError, Changes: k.changes}
	for s := range k.shares {
		st.Rules = append(st.Rules, ClusterRuleStatus{
			Rule: s.rule.Name, Resource: s.rule.Resource, Engines: int(s.engines.Load()), Fallback: s.rule.ClusterFallback,
			FallbackThreshold: s.fallbackThreshold(), FallingBack: s.fallback.Load() != nil,
		})
	}
	slices.SortFunc(st.Rules, func(a, b ClusterRuleStatus) int { return strings.Compare(a.Rule, b.Rule) })
	return st
}
