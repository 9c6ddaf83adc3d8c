package engine

import (
	"hash/maphash"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// keyedShards is the most shards a keyed table splits its keys into:
// enough that two cores rarely meet on one shard's lock when they add
// keys.
const keyedShards = 64

// minKeysPerShard is the fewest keys a shard holds when the table holds
// more: fewer shards for small tables, so that each one's eviction still
// chooses among many.
const minKeysPerShard = 64

// evictionSample is how many keys a full shard looks at to choose the one
// it forgets: the least recently used of them (Redis's approximated LRU).
// Eight come within a few percent of true LRU's hit ratio.
const evictionSample = 8

// maxAheadMs is how far past a call's reading of the clock a value's
// last use may be and still be taken as newer (read later by another
// call), not as 49 days older: ages are 32 bits of milliseconds.
const maxAheadMs = 1 << 16

// keyedTable is the per-key statistics of one rule (a hotspot rule's per
// parameter value, a limitApp rule's per origin), at most capacity keys.
//
// Finding a key takes no lock and writes nothing shared: each shard is an
// open-addressing hash table of atomic pointers, read without a lock and
// changed only under the shard's mutex, by a call that brings a new key.
// Nor does it read another key's value, whose line that key's calls
// write: beside each slot, a byte of its key's hash (a tag) tells a probe
// which values to look at, so that a probe past the keys of another
// core's calls costs no fetch of their lines from that core.
// A table that fills up is rebuilt and swapped whole; a reader still on
// the old one that misses a key just added looks again under the lock.
// A key past capacity evicts, within its shard, the least recently used of
// a sample of the shard's keys taken from a random slot on: unlike a
// list-ordered LRU (sentinel-golang's, one global lock that every hit
// writes to move its key to the front), a hit writes only the key's own
// last-use time, and that once per millisecond. A key with calls in
// flight is never evicted (its concurrency would be forgotten); if a
// shard's whole sample is in flight, the new key shares the table's
// overflow value, which only ever limits more.
type keyedTable struct {
	seed   maphash.Seed
	mask   uint64
	shards []keyedShard
	// inFlight: the values' state is their calls in flight.
	inFlight bool
	newValue func(key string) *keyedValue
	overflow *keyedValue
}

type keyedShard struct {
	slots atomic.Pointer[keyedSlots]
	mu    sync.Mutex // guards the changes of slots and the counts below
	live  int        // keys in slots
	used  int        // slots not nil: keys and tombstones
	// capacity is the shard's share of the table's capacity.
	capacity int
	_        [24]byte // the next shard's hot words on another cache line
}

// keyedSlots is a shard's hash table: a power of two of slots, nil when
// never used, tombstone when its key was evicted (probes go on past it).
// tags holds the tag of slot i's key, the top byte of its hash, in byte
// i%4 of word i/4: a byte a slot, where a word would take a value past
// its memory bound (TestHotspotMemoryPerValue). A tag is written before
// its slot, so that a probe that finds a value finds its tag.
type keyedSlots struct {
	mask  uint64
	slots []atomic.Pointer[keyedValue]
	tags  []atomic.Uint32
}

// tagOf returns the tag of a key hashed h: the hash's top byte, which
// neither the shard (its low bits) nor the slot (the bits above those)
// is chosen by, in tables of up to 2^50 slots.
func tagOf(h uint64) uint32 { return uint32(h >> 56) }

// tag returns slot i's tag.
func (s *keyedSlots) tag(i uint64) uint32 {
	return s.tags[i/4].Load() >> (8 * (i % 4)) & 0xff
}

// put stores v, whose tag is tag, in slot i. The caller holds the shard's
// mutex, so that no other call changes the tags' word meanwhile.
func (s *keyedSlots) put(i uint64, v *keyedValue, tag uint32) {
	w := &s.tags[i/4]
	shift := 8 * (i % 4)
	w.Store(w.Load()&^(0xff<<shift) | tag<<shift)
	s.slots[i].Store(v)
}

// tombstone fills the slot of an evicted key.
var tombstone = &keyedValue{}

// keyedValue is one key's statistics: 64 bytes, and its words. A million
// of them are a hotspot rule's largest part, so a value keeps its key and
// its log's ring in one allocation, and its log's constants are its
// rule's.
type keyedValue struct {
	// state is, for a concurrency rule, the value's calls in flight; for
	// a reject rule, the count of its passes that log numbers; for
	// throttling, the time of its last slot (ns); with a burst, the
	// theoretical arrival time of its token bucket (ns).
	state atomic.Int64
	// lastUsed is the low 32 bits of the time (ms) a call last found the
	// value, for eviction, which tells ages apart up to 49 days.
	lastUsed atomic.Uint32
	// item is where the value's threshold is in its rule's list: 0 for
	// the rule's own, i for its specific item i-1's.
	item uint32
	// log is a reject rule's (burstCount 0).
	log window.ValueLog
	// words are the value's key, its length in bytes then its bytes four
	// to a word (little-endian), and after it the log's ring of marks.
	words []atomic.Uint32
}

// wordsPerLine is how many of a value's words fill a cache line.
const wordsPerLine = 64 / 4

// newKeyedValue returns a value of key, copied, with item and a ring of
// ring marks.
//
// A ring is written by its value's passes: its words take whole cache
// lines (a pointer-free allocation of a multiple of 64 bytes takes a size
// class of whole lines and starts on one), so that no other value's key
// or ring, read and written by calls on other cores, shares a line with
// it. A key alone is only read, and packed.
func newKeyedValue(key string, item uint32, ring int) *keyedValue {
	n := (len(key) + 3) / 4
	size := 1 + n + ring
	capacity := size
	if ring > 0 {
		capacity = (size + wordsPerLine - 1) &^ (wordsPerLine - 1)
	}
	v := &keyedValue{item: item, words: make([]atomic.Uint32, size, capacity)}
	v.words[0].Store(uint32(len(key)))
	for i := range n {
		v.words[1+i].Store(keyWord(key[4*i:]))
	}
	return v
}

// keyWord returns the first four bytes of k, or all of them if fewer,
// as a little-endian word, zeros past k's end.
func keyWord(k string) uint32 {
	switch len(k) {
	case 0:
		return 0
	case 1:
		return uint32(k[0])
	case 2:
		return uint32(k[0]) | uint32(k[1])<<8
	case 3:
		return uint32(k[0]) | uint32(k[1])<<8 | uint32(k[2])<<16
	}
	return uint32(k[0]) | uint32(k[1])<<8 | uint32(k[2])<<16 | uint32(k[3])<<24
}

// is reports whether v's key is key.
func (v *keyedValue) is(key string) bool {
	n := len(key)
	if len(v.words) == 0 || int(v.words[0].Load()) != n {
		return false
	}
	w := v.words[1 : 1+(n+3)/4]
	full := n / 4
	for i := range full {
		k := key[4*i : 4*i+4]
		if w[i].Load() != uint32(k[0])|uint32(k[1])<<8|uint32(k[2])<<16|uint32(k[3])<<24 {
			return false
		}
	}
	return n%4 == 0 || w[full].Load() == keyWord(key[4*full:])
}

// key returns v's key.
func (v *keyedValue) key() string {
	b := make([]byte, v.words[0].Load())
	for i := range b {
		b[i] = byte(v.words[1+i/4].Load() >> (8 * (i % 4)))
	}
	return string(b)
}

// ring returns v's log's ring of marks.
func (v *keyedValue) ring() []atomic.Uint32 {
	return v.words[1+(v.words[0].Load()+3)/4:]
}

// hash returns maphash.String(seed, v.key()), without making the string.
func (v *keyedValue) hash(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	n := int(v.words[0].Load())
	for i := 0; i < n; i += 4 {
		w := v.words[1+i/4].Load()
		for j := i; j < min(i+4, n); j++ {
			h.WriteByte(byte(w))
			w >>= 8
		}
	}
	return h.Sum64()
}

// newKeyedTable returns a table of at most capacity keys, each made by
// newValue, whose state counts calls in flight if inFlight.
func newKeyedTable(capacity int, inFlight bool, newValue func(key string) *keyedValue) *keyedTable {
	shards := keyedShards
	for shards > 1 && capacity/shards < minKeysPerShard {
		shards /= 2
	}
	t := &keyedTable{seed: maphash.MakeSeed(), mask: uint64(shards - 1), shards: make([]keyedShard, shards),
		inFlight: inFlight, newValue: newValue, overflow: newValue("")}
	for i := range t.shards {
		// Capacities add up to capacity exactly, each at least 1.
		c := capacity / shards
		if i < capacity%shards {
			c++
		}
		t.shards[i].capacity = c
		t.shards[i].slots.Store(newKeyedSlots(8))
	}
	return t
}

func newKeyedSlots(n int) *keyedSlots {
	return &keyedSlots{mask: uint64(n - 1), slots: make([]atomic.Pointer[keyedValue], n), tags: make([]atomic.Uint32, (n+3)/4)}
}

// find returns key's value in s, hashed h (its slot from h>>6, the bits
// above the shard's), or nil. A slot's tag read after its value is that
// value's, or a later one's if the slot was reused meanwhile: then the
// value, evicted, is passed over, as it would have been a moment later.
func (s *keyedSlots) find(h uint64, key string) *keyedValue {
	tag := tagOf(h)
	for i := h >> 6 & s.mask; ; i = (i + 1) & s.mask {
		v := s.slots[i].Load()
		if v == nil {
			return nil
		}
		if v != tombstone && s.tag(i) == tag && v.is(key) {
			return v
		}
	}
}

// get returns key's value, tracking it if need be, and marks it used at
// nowMs.
func (t *keyedTable) get(key string, nowMs int64) *keyedValue {
	h := maphash.String(t.seed, key)
	s := &t.shards[h&t.mask]
	v := s.slots.Load().find(h, key)
	if v == nil {
		v = t.add(s, h, key, nowMs)
	}
	// A call that read the clock a little earlier than another may move
	// it back a millisecond, which eviction does not mind; ordering them
	// would misread times 24 days apart.
	if now := uint32(nowMs); v.lastUsed.Load() != now {
		v.lastUsed.Store(now)
	}
	return v
}

// add tracks key, hashed h, in s at nowMs, making room if s is full.
func (t *keyedTable) add(s *keyedShard, h uint64, key string, nowMs int64) *keyedValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	slots := s.slots.Load()
	if v := slots.find(h, key); v != nil {
		return v
	}
	if s.live >= s.capacity && !t.evictOne(s, slots, nowMs) {
		return t.overflow
	}
	// At most three quarters of the slots in use, so that probes stay
	// short and always end on a nil.
	if 4*(s.used+1) > 3*len(slots.slots) {
		slots = t.rebuild(s, slots)
	}
	v := t.newValue(key) // a copy: the caller's memory may be reused
	i := h >> 6 & slots.mask
	for {
		if cur := slots.slots[i].Load(); cur == nil || cur == tombstone {
			if cur == nil {
				s.used++
			}
			slots.put(i, v, tagOf(h))
			break
		}
		i = (i + 1) & slots.mask
	}
	s.live++
	return v
}

// rebuild swaps in a table of s's keys without tombstones, with room for
// twice as many. The caller holds s.mu.
func (t *keyedTable) rebuild(s *keyedShard, old *keyedSlots) *keyedSlots {
	n := 8
	for n < 2*(s.live+1) {
		n *= 2
	}
	slots := newKeyedSlots(n)
	for i := range old.slots {
		v := old.slots[i].Load()
		if v == nil || v == tombstone {
			continue
		}
		h := v.hash(t.seed)
		j := h >> 6 & slots.mask
		for slots.slots[j].Load() != nil {
			j = (j + 1) & slots.mask
		}
		slots.put(j, v, tagOf(h))
	}
	s.used = s.live
	s.slots.Store(slots)
	return slots
}

// evictOne forgets the least recently used at nowMs of a sample of s's
// keys with nothing in flight, taken from a random slot on; false if the
// sample had none. The caller holds s.mu.
func (t *keyedTable) evictOne(s *keyedShard, slots *keyedSlots, nowMs int64) bool {
	victim, oldest, seen := -1, uint32(0), 0
	start := rand.Uint64()
	for k := range uint64(len(slots.slots)) {
		i := (start + k) & slots.mask
		v := slots.slots[i].Load()
		if v == nil || v == tombstone {
			continue
		}
		if !t.inFlight || v.state.Load() == 0 {
			age := uint32(nowMs) - v.lastUsed.Load()
			if age > math.MaxUint32-maxAheadMs {
				age = 0 // used since this call read the clock
			}
			if victim < 0 || age > oldest {
				victim, oldest = int(i), age
			}
		}
		if seen++; seen == evictionSample*4 || victim >= 0 && seen >= evictionSample {
			break
		}
	}
	if victim < 0 {
		return false
	}
	slots.slots[victim].Store(tombstone)
	s.live--
	return true
}

// each calls fn with every value the table tracks; values added or
// evicted meanwhile may be missed.
func (t *keyedTable) each(fn func(*keyedValue)) {
	for i := range t.shards {
		for j := range t.shards[i].slots.Load().slots {
			if v := t.shards[i].slots.Load().slots[j].Load(); v != nil && v != tombstone {
				fn(v)
			}
		}
	}
}

// len returns how many keys the table tracks.
func (t *keyedTable) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += s.live
		s.mu.Unlock()
	}
	return n
}
