package wire

import "github.com/sluicehq/sluice/engine"

// ClusterExchange is the body of POST /cluster/exchange: an instance's
// round of leasing (engine.ClusterExchange) from the server's shared count.
type ClusterExchange struct {
	// Engine identifies the instance's engine among those that share
	// the count.
	Engine  string          `json:"engine" example:"shop-7f9c-1"`
	Returns []ClusterReturn `json:"returns"`
	Asks    []ClusterAsk    `json:"asks"`
} //@name server.ClusterExchange

// ClusterAsk asks for passes of one rule's shared count (engine.ClusterAsk).
type ClusterAsk struct {
	// Key names the shared count: the rule's name, the same on every
	// engine that runs the rule.
	Key string `json:"key" example:"orders-global"`
	// Threshold is how many passes every engine together may make in any
	// IntervalMs.
	Threshold  int64 `json:"threshold" example:"1000"`
	IntervalMs int64 `json:"intervalMs" example:"1000"`
	// Want is how many passes the engine asks for: the counter grants
	// what the window has room for, up to Want. An ask that wants none
	// still counts the engine among those that share the rule.
	Want int64 `json:"want" example:"100"`
	// Charge is how many passes the engine made without a lease since
	// its last exchange (on credit after an idle spell, or falling back
	// while the count was unreachable): they are counted, room or not, in
	// the current bucket or, with ChargeSpanMs, spread evenly over the
	// buckets of the last ChargeSpanMs, as they were made.
	Charge       int64 `json:"charge" example:"0"`
	ChargeSpanMs int64 `json:"chargeSpanMs" example:"0"`
	// Next asks for the bucket after the current one, so that a lease is
	// held when it starts.
	Next bool `json:"next" example:"false"`
} //@name server.ClusterAsk

// ClusterReturn gives back what a lease left unspent (engine.ClusterReturn).
type ClusterReturn struct {
	Key    string `json:"key" example:"orders-global"`
	Bucket int64  `json:"bucket" example:"29427131"`
	Unused int64  `json:"unused" example:"12"`
} //@name server.ClusterReturn

// ClusterLease answers a ClusterAsk (engine.ClusterLease): Granted passes
// to be made in the bucket numbered Bucket, which starts StartsInMs and ends
// EndsInMs after the answer.
type ClusterLease struct {
	Granted    int64 `json:"granted" example:"100"`
	Bucket     int64 `json:"bucket" example:"29427131"`
	StartsInMs int64 `json:"startsInMs" example:"0"`
	EndsInMs   int64 `json:"endsInMs" example:"600"`
	// Engines is how many engines asked for the key lately, this one
	// included: a clusterFallback local rule with no
	// clusterFallbackThreshold divides its threshold by it.
	Engines int `json:"engines" example:"3"`
	// Used is how many passes the window the lease is counted in holds,
	// the grant included, all engines together: a rule that falls back
	// within the window counts its engine's share of them.
	Used int64 `json:"used" example:"640"`
} //@name server.ClusterLease

// ClusterAnswer is the answer of POST /cluster/exchange: one lease per ask,
// in order.
type ClusterAnswer struct {
	Leases []ClusterLease `json:"leases"`
} //@name server.ClusterExchangeAnswer

// ExchangeOf is x as an instance posts it.
func ExchangeOf(x engine.ClusterExchange) ClusterExchange {
	out := ClusterExchange{Engine: x.Engine, Returns: make([]ClusterReturn, len(x.Returns)), Asks: make([]ClusterAsk, len(x.Asks))}
	for i, r := range x.Returns {
		out.Returns[i] = ClusterReturn(r)
	}
	for i, a := range x.Asks {
		out.Asks[i] = ClusterAsk(a)
	}
	return out
}

// AnswerOf is leases as the server answers them.
func AnswerOf(leases []engine.ClusterLease) ClusterAnswer {
	out := ClusterAnswer{Leases: make([]ClusterLease, len(leases))}
	for i, l := range leases {
		out.Leases[i] = ClusterLease(l)
	}
	return out
}

// Engine is the answer's leases as the engine takes them.
func (a ClusterAnswer) Engine() []engine.ClusterLease {
	leases := make([]engine.ClusterLease, len(a.Leases))
	for i, l := range a.Leases {
		leases[i] = engine.ClusterLease(l)
	}
	return leases
}
