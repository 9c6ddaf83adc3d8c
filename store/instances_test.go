package store

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// putInstance records an instance seen at seenMs and returns its key.
func putInstance(t *testing.T, s *Store, uid string, seenMs int64) int64 {
	t.Helper()
	in := Instance{UID: uid, App: "shop", FirstSeenMs: seenMs, LastSeenMs: seenMs}
	if err := s.PutInstance(t.Context(), &in); err != nil {
		t.Fatal(err)
	}
	return in.ID
}

// TestPutInstance: an instance is matched by its own id; a later report
// keeps its key and first seen time and takes the rest.
func TestPutInstance(t *testing.T) {
	s, _ := openTestStore(t)
	key := putInstance(t, s, "a", minute(1))
	again := Instance{UID: "a", App: "pay", Hostname: "h2", PID: 9, Version: "2", RulesRevision: 5, FirstSeenMs: minute(3), LastSeenMs: minute(3)}
	if err := s.PutInstance(t.Context(), &again); err != nil {
		t.Fatal(err)
	}
	if again.ID != key || again.FirstSeenMs != minute(1) {
		t.Errorf("again: key %d first seen %d, want %d and %d", again.ID, again.FirstSeenMs, key, minute(1))
	}
	putInstance(t, s, "b", minute(2))
	all, err := s.Instances(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := Instance{ID: key, UID: "a", App: "pay", Hostname: "h2", PID: 9, Version: "2", RulesRevision: 5, FirstSeenMs: minute(1), LastSeenMs: minute(3)}
	if len(all) != 2 || !reflect.DeepEqual(all[0], want) || all[1].UID != "b" {
		t.Errorf("instances %+v, want %+v and b", all, want)
	}
	if pay, err := s.Instances(t.Context(), "pay"); err != nil || len(pay) != 1 || pay[0].UID != "a" {
		t.Errorf("app pay: %+v %v, want a", pay, err)
	}
	if _, err := s.InstanceByUID(t.Context(), "nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown instance: %v, want ErrNotFound", err)
	}
}

// TestPutInstancesKeysAWholeGroup: a group of more instances than one
// query reads the keys of learns every instance's key and first seen
// time, new and known ones, and one named twice.
func TestPutInstancesKeysAWholeGroup(t *testing.T) {
	s, _ := openTestStore(t)
	known := putInstance(t, s, "i-7", minute(1))
	group := make([]*Instance, 2*namesPerQuery+10)
	for i := range group {
		group[i] = &Instance{UID: fmt.Sprintf("i-%d", i%(2*namesPerQuery)), App: "shop", FirstSeenMs: minute(2), LastSeenMs: minute(2)}
	}
	if err := s.putInstances(t.Context(), group); err != nil {
		t.Fatal(err)
	}
	all, err := s.Instances(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]Instance{}
	for _, in := range all {
		stored[in.UID] = in
	}
	if len(stored) != 2*namesPerQuery || stored["i-7"].ID != known || stored["i-7"].FirstSeenMs != minute(1) {
		t.Fatalf("%d instances stored, i-7 %+v; want %d, i-7 key %d first seen %d", len(stored), stored["i-7"], 2*namesPerQuery, known, minute(1))
	}
	for _, in := range group {
		if want := stored[in.UID]; in.ID != want.ID || in.FirstSeenMs != want.FirstSeenMs {
			t.Errorf("%s: key %d first seen %d, stored %d and %d", in.UID, in.ID, in.FirstSeenMs, want.ID, want.FirstSeenMs)
		}
	}
}

// TestAddInstanceMinutesFoldsBeyondTheBudget: past the budget, new names'
// minutes add to (overflow) (the instance's own rows too) and get no
// resource; a retry adds nothing, the instance's own (overflow) minutes
// add to the folded ones, known names are never folded, and pruning
// forgets the folded minutes.
func TestAddInstanceMinutesFoldsBeyondTheBudget(t *testing.T) {
	s, _ := openTestStore(t)
	a := putInstance(t, s, "a", minute(1))
	pass := func(name string, n int64) MinuteDelta {
		return MinuteDelta{Resource: name, StartMs: minute(5), Counts: engine.Counts{Calls: engine.Calls{Pass: n}}}
	}
	for _, tt := range []struct {
		report     []MinuteDelta
		want       AddedMinutes
		wantPasses map[string]int64
		wantStored int64
	}{
		{[]MinuteDelta{pass("k1", 1), pass("k2", 2), pass("n1", 4), pass("n2", 8)}, AddedMinutes{Added: 4, Folded: 2},
			map[string]int64{"k1": 1, "k2": 2, engine.OverflowResource: 12}, 3},
		{[]MinuteDelta{pass("k1", 1), pass("k2", 2), pass("n1", 4), pass("n2", 8)}, AddedMinutes{}, nil, 3}, // a retry
		{[]MinuteDelta{pass(engine.OverflowResource, 16), pass("n3", 32)}, AddedMinutes{Added: 2, Folded: 2},
			map[string]int64{engine.OverflowResource: 48}, 3},
		{[]MinuteDelta{pass(engine.OverflowResource, 16)}, AddedMinutes{}, nil, 3},
	} {
		got, err := s.AddInstanceMinutes(t.Context(), a, tt.report, 2)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := s.CountCatalogue(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		passes := map[string]int64{}
		for name, c := range got.Counts {
			passes[name] = c.Pass
		}
		if got.Added != tt.want.Added || got.Folded != tt.want.Folded || stored != tt.wantStored || !maps.Equal(passes, tt.wantPasses) {
			t.Errorf("%+v: %+v with %d resources stored, want %+v and passes %v with %d", tt.report, got, stored, tt.want, tt.wantPasses, tt.wantStored)
		}
	}
	for name, want := range map[string]int64{"k1": 1, "k2": 2, engine.OverflowResource: 4 + 8 + 16 + 32} {
		all, err := s.ResourceMetrics(t.Context(), name, minute(0), minute(60), MinuteMs)
		if err != nil {
			t.Fatal(err)
		}
		own, err := s.InstanceMetrics(t.Context(), name, a, minute(0), minute(60), MinuteMs)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 || all[0].Pass != want || len(own) != 1 || own[0].Pass != want {
			t.Errorf("%s: %+v, instance's %+v; want %d passes in each", name, all, own, want)
		}
	}
	assertRollupsSumMinutes(t, sqlDB(t, s), "after folded reports")
	if _, err := s.GetMetricResource(t.Context(), "n1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a folded name: %v, want ErrNotFound", err)
	}
	if _, err := s.PruneMetrics(t.Context(), minute(6), 1); err != nil {
		t.Fatal(err)
	}
	var folds int64
	if err := sqlDB(t, s).QueryRow(`SELECT count(*) FROM instance_folds`).Scan(&folds); err != nil || folds != 0 {
		t.Errorf("after pruning: %d folded minutes, %v; want none", folds, err)
	}
}

// TestAddInstanceMinutesCountsEachMinuteOnce: an instance's minutes add to
// the summed minutes and their rollups, once per instance, resource and
// minute however often they are reported, and its own rows hold only its
// figures.
func TestAddInstanceMinutesCountsEachMinuteOnce(t *testing.T) {
	s, _ := openTestStore(t)
	addMetrics(t, s, MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	a, b := putInstance(t, s, "a", minute(1)), putInstance(t, s, "b", minute(1))
	report := []MinuteDelta{
		{Resource: "orders", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 10, Complete: 2}, RtSumMs: 8, MinRtMs: 3, MaxRtMs: 5}},
		{Resource: "orders", StartMs: minute(70), Counts: engine.Counts{Calls: engine.Calls{Pass: 4}}},
	}
	for _, tt := range []struct {
		instance  int64
		wantAdded int
		wantPass  int64
	}{{a, 2, 11}, {a, 0, 11}, {b, 2, 21}} {
		n, err := s.AddInstanceMinutes(t.Context(), tt.instance, report, 0)
		added := n.Added
		if err != nil {
			t.Fatal(err)
		}
		points, err := s.ResourceMetrics(t.Context(), "orders", minute(0), minute(60), MinuteMs)
		if err != nil {
			t.Fatal(err)
		}
		if added != tt.wantAdded || len(points) != 1 || points[0].Pass != tt.wantPass {
			t.Errorf("instance %d: added %d, minutes %+v; want %d added, %d passes", tt.instance, added, points, tt.wantAdded, tt.wantPass)
		}
	}
	assertRollupsSumMinutes(t, sqlDB(t, s), "after the reports")
	own, err := s.InstanceMetrics(t.Context(), "orders", a, minute(0), minute(120), HourMs)
	if err != nil {
		t.Fatal(err)
	}
	want := []MetricPoint{
		{StartMs: t0, Counts: report[0].Counts},
		{StartMs: t0 + HourMs, Counts: report[1].Counts},
	}
	if !reflect.DeepEqual(own, want) {
		t.Errorf("instance a by hour: %+v, want %+v", own, want)
	}
}

// TestAddInstanceMinutesCountsAWideReportOnce: a report of more rows
// than one statement inserts on PostgreSQL (ownRowsPerStatement), one of
// its minutes given twice in one statement's rows, counts each minute
// once, and its retry none.
func TestAddInstanceMinutesCountsAWideReportOnce(t *testing.T) {
	s, _ := openTestStore(t)
	a := putInstance(t, s, "a", minute(1))
	report := make([]MinuteDelta, 2*ownRowsPerStatement+10)
	for i := range report {
		report[i] = MinuteDelta{Resource: fmt.Sprintf("r-%d", i), StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}}
	}
	twice := report[len(report)-2].Resource
	report[len(report)-1].Resource = twice
	for _, wantAdded := range []int{len(report) - 1, 0} {
		n, err := s.AddInstanceMinutes(t.Context(), a, report, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n.Added != wantAdded || n.Counts[twice].Pass != int64(min(wantAdded, 1)) {
			t.Errorf("added %d, %s counted %+v; want %d added, %s once", n.Added, twice, n.Counts[twice], wantAdded, twice)
		}
	}
	for _, name := range []string{"r-0", "r-600", twice} {
		points, err := s.ResourceMetrics(t.Context(), name, minute(0), minute(60), MinuteMs)
		if err != nil {
			t.Fatal(err)
		}
		if len(points) != 1 || points[0].Pass != 1 {
			t.Errorf("%s: minutes %+v, want one of 1 pass", name, points)
		}
	}
}

// TestAddInstanceMinutesWritesOnlyMovedSeenTimes: a report of resources
// whose stored seen times hold its minutes already leaves their rows as
// they are; one that goes beyond them, on either side, or that names a
// resource never seen (a rule's), writes them.
func TestAddInstanceMinutesWritesOnlyMovedSeenTimes(t *testing.T) {
	s, _ := openTestStore(t)
	db := sqlDB(t, s)
	updates := []string{
		`CREATE TABLE resource_updates (name TEXT)`,
		`CREATE TRIGGER resource_updated AFTER UPDATE ON resources BEGIN INSERT INTO resource_updates VALUES (new.name); END`,
	}
	if testPostgres != nil {
		updates = []string{
			`CREATE TABLE resource_updates (name TEXT)`,
			`CREATE FUNCTION resource_updated() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN INSERT INTO resource_updates VALUES (NEW.name); RETURN NEW; END $$`,
			`CREATE TRIGGER resource_updated AFTER UPDATE ON resources FOR EACH ROW EXECUTE FUNCTION resource_updated()`,
		}
	}
	for _, q := range append(updates, `INSERT INTO resources (name) VALUES ('ruled')`) {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	report := func(uid string, resource string, minutes ...int64) {
		t.Helper()
		var deltas []MinuteDelta
		for _, m := range minutes {
			deltas = append(deltas, MinuteDelta{Resource: resource, StartMs: minute(m), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
		}
		if _, err := s.AddInstanceMinutes(t.Context(), putInstance(t, s, uid, minute(1)), deltas, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		uid, resource       string
		minutes             []int64
		wantFirst, wantLast int64
		wantUpdated         bool
	}{
		{"a", "orders", []int64{5}, minute(5), minute(6) - 1, false},
		{"b", "orders", []int64{5}, minute(5), minute(6) - 1, false},
		{"c", "orders", []int64{3}, minute(3), minute(6) - 1, true},
		{"d", "orders", []int64{4, 7}, minute(3), minute(8) - 1, true},
		{"e", "ruled", []int64{5}, minute(5), minute(6) - 1, true},
	} {
		if _, err := db.ExecContext(t.Context(), `DELETE FROM resource_updates`); err != nil {
			t.Fatal(err)
		}
		report(tt.uid, tt.resource, tt.minutes...)
		r, err := s.GetMetricResource(t.Context(), tt.resource)
		if err != nil {
			t.Fatal(err)
		}
		var updated int
		if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM resource_updates`).Scan(&updated); err != nil {
			t.Fatal(err)
		}
		if r.FirstSeenMs != tt.wantFirst || r.LastSeenMs != tt.wantLast || (updated > 0) != tt.wantUpdated {
			t.Errorf("%s's report of %s at minutes %v: seen %d to %d, %d updates; want %d to %d, updated %v",
				tt.uid, tt.resource, tt.minutes, r.FirstSeenMs, r.LastSeenMs, updated, tt.wantFirst, tt.wantLast, tt.wantUpdated)
		}
	}
}

// TestPruneInstances: retention prunes the instances' own minute rows and
// the instances last seen before the cut.
func TestPruneInstances(t *testing.T) {
	s, _ := openTestStore(t)
	old, recent := putInstance(t, s, "old", minute(1)), putInstance(t, s, "recent", minute(200))
	for _, key := range []int64{old, recent} {
		if _, err := s.AddInstanceMinutes(t.Context(), key, []MinuteDelta{
			{Resource: "orders", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
			{Resource: "orders", StartMs: minute(200), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
		}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PruneMetrics(t.Context(), t0+2*HourMs, 1); err != nil {
		t.Fatal(err)
	}
	all, err := s.Instances(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].UID != "recent" {
		t.Errorf("instances after the prune: %+v, want recent only", all)
	}
	own, err := s.InstanceMetrics(t.Context(), "orders", recent, minute(0), minute(300), MinuteMs)
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != 1 || own[0].StartMs != minute(200) {
		t.Errorf("recent's rows after the prune: %+v, want minute 200 only", own)
	}
}

// TestRulesRevision: the revision is the last rule revision's id, growing
// with every write.
func TestRulesRevision(t *testing.T) {
	s, _ := openTestStore(t)
	rev := func() int64 {
		t.Helper()
		n, err := s.RulesRevision(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := rev(); got != 0 {
		t.Fatalf("before any rule: %d, want 0", got)
	}
	createRule(t, s, "one")
	first := rev()
	createRule(t, s, "two")
	if second := rev(); first < 1 || second <= first {
		t.Errorf("revisions %d then %d, want growing from 1", first, second)
	}
}
