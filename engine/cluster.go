package engine

import (
	"context"
	"errors"
)

// ClusterBuckets is how many buckets a cluster rule's window is counted in
// by a ClusterCounter: the shared count of a rule with statIntervalMs w is
// the sum of its last ClusterBuckets buckets of w/ClusterBuckets
// milliseconds (at least 1 ms each), so that a real window that straddles
// two of its windows counts at most one bucket too many.
const ClusterBuckets = 20

// ClusterBucketMs returns the length of the buckets of a cluster rule with
// statIntervalMs intervalMs.
func ClusterBucketMs(intervalMs int64) int64 { return max(intervalMs/ClusterBuckets, 1) }

// ClusterCounter is the count that scope: cluster flow rules share with
// every engine that runs them (Options.Cluster): the server's Redis, or, for
// an instance, the server that leases from it.
//
// No call waits for it. A background round of the engine gives back what
// expired leases left unspent, charges the passes made on credit and asks
// for the leases it will need, in one Exchange; calls decide on the leases
// held. An error means the count is unreachable: every cluster rule then
// does what its clusterFallback says until an Exchange succeeds again.
type ClusterCounter interface {
	// Exchange settles the returns and charges of x and answers its asks,
	// one lease per ask, in order.
	Exchange(ctx context.Context, x ClusterExchange) ([]ClusterLease, error)
}

// ClusterExchange is one round of an engine's leasing.
type ClusterExchange struct {
	// Engine identifies the engine among those that share the count, for
	// as long as it runs (Options.ClusterEngine).
	Engine  string
	Returns []ClusterReturn
	Asks    []ClusterAsk
}

// ClusterAsk asks for passes of one rule's shared count.
type ClusterAsk struct {
	// Key names the shared count: the rule's name, the same on every
	// engine that runs the rule.
	Key string
	// Threshold is how many passes every engine together may make in any
	// IntervalMs.
	Threshold  int64
	IntervalMs int64
	// Want is how many passes the engine asks for: the counter grants
	// what the window has room for, up to Want. An ask that wants none
	// still counts the engine among those that share the rule.
	Want int64
	// Charge is how many passes the engine made without a lease since
	// its last exchange (on credit after an idle spell, or falling back
	// while the count was unreachable): they are counted, room or not, in
	// the current bucket or, with ChargeSpanMs, spread evenly over the
	// buckets of the last ChargeSpanMs, as they were made.
	Charge       int64
	ChargeSpanMs int64
	// Next asks for the bucket after the current one, so that a lease is
	// held when it starts.
	Next bool
}

// ClusterReturn gives back what a lease left unspent, so that the shared
// count holds only the passes made.
type ClusterReturn struct {
	Key    string
	Bucket int64
	Unused int64
}

// ClusterLease answers a ClusterAsk: Granted passes to be made in the
// bucket numbered Bucket, which starts StartsInMs and ends EndsInMs after
// the answer (by the counter's clock, so engines' clocks need not agree).
type ClusterLease struct {
	Granted    int64
	Bucket     int64
	StartsInMs int64
	EndsInMs   int64
	// Engines is how many engines asked for the key lately, this one
	// included: a clusterFallback local rule with no
	// clusterFallbackThreshold divides its threshold by it.
	Engines int
	// Used is how many passes the window the lease is counted in holds,
	// the grant included, all engines together: a rule that falls back
	// within the window counts its engine's share of them.
	Used int64
}

// ErrClusterAnswer is returned, wrapped, by a ClusterCounter whose answer
// does not fit the exchange (a lease short, a negative grant).
var ErrClusterAnswer = errors.New("cluster counter: answer does not fit the exchange")

// Validate reports why the leases answer x wrongly, or nil.
func (x ClusterExchange) Validate(leases []ClusterLease) error {
	if len(leases) != len(x.Asks) {
		return ErrClusterAnswer
	}
	for i, l := range leases {
		if l.Granted < 0 || l.Granted > max(x.Asks[i].Want, 0) || l.EndsInMs < l.StartsInMs || l.Used < 0 {
			return ErrClusterAnswer
		}
	}
	return nil
}
