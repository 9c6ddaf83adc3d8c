package store

import (
	"errors"
	"testing"
	"time"
)

func createRule(t *testing.T, s *Store, name string) Rule {
	t.Helper()
	r := Rule{Name: name, Kind: "flow", Resource: "orders", Enabled: true, Mode: "enforce", Spec: `{"threshold":1}`}
	err := s.InTx(t.Context(), func(tx *Tx) error {
		if err := tx.CreateRule(&r); err != nil {
			return err
		}
		return tx.AddRevision(&RuleRevision{RuleID: r.ID, Version: r.Version, Action: ActionCreate, Content: "{}"})
	})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return r
}

func TestRuleLifecycle(t *testing.T) {
	s, path := openTestStore(t)
	ctx := t.Context()
	a := createRule(t, s, "a")
	if a.ID == 0 || a.Version != 1 || a.CreatedAt.IsZero() || a.CreatedAt.Location().String() != "UTC" {
		t.Fatalf("created rule = %+v, want an ID, version 1 and UTC times", a)
	}
	err := s.InTx(ctx, func(tx *Tx) error { dup := Rule{Name: "a", Kind: "flow", Spec: "{}"}; return tx.CreateRule(&dup) })
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate name: %v, want ErrConflict", err)
	}

	a.Resource, a.App = "payments", "shop"
	if err := s.InTx(ctx, func(tx *Tx) error { return tx.UpdateRule(&a) }); err != nil {
		t.Fatal(err)
	}
	if a.Version != 2 {
		t.Fatalf("version after update = %d, want 2", a.Version)
	}
	if got, err := s.GetRule(ctx, a.ID); err != nil || got.App != "shop" || got.Resource != "payments" {
		t.Fatalf("updated rule = %+v, %v; want app shop on payments", got, err)
	}
	stale := a
	stale.Version = 1
	if err := s.InTx(ctx, func(tx *Tx) error { return tx.UpdateRule(&stale) }); !errors.Is(err, ErrStale) {
		t.Fatalf("update at an old version: %v, want ErrStale", err)
	}
	b := createRule(t, s, "b")
	renamed := b
	renamed.Name = "a"
	if err := s.InTx(ctx, func(tx *Tx) error { return tx.UpdateRule(&renamed) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("rename onto a taken name: %v, want ErrConflict", err)
	}
	if err := s.InTx(ctx, func(tx *Tx) error { return tx.DeleteRule(b.ID, 7) }); !errors.Is(err, ErrStale) {
		t.Fatalf("delete at a wrong version: %v, want ErrStale", err)
	}
	if err := s.InTx(ctx, func(tx *Tx) error { return tx.DeleteRule(b.ID, b.Version) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRule(ctx, b.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	if err := s.InTx(ctx, func(tx *Tx) error { return tx.DeleteRule(b.ID, b.Version) }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
	revs, total, err := s.ListRevisions(ctx, b.ID, Page{Number: 1, Size: 10})
	if err != nil || total != 1 || len(revs) != 1 {
		t.Fatalf("revisions of a deleted rule = %v, %d, %v; want its one revision", revs, total, err)
	}
	if _, _, err := s.ListRevisions(ctx, 999, Page{Number: 1, Size: 10}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revisions of a rule that never was: %v, want ErrNotFound", err)
	}

	// A restart on the same file: the deleted rule's ID is not reused.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path, discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	c := createRule(t, s2, "c")
	if c.ID <= b.ID {
		t.Fatalf("new rule got ID %d after %d was deleted, want a fresh one", c.ID, b.ID)
	}
}

func TestListRulesFilters(t *testing.T) {
	s, _ := openTestStore(t)
	ctx := t.Context()
	for _, r := range []Rule{
		{Name: "orders-qps", Kind: "flow", Resource: "orders", Enabled: true, Description: "Black Friday cap"},
		{Name: "orders-conc", Kind: "flow", App: "shop", Resource: "orders", Enabled: false},
		{Name: "pay_100%", Kind: "circuitBreaker", Resource: "payments", Enabled: true},
	} {
		err := s.InTx(ctx, func(tx *Tx) error { r.Spec = "{}"; return tx.CreateRule(&r) })
		if err != nil {
			t.Fatal(err)
		}
	}
	disabled := false
	tests := []struct {
		name   string
		filter RuleFilter
		page   Page
		want   []string
		total  int64
	}{
		{"all", RuleFilter{}, Page{1, 50}, []string{"orders-qps", "orders-conc", "pay_100%"}, 3},
		{"by kind", RuleFilter{Kind: "flow"}, Page{1, 50}, []string{"orders-qps", "orders-conc"}, 2},
		{"by resource", RuleFilter{Resource: "payments"}, Page{1, 50}, []string{"pay_100%"}, 1},
		{"by app", RuleFilter{App: "shop"}, Page{1, 50}, []string{"orders-conc"}, 1},
		{"by app and kind", RuleFilter{App: "shop", Kind: "circuitBreaker"}, Page{1, 50}, []string{}, 0},
		{"disabled", RuleFilter{Enabled: &disabled}, Page{1, 50}, []string{"orders-conc"}, 1},
		{"query in description, any case", RuleFilter{Query: "FRIDAY"}, Page{1, 50}, []string{"orders-qps"}, 1},
		{"query with LIKE wildcards", RuleFilter{Query: "_100%"}, Page{1, 50}, []string{"pay_100%"}, 1},
		{"wildcard is literal", RuleFilter{Query: "%"}, Page{1, 50}, []string{"pay_100%"}, 1},
		{"second page", RuleFilter{}, Page{2, 2}, []string{"pay_100%"}, 3},
		{"past the end", RuleFilter{}, Page{5, 2}, []string{}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, total, err := s.ListRules(ctx, tt.filter, tt.page)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, r := range rules {
				names = append(names, r.Name)
			}
			if total != tt.total || len(names) != len(tt.want) {
				t.Fatalf("got %v (total %d), want %v (total %d)", names, total, tt.want, tt.total)
			}
			for i := range names {
				if names[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", names, tt.want)
				}
			}
		})
	}
}

// TestRuleWritesTakeTurns: a rule write (InTx) begins only once the one
// before it has ended, though another Store on the same database (on
// PostgreSQL another replica's) runs it, and then reads what that one
// committed.
func TestRuleWritesTakeTurns(t *testing.T) {
	first, db := openTestStore(t)
	second := first
	if testPostgres != nil {
		var err error
		if second, err = Open(t.Context(), db, discard); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = second.Close() })
	}
	holding, release := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- first.InTx(t.Context(), func(tx *Tx) error {
			r := Rule{Name: "first", Kind: "flow", Resource: "orders", Enabled: true, Mode: "enforce", Spec: "{}"}
			if err := tx.CreateRule(&r); err != nil {
				return err
			}
			if err := tx.AddRevision(&RuleRevision{RuleID: r.ID, Version: 1, Action: ActionCreate, Content: "{}"}); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	var seen []Rule
	secondDone := make(chan error, 1)
	go func() {
		secondDone <- second.InTx(t.Context(), func(tx *Tx) error {
			var err error
			seen, err = tx.AllRules()
			return err
		})
	}()
	waitForRuleWrite(t, first)
	close(release)
	if err := errors.Join(<-firstDone, <-secondDone); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Name != "first" {
		t.Errorf("the second write read %+v, want the rule the first committed", seen)
	}
}

// waitForRuleWrite returns once a rule write waits for its turn on s's
// database: for the rule write lock on PostgreSQL, for the one writer
// connection on SQLite.
func waitForRuleWrite(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting int64
		if testPostgres != nil {
			err := s.db.WithContext(t.Context()).Raw(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Row().Scan(&waiting)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			waiting = sqlDB(t, s).Stats().WaitCount
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no rule write waits for its turn")
		}
		<-tick.C
	}
}

// TestWriteRuleRecordsItsRevision: each write of a rule records, in the
// same call, the version it makes as a revision whose Row is the row as
// written; a delete records the rule's last content at the next version,
// and a failed write records nothing.
func TestWriteRuleRecordsItsRevision(t *testing.T) {
	s, _ := openTestStore(t)
	ctx := t.Context()
	write := func(w *RuleWrite) error { return s.InTx(ctx, func(tx *Tx) error { return tx.WriteRule(w) }) }
	w := RuleWrite{Rule: Rule{Name: "a", Kind: "flow", Resource: "orders", Enabled: true, Mode: "enforce", Spec: `{"threshold":1}`},
		Action: ActionCreate, Actor: "alice", Reason: "cap"}
	if err := write(&w); err != nil {
		t.Fatal(err)
	}
	w.Rule.Spec, w.Action, w.Reason = `{"threshold":2}`, ActionUpdate, "raise"
	if err := write(&w); err != nil {
		t.Fatal(err)
	}
	w.Action, w.Reason = ActionDelete, "gone"
	if err := write(&w); err != nil {
		t.Fatal(err)
	}
	if err := write(&w); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a second delete: %v, want ErrNotFound", err)
	}
	revs, total, err := s.ListRevisions(ctx, w.Rule.ID, Page{Number: 1, Size: 10})
	if err != nil || total != 3 {
		t.Fatalf("revisions %+v (%d), %v; want 3", revs, total, err)
	}
	for i, want := range []struct {
		version        int64
		action, reason string
		spec           string
	}{{3, ActionDelete, "gone", `{"threshold":2}`}, {2, ActionUpdate, "raise", `{"threshold":2}`}, {1, ActionCreate, "cap", `{"threshold":1}`}} {
		rev := revs[i]
		row, err := rev.Row()
		if err != nil {
			t.Fatal(err)
		}
		if rev.Version != want.version || rev.Action != want.action || rev.Actor != "alice" || rev.Reason != want.reason ||
			row.ID != w.Rule.ID || row.Version != want.version || row.Name != "a" || row.Spec != want.spec || !row.CreatedAt.Equal(w.Rule.CreatedAt) {
			t.Errorf("revision %d = %+v, row %+v; want version %d, %s by alice for %q, spec %s", i, rev, row, want.version, want.action, want.reason, want.spec)
		}
	}
}
