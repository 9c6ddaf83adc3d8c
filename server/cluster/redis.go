package cluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/sluicehq/sluice/engine"
)

// DefaultTimeout bounds each dial, read and write to Redis unless
// Options.Timeout says otherwise: short, so that an unreachable Redis is an
// error within about twice that and cluster rules fall back promptly.
const DefaultTimeout = 50 * time.Millisecond

// engineMemory is how long an engine counts among a rule's engines after
// its last ask.
const engineMemory = 2 * time.Second

// maxCount bounds the counts sent to the script: Lua's numbers are
// doubles, exact up to 2^53, and a threshold that large is no limit.
const maxCount = 1 << 53

// ErrKey is returned, wrapped, for a rule key that cannot name Redis keys:
// empty, or holding '{' or '}', which would break the hash tag that keeps
// one rule's keys in one slot.
var ErrKey = errors.New("cluster: key is empty or holds '{' or '}'")

//go:embed exchange.lua
var exchangeSource string

var exchangeScript = redis.NewScript(exchangeSource)

// Options configures a Redis counter.
type Options struct {
	// URL is the Redis server, as redis.ParseURL reads it
	// (redis://[user:password@]host:port/db, rediss:// for TLS).
	URL string
	// KeyPrefix starts every key the counter writes.
	// Optional. Default: "sluice:".
	KeyPrefix string
	// Timeout bounds each dial, read and write, whatever the URL says.
	// Optional. Default: DefaultTimeout (50 ms).
	Timeout time.Duration
}

// Redis is an engine.ClusterCounter kept in a Redis server. A rule's
// count is kept in buckets of engine.ClusterBucketMs(intervalMs), numbered
// by Redis's clock (milliseconds since the epoch divided by the bucket
// length), under <prefix>c:{<key>}:<bucket>, each expiring once no window
// can hold it; the engines that asked for the rule lately are a sorted set
// under <prefix>c:{<key>}:engines. The braces are a hash tag: one rule's
// keys share a slot.
//
// An Exchange is one Lua script, run atomically: no command is retried, so
// an exchange is applied once at most; one that fails by a timeout may
// have been applied with its answer lost (its grants then count unused
// until their buckets expire, and its returns were made). A Redis that is
// down is an error within about two timeouts. The first exchange after
// Redis comes back succeeds: after a failed exchange the counter dials
// afresh (a new client, at most every renewEvery), since the Redis
// client, after enough failed dials, would only dial again once a second.
//
// A Redis is safe for concurrent use.
type Redis struct {
	opts   redis.Options
	prefix string
	// engineMemory is how long an engine counts among a rule's engines
	// after its last ask; tests shorten it.
	engineMemory time.Duration

	client atomic.Pointer[redis.Client]
	mu     sync.Mutex // guards the renewal and the closing of client
	closed bool
	// renewedAt is when the client was last replaced.
	renewedAt time.Time
}

// renewEvery is the least time between two replacements of the client.
const renewEvery = 20 * time.Millisecond

var _ engine.ClusterCounter = (*Redis)(nil)

// New returns a counter on the Redis at opts.URL. It does not dial: Ping
// checks that Redis answers.
func New(opts Options) (*Redis, error) {
	ro, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("cluster: redis URL: %w", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = timeout, timeout, timeout
	// One dial per attempt and no retried command: an exchange is not
	// idempotent, and a Redis that is away must be an error at once.
	ro.DialerRetries = 1
	ro.MaxRetries = -1
	ro.ContextTimeoutEnabled = true
	ro.DisableIdentity = true
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = "sluice:"
	}
	r := &Redis{opts: *ro, prefix: prefix, engineMemory: engineMemory, renewedAt: time.Now()}
	r.client.Store(redis.NewClient(ro))
	return r, nil
}

// Close closes the connections to Redis.
func (r *Redis) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.client.Load().Close()
}

// renew replaces failed, the client an exchange failed on, with a new one
// that dials at once, unless it was replaced already or lately.
func (r *Redis) renew(failed *redis.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.client.Load() != failed || time.Since(r.renewedAt) < renewEvery {
		return
	}
	opts := r.opts
	r.client.Store(redis.NewClient(&opts))
	r.renewedAt = time.Now()
	_ = failed.Close() // what it still runs fails, as it was failing
}

// Ping reports whether Redis answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Load().Ping(ctx).Err(); err != nil {
		return fmt.Errorf("cluster: ping redis: %w", err)
	}
	return nil
}

// Exchange settles x and answers its asks in one atomic script, by Redis's
// clock (TIME): nowMs is Redis's time in milliseconds, and for each rule
// bucketMs = engine.ClusterBucketMs(IntervalMs) and cur = nowMs / bucketMs
// (rounded down).
//
// First each return takes back min(Unused, the bucket's count) from its
// bucket, if the bucket's key still exists: a count never goes below 0 and
// an expired bucket is not made again.
//
// Then, for each ask in order: Charge (when positive) is added, room or
// not, to bucket cur or, with ChargeSpanMs, spread evenly over the buckets
// of that span up to cur (ClusterBuckets at most), cur taking the
// remainder. The lease is for bucket target: cur+1 if Next, else
// cur. used is the largest count of ClusterBuckets consecutive buckets
// that hold target, of the windows ending at target … cur+1 (no count lies
// beyond cur+1; a window ending at cur+1 holds what others were granted
// ahead for the next bucket). Granted = max(0, min(Want, Threshold-used))
// is added to bucket target. Every bucket key written expires
// (ClusterBuckets+2)*bucketMs later. StartsInMs = max(target*bucketMs -
// nowMs, 0) and EndsInMs = (target+1)*bucketMs - nowMs; Bucket = target.
// Used = used + Granted. The asking engine is recorded for the key, and
// Engines is how many engines asked for it in the last 2 s, this one
// included; an exchange whose Engine is empty leases as any other but is
// recorded as no engine (the server sends those of callers it does not
// trust to be one).
//
// So the grants in any ClusterBuckets consecutive buckets never add up to
// more than Threshold (charges may). An exchange with neither returns nor
// asks does not reach Redis. A key that is empty or holds braces is an
// ErrKey; an answer that does not fit x is an engine.ErrClusterAnswer.
func (r *Redis) Exchange(ctx context.Context, x engine.ClusterExchange) ([]engine.ClusterLease, error) {
	if len(x.Returns) == 0 && len(x.Asks) == 0 {
		return []engine.ClusterLease{}, nil
	}
	keys := make([]string, 0, len(x.Returns)+len(x.Asks))
	args := make([]any, 0, 4+len(x.Returns)+6*len(x.Asks))
	args = append(args, engine.ClusterBuckets, r.engineMemory.Milliseconds(), x.Engine, len(x.Returns))
	for _, ret := range x.Returns {
		base, err := r.keyBase(ret.Key)
		if err != nil {
			return nil, err
		}
		keys = append(keys, base+strconv.FormatInt(ret.Bucket, 10))
		args = append(args, min(ret.Unused, maxCount))
	}
	for _, ask := range x.Asks {
		base, err := r.keyBase(ask.Key)
		if err != nil {
			return nil, err
		}
		next := 0
		if ask.Next {
			next = 1
		}
		keys = append(keys, base)
		args = append(args, min(ask.Threshold, maxCount), engine.ClusterBucketMs(ask.IntervalMs),
			min(ask.Want, maxCount), min(ask.Charge, maxCount), next, min(max(ask.ChargeSpanMs, 0), maxCount))
	}
	client := r.client.Load()
	reply, err := exchangeScript.Run(ctx, client, keys, args...).Int64Slice()
	if err != nil {
		r.renew(client)
		return nil, fmt.Errorf("cluster: exchange with redis: %w", err)
	}
	const per = 6 // numbers per ask
	if len(reply) != per*len(x.Asks) {
		return nil, fmt.Errorf("cluster: redis answered %d numbers for %d asks: %w", len(reply), len(x.Asks), engine.ErrClusterAnswer)
	}
	leases := make([]engine.ClusterLease, len(x.Asks))
	for i := range leases {
		n := reply[per*i : per*i+per]
		leases[i] = engine.ClusterLease{Granted: n[0], Bucket: n[1], StartsInMs: n[2], EndsInMs: n[3], Engines: int(n[4]), Used: n[5]}
	}
	if err := x.Validate(leases); err != nil {
		return nil, fmt.Errorf("cluster: redis answer: %w", err)
	}
	return leases, nil
}

// keyBase is what a rule's keys start with: the prefix, then the rule key
// as a hash tag.
func (r *Redis) keyBase(key string) (string, error) {
	if key == "" || strings.ContainsAny(key, "{}") {
		return "", fmt.Errorf("cluster: key %q: %w", key, ErrKey)
	}
	return r.prefix + "c:{" + key + "}:", nil
}
