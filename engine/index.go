package engine

import (
	"maps"
	"sync"
	"sync/atomic"
)

// resourceIndex maps names to resources for the hot path: lookups read a
// plain map behind an atomic pointer; new resources go to a locked map first
// and are copied into a new read map once misses have paid for the copy, so
// creating n resources costs O(n) in all (sync.Map's old design, without its
// interface conversions, which cost a lookup twice the time).
type resourceIndex struct {
	read atomic.Pointer[map[string]*Resource]

	mu     sync.Mutex
	recent map[string]*Resource // created since read was built
	misses int
}

func (x *resourceIndex) init() {
	read := map[string]*Resource{}
	x.read.Store(&read)
	x.recent = map[string]*Resource{}
}

func (x *resourceIndex) get(name string) *Resource {
	if r, ok := (*x.read.Load())[name]; ok {
		return r
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.recent[name]
	if r != nil {
		x.miss()
	}
	return r
}

// create adds the resource build returns under name unless it exists or
// limit (when positive) resources exist already (see limited), and returns
// the one that is there.
func (x *resourceIndex) create(name string, limit int, build func() *Resource) *Resource {
	x.mu.Lock()
	defer x.mu.Unlock()
	read := *x.read.Load()
	if r, ok := read[name]; ok {
		return r
	}
	if r, ok := x.recent[name]; ok {
		return r
	}
	if limit > 0 && x.limited(read) >= limit {
		return nil
	}
	r := build()
	x.recent[r.name] = r
	x.miss()
	return r
}

// limited counts the resources a limit applies to: all but
// OverflowResource, which holds the calls of those over the limit. The
// caller holds mu.
func (x *resourceIndex) limited(read map[string]*Resource) int {
	n := len(read) + len(x.recent)
	if _, ok := read[OverflowResource]; ok {
		n--
	} else if _, ok := x.recent[OverflowResource]; ok {
		n--
	}
	return n
}

// miss counts a lookup that needed the lock and promotes recent into a new
// read map once such lookups outnumber the entries the copy would move.
func (x *resourceIndex) miss() {
	x.misses++
	read := *x.read.Load()
	if x.misses < len(read)+len(x.recent) {
		return
	}
	next := make(map[string]*Resource, len(read)+len(x.recent))
	maps.Copy(next, read)
	maps.Copy(next, x.recent)
	x.read.Store(&next)
	x.recent = map[string]*Resource{}
	x.misses = 0
}

// remove forgets the resources of gone that are still indexed under their
// name, and promotes what recent holds on the way: one copy of the map for
// the whole batch.
func (x *resourceIndex) remove(gone []*Resource) {
	if len(gone) == 0 {
		return
	}
	drop := make(map[*Resource]bool, len(gone))
	for _, r := range gone {
		drop[r] = true
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	read := *x.read.Load()
	next := make(map[string]*Resource, len(read)+len(x.recent))
	for _, m := range []map[string]*Resource{read, x.recent} {
		for name, r := range m {
			if !drop[r] {
				next[name] = r
			}
		}
	}
	x.read.Store(&next)
	x.recent = map[string]*Resource{}
	x.misses = 0
}

// len counts the resources.
func (x *resourceIndex) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(*x.read.Load()) + len(x.recent)
}

func (x *resourceIndex) all() []*Resource {
	x.mu.Lock()
	defer x.mu.Unlock()
	read := *x.read.Load()
	out := make([]*Resource, 0, len(read)+len(x.recent))
	for _, r := range read {
		out = append(out, r)
	}
	for _, r := range x.recent {
		out = append(out, r)
	}
	return out
}
