package engine

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestKeyedValueKey: a value keeps its key in its words, whatever its
// length, next to a ring of marks it leaves alone: it tells its key from
// any other, gives it back, and hashes it as maphash.String does (a
// shard's rebuild places it by that hash).
func TestKeyedValueKey(t *testing.T) {
	seed := maphash.MakeSeed()
	keys := []string{"", "a", "ab", "abc", "abcd", "abcde", "user-123456", "user-1234567", "ключ-é", "\x00\x00", strings.Repeat("k", 1000)}
	for _, key := range keys {
		for _, ring := range []int{0, 12} {
			v := newKeyedValue(key, 0, ring)
			for i := range v.ring() {
				v.ring()[i].Store(^uint32(0))
			}
			if !v.is(key) || v.key() != key {
				t.Errorf("%q, ring %d: is %v, key %q", key, ring, v.is(key), v.key())
			}
			if got := len(v.ring()); got != ring {
				t.Errorf("%q: ring of %d marks, want %d", key, got, ring)
			}
			if got, want := v.hash(seed), maphash.String(seed, key); got != want {
				t.Errorf("%q: hash %x, want %x", key, got, want)
			}
			for _, other := range keys {
				if other != key && v.is(other) {
					t.Errorf("%q taken for %q", key, other)
				}
			}
			if key != "" {
				last := key[:len(key)-1] + string(key[len(key)-1]^1)
				if v.is(last) || v.is(key+"\x00") || v.is(key[:len(key)-1]) {
					t.Errorf("%q taken for a key one byte apart", key)
				}
			}
		}
	}
}

// TestKeyedEvictionAges: a full table forgets its least recently used
// key, by 32-bit ages from the wall clock's range too; a key used at a
// reading just after the adding call's own counts as the newest, not as
// 49 days old.
func TestKeyedEvictionAges(t *testing.T) {
	tests := []struct {
		name      string
		aMs, bMs  int64 // the last uses of a and b
		cMs       int64 // when c comes
		forgotten string
	}{
		{"from 0", 100, 50, 101, "b"},
		{"wall clock", 1_790_000_000_100, 1_790_000_000_050, 1_790_000_000_101, "b"},
		{"a used after c's reading", 1_790_000_000_100, 1_790_000_000_050, 1_790_000_000_099, "b"},
		{"b used after c's reading", 1_790_000_000_050, 1_790_000_000_100, 1_790_000_000_099, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := newKeyedTable(2, false, func(key string) *keyedValue { return newKeyedValue(key, 0, 0) })
			table.get("a", tt.aMs)
			table.get("b", tt.bMs)
			table.get("c", tt.cMs)
			var kept []string
			for i := range table.shards {
				for j := range table.shards[i].slots.Load().slots {
					if v := table.shards[i].slots.Load().slots[j].Load(); v != nil && v != tombstone {
						kept = append(kept, v.key())
					}
				}
			}
			if len(kept) != 2 || slices.Contains(kept, tt.forgotten) || !slices.Contains(kept, "c") {
				t.Errorf("kept %v, want c and not %s", kept, tt.forgotten)
			}
		})
	}
}

// TestKeyedTagsMatchKeys: every slot's tag is its key's, through adds,
// the rebuilds they cause and evictions whose slots new keys take; a
// probe that passed over a key by a stale tag would miss it, and one
// that looked at every value would fetch the lines of other cores' keys.
func TestKeyedTagsMatchKeys(t *testing.T) {
	table := newKeyedTable(500, false, func(key string) *keyedValue { return newKeyedValue(key, 0, 0) })
	for i := range 5000 {
		key := strconv.Itoa(i)
		if v := table.get(key, int64(i)); !v.is(key) {
			t.Fatalf("get(%q) found %q", key, v.key())
		}
	}
	checked := 0
	for i := range table.shards {
		slots := table.shards[i].slots.Load()
		for j := range slots.slots {
			v := slots.slots[j].Load()
			if v == nil || v == tombstone {
				continue
			}
			checked++
			if got, want := slots.tag(uint64(j)), tagOf(v.hash(table.seed)); got != want {
				t.Errorf("slot of %q tagged %#x, want %#x", v.key(), got, want)
			}
			if table.get(v.key(), 5000) != v {
				t.Errorf("%q not found in its slot", v.key())
			}
		}
	}
	if checked != 500 {
		t.Errorf("%d keys tracked, want 500", checked)
	}
}

// TestKeyedRingsOnLinesOfTheirOwn: the words of a value with a ring,
// which its passes write, fill whole cache lines from the start of one,
// whatever the key's length and the ring's, so that two values' rings and
// keys never share a line.
func TestKeyedRingsOnLinesOfTheirOwn(t *testing.T) {
	for keyLen := range 40 {
		for ring := 1; ring <= 40; ring++ {
			v := newKeyedValue(strings.Repeat("k", keyLen), 0, ring)
			if at := uintptr(unsafe.Pointer(&v.words[0])); at%64 != 0 || cap(v.words)%wordsPerLine != 0 {
				t.Fatalf("key of %d bytes, ring %d: words at %#x, %d of them, not whole lines", keyLen, ring, at, cap(v.words))
			}
			if got := len(v.ring()); got != ring {
				t.Fatalf("key of %d bytes: ring of %d marks, want %d", keyLen, got, ring)
			}
		}
	}
}
