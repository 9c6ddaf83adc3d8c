package engine

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// keyedShards is the most shards a keyed table splits its values into:
// enough that two cores rarely meet on one shard's lock word.
const keyedShards = 64

// minKeysPerShard is the fewest keys a shard holds when the table holds
// more: fewer shards for small tables, so that each one's eviction still
// chooses among many.
const minKeysPerShard = 64

// evictionSample is how many values a full shard looks at to choose the
// one it forgets: the least recently used of them (Redis's approximated
// LRU). Eight come within a few percent of true LRU's hit ratio.
const evictionSample = 8

// keyedTable is the per-key statistics of one rule (a hotspot rule's per
// parameter value, a limitApp rule's per origin), at most capacity keys.
//
// It is sharded by the key's hash, each shard a map under its own
// read-write lock: a hit takes one shard's read lock, so calls on
// different keys meet on no lock, and calls on the same key only share a
// read lock. A key past capacity evicts, within its shard, the least
// recently used of a sample of the shard's keys, which Go's randomised
// map iteration provides: unlike a list-ordered LRU (sentinel-golang's,
// one global lock that every hit writes), a hit writes nothing shared, and
// the value's last-use time only once per millisecond. A value with calls
// in flight is never evicted (its concurrency would be forgotten); if a
// shard's whole sample is in flight, the key shares the table's overflow
// value, which only ever limits more.
type keyedTable struct {
	seed     maphash.Seed
	mask     uint64
	shards   []keyedShard
	newValue func(key string) *keyedValue
	overflow *keyedValue
}

type keyedShard struct {
	mu       sync.RWMutex
	values   map[string]*keyedValue
	capacity int
	_        [24]byte // the next shard's lock on another cache line
}

// keyedValue is one key's statistics.
type keyedValue struct {
	// threshold is the key's own: a hotspot rule's specific item's, or
	// the rule's.
	threshold float64
	// lastUsedMs is when a call last found the value, for eviction.
	lastUsedMs atomic.Int64
	// state is, for a reject rule, the count of the value's passes that
	// log numbers; for throttling, the time of its last slot (ns); with a
	// burst, the theoretical arrival time of its token bucket (ns).
	state    atomic.Int64
	inFlight atomic.Int64
	log      *window.PassLog
}

// newKeyedTable returns a table of at most capacity keys, each made by
// newValue.
func newKeyedTable(capacity int, newValue func(key string) *keyedValue) *keyedTable {
	shards := keyedShards
	for shards > 1 && capacity/shards < minKeysPerShard {
		shards /= 2
	}
	t := &keyedTable{seed: maphash.MakeSeed(), mask: uint64(shards - 1), shards: make([]keyedShard, shards),
		newValue: newValue, overflow: newValue("")}
	for i := range t.shards {
		// Capacities add up to capacity exactly, each at least 1.
		c := capacity / shards
		if i < capacity%shards {
			c++
		}
		t.shards[i] = keyedShard{values: map[string]*keyedValue{}, capacity: c}
	}
	return t
}

// get returns key's value, tracking it if need be, and marks it used at
// nowMs.
func (t *keyedTable) get(key string, nowMs int64) *keyedValue {
	s := &t.shards[maphash.String(t.seed, key)&t.mask]
	s.mu.RLock()
	v := s.values[key]
	s.mu.RUnlock()
	if v == nil {
		v = t.add(s, key)
	}
	if v.lastUsedMs.Load() < nowMs {
		v.lastUsedMs.Store(nowMs)
	}
	return v
}

// add tracks key in s, making room if s is full.
func (t *keyedTable) add(s *keyedShard, key string) *keyedValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.values[key]; v != nil {
		return v
	}
	if len(s.values) >= s.capacity && !s.evictOne() {
		return t.overflow
	}
	key = strings.Clone(key) // the caller's memory may be reused
	v := t.newValue(key)
	s.values[key] = v
	return v
}

// evictOne forgets the least recently used of a sample of s's values with
// nothing in flight; false if the sample had none. The caller holds s.mu.
func (s *keyedShard) evictOne() bool {
	victim, oldest, found, seen := "", int64(0), false, 0
	for key, v := range s.values {
		if v.inFlight.Load() == 0 {
			if used := v.lastUsedMs.Load(); !found || used < oldest {
				victim, oldest, found = key, used, true
			}
		}
		if seen++; seen == evictionSample*4 || found && seen >= evictionSample {
			break
		}
	}
	if !found {
		return false
	}
	delete(s.values, victim)
	return true
}

// len returns how many keys the table tracks.
func (t *keyedTable) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		n += len(s.values)
		s.mu.RUnlock()
	}
	return n
}
