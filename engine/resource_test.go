package engine

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestResourceLayout: the fields every call reads fill the first cache
// line of a Resource, the counters every call writes the second, and the
// size, 512 bytes, is a size class of whole cache lines with no malloc
// header before them, so that two cores calling at once share only the
// lines they both write.
func TestResourceLayout(t *testing.T) {
	const line = 64
	var r Resource
	if off := unsafe.Offsetof(r.concurrency); off != line {
		t.Errorf("concurrency at offset %d, want %d: the read-mostly fields must fill the first line exactly", off, line)
	}
	if off := unsafe.Offsetof(r.second); off != line+8 {
		t.Errorf("second at offset %d, want %d: its claimed passes and totals complete the second line", off, line+8)
	}
	if size := unsafe.Sizeof(r); size != 512 {
		t.Errorf("Resource is %d bytes, want 512: below, its size class may not be a multiple of 64; above, it takes 576 bytes and its lines are off by a malloc header", size)
	}
}

// TestEntryFitsInRegisters: Go passes and returns a struct in registers
// only when its fields (arrays of more than one element taking none) fit
// the nine integer registers, with the *BlockError that Entry returns
// beside it. Past that, every Entry and Exit copies the struct through
// memory, which cost about a fifth of an Entry+Exit.
func TestEntryFitsInRegisters(t *testing.T) {
	var words func(reflect.Type) (int, bool)
	words = func(ty reflect.Type) (int, bool) {
		switch ty.Kind() {
		case reflect.Struct:
			n := 0
			for f := range ty.Fields() {
				w, ok := words(f.Type)
				if !ok {
					return 0, false
				}
				n += w
			}
			return n, true
		case reflect.Array:
			if ty.Len() > 1 {
				return 0, false
			}
			return words(ty.Elem())
		case reflect.Pointer, reflect.Int64, reflect.Uint64, reflect.Int, reflect.Bool:
			return 1, true
		}
		t.Fatalf("%s: a kind the test does not count", ty)
		return 0, false
	}
	n, ok := words(reflect.TypeFor[Entry]())
	if !ok || n > 8 {
		t.Errorf("Entry takes %d registers (register-assignable: %v), want at most 8", n, ok)
	}
}
