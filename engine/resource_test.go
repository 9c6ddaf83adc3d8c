package engine

import (
	"testing"
	"unsafe"
)

// TestResourceLayout: the fields every call reads fill the first cache
// line of a Resource, the counters every call writes the second, and the
// size puts resources in a size class of whole cache lines (every class
// from 512 bytes is a multiple of 64), so that two cores calling at once
// share only the lines they both write.
func TestResourceLayout(t *testing.T) {
	const line = 64
	var r Resource
	if off := unsafe.Offsetof(r.concurrency); off != line {
		t.Errorf("concurrency at offset %d, want %d: the read-mostly fields must fill the first line exactly", off, line)
	}
	if off := unsafe.Offsetof(r.passes); off != line+8 {
		t.Errorf("passes at offset %d, want %d", off, line+8)
	}
	if off := unsafe.Offsetof(r.second); off != line+16 {
		t.Errorf("second at offset %d, want %d: its totals complete the second line", off, line+16)
	}
	if size := unsafe.Sizeof(r); size < 512 {
		t.Errorf("Resource is %d bytes: below 512, its size class may not be a multiple of 64", size)
	}
}
