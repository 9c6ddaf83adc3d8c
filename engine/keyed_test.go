package engine

import (
	"hash/maphash"
	"strings"
	"testing"
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
