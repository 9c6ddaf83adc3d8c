package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/migrations"
)

// rollupTables reads every rollup as it is stored and as the sum of its
// minutes, in the same order, for the caller to compare.
func rollupTables(t *testing.T, db *sql.DB) (stored, summed map[string][][]any) {
	t.Helper()
	stored, summed = map[string][][]any{}, map[string][][]any{}
	for _, table := range metricTables[1:] {
		stored[table.name] = queryRows(t, db, `SELECT resource_id, start_ms, pass, block, shadow_block, complete,
			error, rt_sum_ms, rt_min_ms, rt_max_ms, max_concurrency, busiest_second,
			adaptive_limit_min, adaptive_limit_max, adaptive_limit_last, adaptive_limit_at_ms
			FROM `+table.name+` ORDER BY resource_id, start_ms`)
		span := fmt.Sprint(table.spanMs)
		summed[table.name] = queryRows(t, db, `SELECT resource_id, start_ms / `+span+` * `+span+` AS span_ms,
			sum(pass), sum(block), sum(shadow_block), sum(complete), sum(error), sum(rt_sum_ms),
			min(rt_min_ms), max(rt_max_ms), max(max_concurrency), max(busiest_second),
			min(adaptive_limit_min), max(adaptive_limit_max), `+lastOf(lastKey(""))+`, max(adaptive_limit_at_ms)
			FROM metric_minutes GROUP BY resource_id, span_ms ORDER BY resource_id, span_ms`)
	}
	return stored, summed
}

func queryRows(t *testing.T, db *sql.DB, query string) [][]any {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := [][]any{}
	for rows.Next() {
		// Integers all, or NULL: PostgreSQL's sums are numeric, SQLite's
		// integer, and the rows compare as int64.
		columns, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		cells := make([]sql.NullInt64, len(columns))
		ptrs := make([]any, len(cells))
		for i := range cells {
			ptrs[i] = &cells[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]any, len(cells))
		for i, c := range cells {
			if c.Valid {
				row[i] = c.Int64
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// assertRollupsSumMinutes fails unless every rollup row equals the sum of
// its minutes, and every span with minutes has its rollup row.
func assertRollupsSumMinutes(t *testing.T, db *sql.DB, when string) {
	t.Helper()
	stored, summed := rollupTables(t, db)
	for _, table := range metricTables[1:] {
		if len(summed[table.name]) == 0 {
			t.Fatalf("%s: no minutes to sum into %s", when, table.name)
		}
		if !reflect.DeepEqual(stored[table.name], summed[table.name]) {
			t.Errorf("%s: %s =\n%v\nthe sum of its minutes is\n%v", when, table.name, stored[table.name], summed[table.name])
		}
	}
}

// rollupTraffic is three days of minutes from 2026-03-01 23:00 UTC for
// three resources, sparse and uneven, with minutes without completed
// calls: every span of every rollup mixes rows with and without a
// minimum response time, and b's with and without an adaptive limit.
func rollupTraffic(fromMinute, toMinute int64) []MinuteDelta {
	var deltas []MinuteDelta
	start := t0 - 11*HourMs
	for i, name := range []string{"a", "b", "c"} {
		for m := fromMinute; m < toMinute; m++ {
			if (m+int64(i))%(int64(i)+2) != 0 {
				continue
			}
			c := engine.Counts{Calls: engine.Calls{Pass: m%9 + 1, Block: m % 4, ShadowBlock: m % 3, Error: m % 2}, MaxConcurrency: m % 5, BusiestSecond: m % 7}
			if m%3 != 0 {
				c.Complete, c.RtSumMs, c.MinRtMs, c.MaxRtMs = 2, m%50+2, m%25+1, m%50+1
			}
			if name == "b" && m%5 != 1 {
				c.AdaptiveLimitMin, c.AdaptiveLimitMax, c.AdaptiveLimitLast = m%30+5, m%30+5+m%7, m%30+5+m%4
			}
			deltas = append(deltas, MinuteDelta{Resource: name, StartMs: start + m*MinuteMs, Counts: c})
		}
	}
	return deltas
}

// TestRollupsSumTheirMinutes: after every flush, those that add to
// minutes already stored and to the partial hour and day still being
// written included, each rollup row equals the sum of its minutes; after
// retention cuts mid-day, they still do, and nothing before the cut is
// left in any table.
func TestRollupsSumTheirMinutes(t *testing.T) {
	s, _ := openTestStore(t)
	db := sqlDB(t, s)
	const days = 3 * 24 * 60
	addMetrics(t, s, rollupTraffic(0, days/2)...)
	assertRollupsSumMinutes(t, db, "after the first half")
	addMetrics(t, s, rollupTraffic(days/2-30, days/2+7)...)
	assertRollupsSumMinutes(t, db, "after a flush into the partial hour")
	addMetrics(t, s, rollupTraffic(days/2, days)...)
	addMetrics(t, s, rollupTraffic(days-90, days)...)
	assertRollupsSumMinutes(t, db, "after minutes flushed twice")

	cutMs := t0 + 3*HourMs // 13:00 on the second day
	if _, err := s.PruneMetrics(t.Context(), cutMs, 5); err != nil {
		t.Fatal(err)
	}
	assertRollupsSumMinutes(t, db, "after retention")
	for _, table := range metricTables {
		var old int
		if err := db.QueryRowContext(t.Context(), bind(s.db, `SELECT count(*) FROM `+table.name+` WHERE start_ms < ?`),
			floorTo(cutMs, table.spanMs)).Scan(&old); err != nil {
			t.Fatal(err)
		}
		if old != 0 {
			t.Errorf("%s keeps %d rows from before the cut", table.name, old)
		}
	}
}

// TestTopResourcesMatchesTheMinutes: over ranges that start and end on
// every kind of boundary and none, each ranking read from the rollups
// equals the one summed from the minutes alone, figures, order and ties.
func TestTopResourcesMatchesTheMinutes(t *testing.T) {
	s, _ := openTestStore(t)
	const days = 3 * 24 * 60
	deltas := rollupTraffic(0, days)
	for _, d := range deltas {
		if d.Resource == "a" { // a tie with a on every figure, broken by name
			d.Resource = "aa"
			deltas = append(deltas, d)
		}
	}
	addMetrics(t, s, deltas...)
	start := t0 - 11*HourMs
	ranges := [][2]int64{
		{0, days}, {7, days - 3}, {60, 120}, {61, 119}, {5, 10}, {3, 4}, {1440 - 17, 2*1440 + 43},
		{1440, 2 * 1440}, {55, 1500}, {700, 2900}, {days - 1, days + 5},
	}
	for _, r := range ranges {
		for by := range topOrder {
			fromMs, toMs := start+r[0]*MinuteMs, start+r[1]*MinuteMs
			got, err := s.TopResources(t.Context(), fromMs, toMs, by, 3)
			if err != nil {
				t.Fatal(err)
			}
			if want := topFromMinutes(t, s, fromMs, toMs, by, 3); !reflect.DeepEqual(got, want) {
				t.Errorf("minutes %d to %d by %s:\n%+v\nfrom the minutes alone:\n%+v", r[0], r[1], by, got, want)
			}
		}
	}
}

// topFromMinutes ranks as TopResources does, from the minute rows alone.
func topFromMinutes(t *testing.T, s *Store, fromMs, toMs int64, by TopBy, limit int) []ResourceTotals {
	t.Helper()
	rows, err := s.db.WithContext(t.Context()).Raw(`SELECT t.name, t.pass, t.block, t.shadow_block, t.complete,
			t.error, t.rt_sum_ms, t.rt_min_ms, t.rt_max_ms, t.max_concurrency, t.busiest_second,
			t.adaptive_limit_min, t.adaptive_limit_max, t.adaptive_limit_last
		FROM (SELECT r.name, `+countColumns+` FROM resources AS r JOIN metric_minutes AS m ON m.resource_id = r.id
			WHERE m.start_ms >= ? AND m.start_ms < ? GROUP BY r.name) AS t
		ORDER BY `+topOrder[by]+`, t.name LIMIT ?`, fromMs, toMs, limit).Rows()
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	top := []ResourceTotals{}
	for rows.Next() {
		var r ResourceTotals
		if err := scanCounts(rows, &r.Resource, &r.Counts); err != nil {
			t.Fatal(err)
		}
		top = append(top, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return top
}

// TestMetricRollupsMigration builds a database at version 5 with minute
// and hour rows, migrates it, finds the rollups summed from what was
// there, and goes down again to the tables of version 5.
func TestMetricRollupsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(t.Context(), 5); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rollupTraffic(0, 2*24*60) {
		for _, table := range []metricTable{metricTables[0], {"metric_hours", HourMs, ""}} {
			if _, err := tx.ExecContext(t.Context(), `INSERT INTO `+table.name+` VALUES
				((SELECT unicode(?)), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (resource_id, start_ms) DO UPDATE SET
					pass = pass + excluded.pass, block = block + excluded.block,
					shadow_block = shadow_block + excluded.shadow_block, complete = complete + excluded.complete,
					error = error + excluded.error, rt_sum_ms = rt_sum_ms + excluded.rt_sum_ms,
					rt_min_ms = coalesce(min(rt_min_ms, excluded.rt_min_ms), rt_min_ms, excluded.rt_min_ms),
					rt_max_ms = max(rt_max_ms, excluded.rt_max_ms),
					max_concurrency = max(max_concurrency, excluded.max_concurrency)`,
				d.Resource, floorTo(d.StartMs, table.spanMs), d.Pass, d.Block, d.ShadowBlock, d.Complete, d.Error,
				d.RtSumMs, minRt(d.Counts), d.MaxRtMs, d.MaxConcurrency); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertRollupsSumMinutes(t, db, "after the migration")

	if _, err := provider.DownTo(t.Context(), 5); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master
		WHERE name IN ('metric_five_minutes', 'metric_days')`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of the rollup tables left after migrating down", left)
	}
}
