package store

import (
	"errors"
	"fmt"
	"sync"
)

// groupQueue commits calls that arrive while another's transaction runs
// together, in the next transaction (group commit): a fleet's instances
// write in bursts, and a transaction a call would queue them one by one
// behind the database's one writer. One caller at a time commits: the one
// that found no commit under way, then, in turn, the first of those that
// queued meanwhile. W is a call's arguments and results.
type groupQueue[W any] struct {
	mu         sync.Mutex
	waiting    []*groupCall[W]
	committing bool
}

// groupCall is a call waiting for its group's transaction.
type groupCall[W any] struct {
	w W
	// ready is sent true when the call is to commit the next group, its
	// own among it, or false once its group has committed or failed; err
	// is its outcome then.
	ready chan bool
	err   error
}

// errGroupPanicked is what the calls of a group whose commit panicked
// are answered, so that none waits for ever.
var errGroupPanicked = errors.New("the transaction panicked")

// do queues w and returns once the transaction that carried it has
// committed or failed. commit runs one transaction for a group of calls,
// in their order, and writes their results into them; a group holds at
// least one call, and more while their sizes sum to at most limit. If
// commit fails, every call of the group fails with its error, which says
// how many calls were committed together (what names them).
func (q *groupQueue[W]) do(w W, what string, size func(W) int, limit int, commit func([]W) error) error {
	c := &groupCall[W]{w: w, ready: make(chan bool, 1)}
	if q.enqueue(c) || <-c.ready {
		q.commitNext(what, size, limit, commit)
	}
	return c.err
}

// enqueue queues c and reports whether its caller is to commit now.
func (q *groupQueue[W]) enqueue(c *groupCall[W]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, c)
	if q.committing {
		return false
	}
	q.committing = true
	return true
}

// commitNext commits the next group, tells each call its outcome and
// hands the commit on; on a panic too.
func (q *groupQueue[W]) commitNext(what string, size func(W) int, limit int, commit func([]W) error) {
	group := q.next(size, limit)
	err := errGroupPanicked
	defer func() {
		if err != nil && len(group) > 1 {
			err = fmt.Errorf("%d %s committed together: %w", len(group), what, err)
		}
		q.handOver()
		for _, c := range group {
			c.err = err
			// Never blocks: ready holds one, and the one true a call may
			// have been sent, to commit this group, it has read.
			c.ready <- false
		}
	}()
	ws := make([]W, len(group))
	for i, c := range group {
		ws[i] = c.w
	}
	err = commit(ws)
}

// next takes the next group off the queue.
func (q *groupQueue[W]) next(size func(W) int, limit int) []*groupCall[W] {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, total := 1, size(q.waiting[0].w)
	for ; n < len(q.waiting) && total+size(q.waiting[n].w) <= limit; n++ {
		total += size(q.waiting[n].w)
	}
	group := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	return group
}

// handOver passes the commit to the first call still waiting, if any.
func (q *groupQueue[W]) handOver() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.committing = false
		q.waiting = nil
		return
	}
	q.waiting[0].ready <- true
}
