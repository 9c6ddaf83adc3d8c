package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// DefaultEntryLease is how long the check API holds an entry that a
// concurrency rule counts before it gives up on the client's complete.
const DefaultEntryLease = 30 * time.Second

// errLeaseExpired is recorded for an entry whose lease ran out.
var errLeaseExpired = errors.New("the entry's lease ran out before it was completed")

// entryTable holds the entries the check API let through for resources
// whose calls in flight a concurrency rule counts: a call stays in flight
// until the client completes its entryId, or until its lease runs out and
// the table exits it as an error, so that a crashed client cannot hold a
// slot for ever. Completed and expired ids are remembered for one more
// lease, so that completing one again is told apart from an unknown id.
type entryTable struct {
	clock   engine.Clock
	leaseMs int64
	prefix  string // makes ids from another run of the server unknown here
	seq     atomic.Uint64

	mu      sync.Mutex
	held    map[string]heldEntry
	settled map[string]settledEntry
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
}

type settledEntry struct {
	expired bool
	atMs    int64
}

// newEntryTable returns a table whose leases last lease on clock.
func newEntryTable(clock engine.Clock, lease time.Duration) *entryTable {
	var random [6]byte
	_, _ = rand.Read(random[:])
	return &entryTable{
		clock:   clock,
		leaseMs: max(lease.Milliseconds(), 1),
		prefix:  hex.EncodeToString(random[:]) + "-",
		held:    map[string]heldEntry{},
		settled: map[string]settledEntry{},
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// hold keeps e, an entry of count calls to resource, and returns its id.
func (t *entryTable) hold(resource string, count int64, e engine.Entry) string {
	id := t.prefix + strconv.FormatUint(t.seq.Add(1), 36)
	expires := t.clock.NowMs() + t.leaseMs
	t.mu.Lock()
	t.held[id] = heldEntry{entry: e, resource: resource, count: count}
	t.expiries.push(id, expires)
	t.mu.Unlock()
	return id
}

// take removes the held entry id for its complete, if match accepts it: a
// 404 if the table never held it (or forgot it), a 409 if it was completed
// or expired, match's error if match refused it (the entry is kept then).
func (t *entryTable) take(id string, match func(heldEntry) error) (heldEntry, error) {
	now := t.clock.NowMs()
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.held[id]
	if ok {
		if err := match(h); err != nil {
			return heldEntry{}, err
		}
		delete(t.held, id)
		t.settle(id, false, now)
		return h, nil
	}
	s, ok := t.settled[id]
	switch {
	case !ok:
		return heldEntry{}, NotFound(fmt.Sprintf("no entry has id %q; it never existed, or was completed long ago", id))
	case s.expired:
		return heldEntry{}, Conflict(fmt.Sprintf("entry %q was not completed within its lease of %d ms: it was released at %s and counted as an error",
			id, t.leaseMs, time.UnixMilli(s.atMs).UTC().Format(time.RFC3339Nano)))
	default:
		return heldEntry{}, Conflict(fmt.Sprintf("entry %q was completed already, at %s",
			id, time.UnixMilli(s.atMs).UTC().Format(time.RFC3339Nano)))
	}
}

// settle remembers id as completed or expired; t.mu is held.
func (t *entryTable) settle(id string, expired bool, nowMs int64) {
	t.settled[id] = settledEntry{expired: expired, atMs: nowMs}
	t.forgets.push(id, nowMs+t.leaseMs)
}

// expire exits, as errors, the entries whose lease ran out by now, and
// forgets the settled ids that were remembered long enough. It returns how
// many entries it exited.
func (t *entryTable) expire() int {
	now := t.clock.NowMs()
	var expired []engine.Entry
	t.mu.Lock()
	for id := range t.expiries.due(now) {
		if h, ok := t.held[id]; ok {
			delete(t.held, id)
			t.settle(id, true, now)
			expired = append(expired, h.entry)
		}
	}
	for id := range t.forgets.due(now) {
		delete(t.settled, id)
	}
	t.mu.Unlock()
	for _, e := range expired {
		e.Exit(engine.WithError(errLeaseExpired))
	}
	return len(expired)
}

// heldCount counts the entries held now.
func (t *entryTable) heldCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}

// run expires leases every tick until close.
func (t *entryTable) run(tick time.Duration) {
	defer close(t.stopped)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-ticker.C:
			t.expire()
		}
	}
}

// close stops run and waits for it; safe to call more than once.
func (t *entryTable) close() {
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

// startEntryTable returns a table whose leases are swept until close.
func startEntryTable(clock engine.Clock, lease time.Duration) *entryTable {
	t := newEntryTable(clock, lease)
	go t.run(sweepInterval(lease))
	return t
}
