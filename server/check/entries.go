package check

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// DefaultEntryLease is how long the check API holds an entry (one a
// concurrency rule counts, or a half-open breaker's probe) before it gives
// up on the client's complete.
const DefaultEntryLease = 30 * time.Second

// errLeaseExpired is recorded for an entry whose lease ran out.
var errLeaseExpired = errors.New("the entry's lease ran out before it was completed")

// Entries holds the entries the check API let through for resources
// whose calls in flight a concurrency rule counts, and the probes of
// half-open circuit breakers: a call stays in flight until the client
// completes its entryId, or until its lease runs out and the table exits it
// as an error, so that a crashed client cannot hold a slot for ever.
// Completed and expired ids are remembered for one more lease, so that
// completing one again is told apart from an unknown id.
//
// A complete without entryId is judged by what the table holds for its
// resource, not by the rules loaded now. While it holds an entry that a
// concurrency rule counted, an id was answered and is owed back (422), even
// if the rule was removed since: the entry would otherwise stay in flight
// until its lease and then count as an error on top of the outcome. The
// price: a call checked before a concurrency rule was added and completed
// while calls checked after it are held is refused too, as they cannot be
// told apart. With no such entry held, the complete ends the oldest probe
// held for the resource, if any, with its outcome, so that a client that
// ignores ids still closes or re-opens the breaker.
type Entries struct {
	clock   engine.Clock
	leaseMs int64
	prefix  string // makes ids from another run of the server unknown here
	seq     atomic.Uint64

	mu         sync.Mutex
	held       map[string]heldEntry
	settled    map[string]settledEntry
	byResource map[string]resourceEntries // the held entries of each resource
	// expiries and forgets are in time order: every lease is as long.
	expiries deadlineQueue // when held entries expire
	forgets  deadlineQueue // when settled ids are forgotten

	stopOnce sync.Once
	stop     chan struct{}
	stopped  chan struct{}
}

type heldEntry struct {
	entry    engine.Entry
	resource string
	count    int64
	// counted: a concurrency rule counts the calls in flight; otherwise
	// the entry is held only as a half-open breaker's probe.
	counted bool
}

// resourceEntries indexes the entries held for one resource.
type resourceEntries struct {
	counted int      // how many a concurrency rule counts
	probes  []string // the ids of the others, probes only, oldest first
}

// settlement is how a held entry ended.
type settlement int

const (
	settledByID    settlement = iota // by a complete with its entryId
	settledByLease                   // by its lease, as an error
	settledAsProbe                   // by a complete without entryId
)

type settledEntry struct {
	how      settlement
	atMs     int64
	resource string
}

// newEntries returns a table whose leases last lease on clock.
func newEntries(clock engine.Clock, lease time.Duration) *Entries {
	var random [6]byte
	_, _ = rand.Read(random[:])
	return &Entries{
		clock:      clock,
		leaseMs:    max(lease.Milliseconds(), 1),
		prefix:     hex.EncodeToString(random[:]) + "-",
		held:       map[string]heldEntry{},
		settled:    map[string]settledEntry{},
		byResource: map[string]resourceEntries{},
		stop:       make(chan struct{}),
		stopped:    make(chan struct{}),
	}
}

// hold keeps e, an entry of count calls to resource, and returns its id.
func (t *Entries) hold(resource string, count int64, e engine.Entry) string {
	id := t.prefix + strconv.FormatUint(t.seq.Add(1), 36)
	h := heldEntry{entry: e, resource: resource, count: count, counted: e.CountsInFlight()}
	expires := t.clock.NowMs() + t.leaseMs
	t.mu.Lock()
	t.held[id] = h
	idx := t.byResource[resource]
	if h.counted {
		idx.counted++
	} else {
		idx.probes = append(idx.probes, id)
	}
	t.byResource[resource] = idx
	t.expiries.push(id, expires)
	t.mu.Unlock()
	return id
}

// release removes the held entry id, h, and settles it; t.mu is held.
func (t *Entries) release(id string, h heldEntry, how settlement, nowMs int64) {
	delete(t.held, id)
	idx := t.byResource[h.resource]
	if h.counted {
		idx.counted--
	} else if i := slices.Index(idx.probes, id); i >= 0 {
		idx.probes = slices.Delete(idx.probes, i, i+1)
	}
	if idx.counted == 0 && len(idx.probes) == 0 {
		delete(t.byResource, h.resource)
	} else {
		t.byResource[h.resource] = idx
	}
	t.settled[id] = settledEntry{how: how, atMs: nowMs, resource: h.resource}
	t.forgets.push(id, nowMs+t.leaseMs)
}

// take removes the held entry id for its complete, if match accepts it:
// ErrUnknownEntry if the table never held it (or forgot it), ErrEntryEnded
// if it was completed or expired, match's error if match refused it (the
// entry is kept then).
func (t *Entries) take(id string, match func(heldEntry) error) (heldEntry, error) {
	now := t.clock.NowMs()
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.held[id]
	if ok {
		if err := match(h); err != nil {
			return heldEntry{}, err
		}
		t.release(id, h, settledByID, now)
		return h, nil
	}
	s, ok := t.settled[id]
	if !ok {
		return heldEntry{}, fmt.Errorf("no entry has id %q; it never existed, or was completed long ago: %w", id, ErrUnknownEntry)
	}
	at := time.UnixMilli(s.atMs).UTC().Format(time.RFC3339Nano)
	switch s.how {
	case settledByLease:
		return heldEntry{}, fmt.Errorf("entry %q was not completed within its lease of %d ms: it was released at %s and counted as an error: %w",
			id, t.leaseMs, at, ErrEntryEnded)
	case settledAsProbe:
		return heldEntry{}, fmt.Errorf("entry %q, a circuit breaker's probe, was ended at %s by a complete of %q without entryId, "+
			"whose outcome was taken as the probe's; this outcome is not recorded: %w", id, at, s.resource, ErrEntryEnded)
	default:
		return heldEntry{}, fmt.Errorf("entry %q was completed already, at %s: %w", id, at, ErrEntryEnded)
	}
}

// claim is the table's part in a complete of resource without entryId. It
// refuses it (a ValidationError) while an entry a concurrency rule counts is held for the
// resource: its entryId was answered and is owed back. Otherwise it removes
// and returns the oldest probe held for the resource, which the complete's
// outcome ends; ok is false when there is none.
func (t *Entries) claim(resource string) (probe heldEntry, ok bool, err error) {
	now := t.clock.NowMs()
	t.mu.Lock()
	defer t.mu.Unlock()
	idx, held := t.byResource[resource]
	switch {
	case !held:
		return heldEntry{}, false, nil
	case idx.counted > 0:
		msg := fmt.Sprintf("is required: checks of %q were answered entryIds that are not completed yet, "+
			"as a concurrency rule counts its calls in flight; send back the one your check answered", resource)
		return heldEntry{}, false, invalid("entryId is required for this resource; see details", field("entryId", msg))
	}
	id := idx.probes[0]
	probe = t.held[id]
	t.release(id, probe, settledAsProbe, now)
	return probe, true, nil
}

// Expire exits, as errors, the entries whose lease ran out by now, and
// forgets the settled ids that were remembered long enough; the table's
// own sweep calls it every tenth of a lease. It returns how
// many entries it exited.
func (t *Entries) Expire() int {
	now := t.clock.NowMs()
	var ended []engine.Entry
	t.mu.Lock()
	for id := range t.expiries.due(now) {
		if h, ok := t.held[id]; ok {
			t.release(id, h, settledByLease, now)
			ended = append(ended, h.entry)
		}
	}
	for id := range t.forgets.due(now) {
		delete(t.settled, id)
	}
	t.mu.Unlock()
	for _, e := range ended {
		e.Exit(engine.WithError(errLeaseExpired))
	}
	return len(ended)
}

// Held counts the entries held now.
func (t *Entries) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}

// run expires leases every tick until close.
func (t *Entries) run(tick time.Duration) {
	defer close(t.stopped)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-ticker.C:
			t.Expire()
		}
	}
}

// Close stops the sweep and waits for it; safe to call more than once.
func (t *Entries) Close() {
	t.stopOnce.Do(func() { close(t.stop) })
	<-t.stopped
}

// sweepInterval is how often leases are checked: a tenth of the lease,
// within 10 ms and 1 s.
func sweepInterval(lease time.Duration) time.Duration {
	return min(max(lease/10, 10*time.Millisecond), time.Second)
}

// deadlineQueue is a first-in first-out queue of ids and their deadlines,
// pushed in deadline order.
type deadlineQueue struct {
	items []deadline
	head  int
}

type deadline struct {
	id   string
	atMs int64
}

func (q *deadlineQueue) push(id string, atMs int64) {
	q.items = append(q.items, deadline{id: id, atMs: atMs})
}

// due pops and yields the ids whose deadline is at or before nowMs.
func (q *deadlineQueue) due(nowMs int64) iter.Seq[string] {
	return func(yield func(string) bool) {
		for q.head < len(q.items) && q.items[q.head].atMs <= nowMs {
			id := q.items[q.head].id
			q.items[q.head] = deadline{}
			q.head++
			if !yield(id) {
				break
			}
		}
		if q.head > len(q.items)/2 {
			q.items = append(q.items[:0], q.items[q.head:]...)
			q.head = 0
		}
	}
}

// StartEntries returns a table whose leases last lease on clock and are
// swept until Close.
func StartEntries(clock engine.Clock, lease time.Duration) *Entries {
	t := newEntries(clock, lease)
	go t.run(sweepInterval(lease))
	return t
}
