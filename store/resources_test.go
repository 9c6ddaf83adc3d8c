package store

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/migrations"
)

// ruleOn creates a rule named name on resource.
func ruleOn(t *testing.T, s *Store, name, resource string) Rule {
	t.Helper()
	r := Rule{Name: name, Kind: "flow", Resource: resource, Enabled: true, Mode: "enforce", Spec: `{"threshold":1}`}
	if err := s.InTx(t.Context(), func(tx *Tx) error { return tx.CreateRule(&r) }); err != nil {
		t.Fatal(err)
	}
	return r
}

// catalogue reads every entry of the catalogue, by name.
func catalogue(t *testing.T, s *Store) map[string]CatalogueEntry {
	t.Helper()
	names, err := s.CatalogueNames(t.Context(), "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := s.CatalogueEntries(t.Context(), names)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(names) {
		t.Fatalf("%d entries for %d names", len(entries), len(names))
	}
	return entries
}

func ms(v int64) *int64 { return &v }

// TestCatalogueFollowsRules: the rule writes keep the rule counts, and a
// resource without traffic stays in the catalogue only while a rule names
// it.
func TestCatalogueFollowsRules(t *testing.T) {
	s, _ := openTestStore(t)
	addMetrics(t, s, MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	ruleOn(t, s, "orders-qps", "orders")
	ruleOn(t, s, "pay-qps", "payments")
	pay := ruleOn(t, s, "pay-conc", "payments")
	ruleOn(t, s, "system-load", "") // a kind without resource names none
	want := map[string]CatalogueEntry{
		"orders":   {Name: "orders", FirstSeenMs: ms(minute(1)), LastSeenMs: ms(minute(1)), RuleCount: 1},
		"payments": {Name: "payments", RuleCount: 2},
	}
	if got := catalogue(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("catalogue %+v\nwant %+v", got, want)
	}

	pay.Resource = "refunds"
	if err := s.InTx(t.Context(), func(tx *Tx) error { return tx.UpdateRule(&pay) }); err != nil {
		t.Fatal(err)
	}
	addMetrics(t, s, MinuteDelta{Resource: "refunds", StartMs: minute(2), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	want["payments"] = CatalogueEntry{Name: "payments", RuleCount: 1}
	want["refunds"] = CatalogueEntry{Name: "refunds", FirstSeenMs: ms(minute(2)), LastSeenMs: ms(minute(2)), RuleCount: 1}
	if got := catalogue(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after moving a rule and traffic: %+v\nwant %+v", got, want)
	}

	err := s.InTx(t.Context(), func(tx *Tx) error {
		rules, err := tx.AllRules()
		if err != nil {
			return err
		}
		for _, r := range rules {
			if err := tx.DeleteRule(r.ID, r.Version); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]CatalogueEntry{
		"orders":  {Name: "orders", FirstSeenMs: ms(minute(1)), LastSeenMs: ms(minute(1))},
		"refunds": {Name: "refunds", FirstSeenMs: ms(minute(2)), LastSeenMs: ms(minute(2))},
	}
	if got := catalogue(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("without rules: %+v\nwant %+v", got, want)
	}
}

// TestCatalogueRetention: past retention, a resource leaves the catalogue
// unless a rule names it; then it stays, without seen times.
func TestCatalogueRetention(t *testing.T) {
	s, _ := openTestStore(t)
	addMetrics(t, s,
		MinuteDelta{Resource: "old", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
		MinuteDelta{Resource: "old-ruled", StartMs: minute(1), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
		MinuteDelta{Resource: "recent", StartMs: minute(90), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}},
	)
	ruleOn(t, s, "keep", "old-ruled")
	if _, err := s.PruneMetrics(t.Context(), minute(60), 10); err != nil {
		t.Fatal(err)
	}
	want := map[string]CatalogueEntry{
		"old-ruled": {Name: "old-ruled", RuleCount: 1},
		"recent":    {Name: "recent", FirstSeenMs: ms(minute(90)), LastSeenMs: ms(minute(90))},
	}
	if got := catalogue(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("catalogue %+v\nwant %+v", got, want)
	}
	if _, err := s.GetMetricResource(t.Context(), "old-ruled"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetMetricResource of a resource without traffic: %v, want ErrNotFound", err)
	}
	addMetrics(t, s, MinuteDelta{Resource: "old-ruled", StartMs: minute(91), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	if got := catalogue(t, s)["old-ruled"]; !reflect.DeepEqual(got, CatalogueEntry{Name: "old-ruled", FirstSeenMs: ms(minute(91)), LastSeenMs: ms(minute(91)), RuleCount: 1}) {
		t.Errorf("traffic again: %+v", got)
	}
}

// TestCatalogueNames: the names page in name order, filtered by a
// substring that matches ASCII letters in either case and LIKE's wildcards
// as themselves, as NameContains does.
func TestCatalogueNames(t *testing.T) {
	s, _ := openTestStore(t)
	names := []string{"GET:/api/Orders", "orders", "pay_50%", "pay-50", "Édition", "édition", "a\\b", "zeta"}
	for _, name := range names {
		addMetrics(t, s, MinuteDelta{Resource: name, StartMs: minute(0), Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	}
	sorted := slices.Sorted(slices.Values(names))
	for _, page := range []struct{ offset, limit int }{{0, 3}, {3, 3}, {6, 3}, {9, 3}} {
		got, err := s.CatalogueNames(t.Context(), "", page.offset, page.limit)
		if err != nil {
			t.Fatal(err)
		}
		if want := sorted[min(page.offset, len(sorted)):min(page.offset+page.limit, len(sorted))]; !slices.Equal(got, want) {
			t.Errorf("offset %d limit %d: %q, want %q", page.offset, page.limit, got, want)
		}
	}
	for _, q := range []string{"", "ORDERS", "orders", "_", "%", "_50%", "é", "É", "DITION", "\\", "a\\b", "nothing"} {
		var want []string
		for _, name := range sorted {
			if NameContains(name, q) {
				want = append(want, name)
			}
		}
		got, err := s.CatalogueNames(t.Context(), q, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.CountCatalogue(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || n != int64(len(want)) {
			t.Errorf("q %q: %q (count %d), NameContains says %q", q, got, n, want)
		}
	}
	for _, tt := range []struct {
		name, q string
		want    bool
	}{
		{"GET:/api/Orders", "oRdErS", true},
		{"pay-50", "_", false},
		{"Édition", "é", false},
		{"Édition", "DITION", true},
		{"orders", "", true},
		{"ord", "orders", false},
	} {
		if got := NameContains(tt.name, tt.q); got != tt.want {
			t.Errorf("NameContains(%q, %q) = %v, want %v", tt.name, tt.q, got, tt.want)
		}
	}
}

// TestCatalogueMigration: migrating a database of the previous schema keeps
// every resource and its id, and counts the rules that name each.
func TestCatalogueMigration(t *testing.T) {
	s, _ := openSQLiteTestStore(t)
	provider, err := goose.NewProvider(goose.DialectSQLite3, sqlDB(t, s), migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO resources (id, name, first_seen_ms, last_seen_ms) VALUES (7, 'orders', 1, 2), (9, 'idle', 3, 4)`,
		`INSERT INTO rules (name, kind, resource, spec, version, created_at, updated_at) VALUES
			('a', 'flow', 'orders', '{}', 1, '2026-01-01', '2026-01-01'),
			('b', 'flow', 'orders', '{}', 1, '2026-01-01', '2026-01-01'),
			('c', 'flow', 'new', '{}', 1, '2026-01-01', '2026-01-01')`,
	} {
		if _, err := sqlDB(t, s).ExecContext(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := provider.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]CatalogueEntry{
		"idle":   {Name: "idle", FirstSeenMs: ms(3), LastSeenMs: ms(4)},
		"new":    {Name: "new", RuleCount: 1},
		"orders": {Name: "orders", FirstSeenMs: ms(1), LastSeenMs: ms(2), RuleCount: 2},
	}
	if got := catalogue(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("catalogue %+v\nwant %+v", got, want)
	}
	r, err := s.GetMetricResource(t.Context(), "orders")
	if err != nil || r.ID != 7 {
		t.Fatalf("orders: %+v, %v; want id 7", r, err)
	}
}
