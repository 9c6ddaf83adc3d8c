package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdWriter takes the database's write lock on a connection of its own,
// as another process would, so that the store's next transaction waits;
// then, once waiting calls have queued, release runs stmts in the same
// transaction and commits. SQLite waits 5 s for the lock (busy_timeout):
// release must come before.
func holdWriter(t *testing.T, url string) (release func(stmts ...string)) {
	t.Helper()
	other, err := Open(t.Context(), url, discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	conn, err := sqlDB(t, other).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	lock := []string{"BEGIN IMMEDIATE"}
	if testPostgres != nil {
		// EXCLUSIVE lets reads through but no insert: into resources, the
		// first write of a report, nor into instances, the only one of an
		// instance record (without it, a group of records commits before
		// the calls after it have queued, and the test finds none queued).
		lock = []string{"BEGIN", "LOCK TABLE resources, instances IN EXCLUSIVE MODE"}
	}
	exec(t, conn, lock...)
	return func(stmts ...string) { exec(t, conn, append(stmts, "COMMIT")...) }
}

func exec(t *testing.T, conn *sql.Conn, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// queueBehind runs calls at once, the first alone until it has taken its
// group, so that it commits a group of its own, held by the writer, and
// every other queues behind it; it returns once they all have, with a wait
// for the calls to end. Started together, a call that queued before the
// first took its group would join it, and one fewer would queue.
func queueBehind[W any](t *testing.T, q *groupQueue[W], calls []func()) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(calls[0])
	waitQueue(t, q, "the first call committing alone", func(committing bool, queued int) bool { return committing && queued == 0 })
	for _, call := range calls[1:] {
		wg.Go(call)
	}
	waitQueue(t, q, fmt.Sprintf("%d calls queued", len(calls)-1), func(_ bool, queued int) bool { return queued == len(calls)-1 })
	return wg.Wait
}

// waitQueue polls until done holds of q's state: whether a group is
// committing and how many calls wait. Long, as 80 goroutines on a loaded
// machine can take seconds to reach the queue (77 of 79 had in 3 s in one
// clean-clone run).
func waitQueue[W any](t *testing.T, q *groupQueue[W], want string, done func(committing bool, queued int) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		q.mu.Lock()
		committing, queued := q.committing, len(q.waiting)
		q.mu.Unlock()
		if done(committing, queued) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued (committing: %v), want %s", queued, committing, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// reportTwice posts each instance's report twice at once, as an instance
// retrying a report that timed out would, while the database's writer is
// held, so that all but the first call queue and commit as one group; it
// returns each call's outcome, by instance.
func reportTwice(t *testing.T, s *Store, url string, instances []int64, report []MinuteDelta, whileHeld ...string) ([][2]AddedMinutes, [][2]error) {
	t.Helper()
	release := holdWriter(t, url)
	added := make([][2]AddedMinutes, len(instances))
	errs := make([][2]error, len(instances))
	var calls []func()
	for i, id := range instances {
		for k := range 2 {
			calls = append(calls, func() { added[i][k], errs[i][k] = s.AddInstanceMinutes(context.Background(), id, report, 0) })
		}
	}
	wait := queueBehind(t, &s.reports, calls)
	release(whileHeld...)
	wait()
	return added, errs
}

// TestGroupCommitCountsEveryReportOnce: reports that queue behind a
// transaction commit together, and every one of them counts, once: a
// report sent twice (a retry) counts in one of its calls and adds nothing
// in the other, each call learns what its own report added, and the
// summed minutes and rollups hold every instance's.
func TestGroupCommitCountsEveryReportOnce(t *testing.T) {
	s, url := openTestStore(t)
	const n, resources = 40, 20
	instances := make([]int64, n)
	for i := range instances {
		instances[i] = putInstance(t, s, fmt.Sprintf("i-%d", i), minute(1))
	}
	report := groupReport(resources, minute(1), 7)
	added, errs := reportTwice(t, s, url, instances, report)
	for i := range instances {
		for k := range 2 {
			if errs[i][k] != nil {
				t.Fatalf("instance %d, call %d: %v", i, k, errs[i][k])
			}
		}
		if a, b := added[i][0].Added, added[i][1].Added; a+b != resources || a != 0 && b != 0 {
			t.Errorf("instance %d: its two calls added %d and %d minutes, want %d and 0", i, a, b, resources)
		}
		got := added[i][0].Counts["group-3"]
		got.Merge(added[i][1].Counts["group-3"])
		if got != report[3].Counts {
			t.Errorf("instance %d: its calls added %+v to group-3, want %+v", i, got, report[3].Counts)
		}
	}
	for _, name := range []string{"group-0", fmt.Sprintf("group-%d", resources-1)} {
		points, err := s.ResourceMetrics(t.Context(), name, minute(0), minute(60), MinuteMs)
		if err != nil {
			t.Fatal(err)
		}
		if len(points) != 1 || points[0].Pass != n*7 || points[0].RtSumMs != n*14 || points[0].MaxConcurrency != 2 {
			t.Errorf("%s: %+v, want one minute of %d passes", name, points, n*7)
		}
		own, err := s.InstanceMetrics(t.Context(), name, instances[n-1], minute(0), minute(60), MinuteMs)
		if err != nil || len(own) != 1 || own[0].Pass != 7 {
			t.Errorf("%s of the last instance: %+v %v, want 7 passes", name, own, err)
		}
	}
	assertRollupsSumMinutes(t, sqlDB(t, s), "after the group")
}

// TestGroupCommitFailureFailsEveryReport: when a group's transaction
// fails, every call it carried fails with the error, which says the
// reports were committed together, and none of them counted; sent again,
// each counts once.
func TestGroupCommitFailureFailsEveryReport(t *testing.T) {
	s, url := openTestStore(t)
	const n, resources = 10, 5
	instances := make([]int64, n)
	for i := range instances {
		instances[i] = putInstance(t, s, fmt.Sprintf("i-%d", i), minute(1))
	}
	report := groupReport(resources, minute(1), 3)
	// The table of the instances' own rows goes missing while the calls
	// wait, as if a bad migration had run from another process.
	_, errs := reportTwice(t, s, url, instances, report, "ALTER TABLE instance_minutes RENAME TO instance_minutes_away")
	together := 0
	for i := range instances {
		for k := range 2 {
			err := errs[i][k]
			if err == nil {
				t.Fatalf("instance %d, call %d: no error", i, k)
			}
			if strings.Contains(err.Error(), fmt.Sprintf("%d instance reports committed together: ", 2*n-1)) {
				together++
			}
		}
	}
	if together != 2*n-1 {
		t.Errorf("%d calls failed naming their group of %d, want %d", together, 2*n-1, 2*n-1)
	}
	if _, err := sqlDB(t, s).ExecContext(t.Context(), "ALTER TABLE instance_minutes_away RENAME TO instance_minutes"); err != nil {
		t.Fatal(err)
	}
	if points, err := s.ResourceMetrics(t.Context(), "group-0", minute(0), minute(60), MinuteMs); err != nil || len(points) != 0 {
		t.Fatalf("after the failed group: %+v %v, want nothing counted", points, err)
	}

	added, errs := reportTwice(t, s, url, instances, report)
	for i := range instances {
		if errs[i][0] != nil || errs[i][1] != nil {
			t.Fatalf("instance %d sent again: %v, %v", i, errs[i][0], errs[i][1])
		}
		if a, b := added[i][0].Added, added[i][1].Added; a+b != resources {
			t.Errorf("instance %d sent again: added %d and %d minutes, want %d in all", i, a, b, resources)
		}
	}
	points, err := s.ResourceMetrics(t.Context(), "group-0", minute(0), minute(60), MinuteMs)
	if err != nil || len(points) != 1 || points[0].Pass != n*3 {
		t.Errorf("sent again: %+v %v, want %d passes", points, err, n*3)
	}
}

// TestGroupCommitRecordsEveryInstance: instances recorded while the
// database's writer is held queue and are recorded together, each with its
// key; an instance recorded twice in one group keeps one key and its
// first seen time.
func TestGroupCommitRecordsEveryInstance(t *testing.T) {
	s, url := openTestStore(t)
	release := holdWriter(t, url)
	const n = 30
	ins := make([]*Instance, 2*n)
	errs := make([]error, len(ins))
	calls := make([]func(), len(ins))
	for i := range ins {
		// Instance i%n, seen at minute i: twice each, the second later.
		ins[i] = &Instance{UID: fmt.Sprintf("i-%d", i%n), App: "shop", FirstSeenMs: minute(int64(i)), LastSeenMs: minute(int64(i))}
		calls[i] = func() { errs[i] = s.PutInstance(context.Background(), ins[i]) }
	}
	wait := queueBehind(t, &s.instances, calls)
	release()
	wait()
	keys := map[int64]bool{}
	for i, in := range ins {
		if errs[i] != nil {
			t.Fatalf("instance %s: %v", in.UID, errs[i])
		}
		keys[in.ID] = true
		if twin := ins[(i+n)%len(ins)]; in.ID != twin.ID {
			t.Errorf("%s recorded twice: keys %d and %d", in.UID, in.ID, twin.ID)
		}
	}
	all, err := s.Instances(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n || len(keys) != n {
		t.Fatalf("%d instances stored, %d keys; want %d", len(all), len(keys), n)
	}
	for _, in := range all {
		var i int64
		if _, err := fmt.Sscanf(in.UID, "i-%d", &i); err != nil {
			t.Fatal(err)
		}
		if in.FirstSeenMs != minute(i) || in.LastSeenMs != minute(i+n) {
			t.Errorf("%s: seen %d to %d, want %d to %d", in.UID, in.FirstSeenMs, in.LastSeenMs, minute(i), minute(i+n))
		}
	}
}
