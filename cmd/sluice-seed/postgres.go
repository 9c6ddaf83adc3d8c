package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/store"
)

// minuteColumns are the columns of metric_minutes and its rollups that
// seedPostgres writes; the others keep their defaults (no adaptive limit).
var minuteColumns = []string{"resource_id", "start_ms", "pass", "block", "shadow_block", "complete", "error",
	"rt_sum_ms", "rt_min_ms", "rt_max_ms", "max_concurrency"}

// rollups are the tables that sum the minute rows, with their bucket
// length: the store's rollups.
var rollups = []struct {
	table    string
	bucketMs int64
}{
	{"metric_five_minutes", store.FiveMinutesMs},
	{"metric_hours", store.HourMs},
	{"metric_days", store.DayMs},
}

// seedPostgres writes plan's data set to the PostgreSQL database at url,
// which store.Open has migrated, in one transaction: the same rows as seed
// (same generator, same order), the minute rows by COPY and the rollups
// summed from them in SQL. The store's upserts, a statement per row and
// rollup, would take hours over 10 M rows on a small machine; this takes
// minutes. It needs a database without minute rows, which COPY cannot
// add to.
func seedPostgres(ctx context.Context, url string, plan seedPlan) (int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	var some bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM metric_minutes)`).Scan(&some); err != nil {
		return 0, err
	}
	if some {
		return 0, errors.New("the database has minute rows already: on PostgreSQL, sluice-seed fills an empty metric history")
	}
	startMs := plan.endMs - int64(plan.days)*store.DayMs
	ids := make([]int64, plan.resources)
	for i := range ids {
		if err := tx.QueryRow(ctx, `INSERT INTO resources (name, first_seen_ms, last_seen_ms) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET first_seen_ms = $2, last_seen_ms = $3 RETURNING id`,
			resourceName(i), startMs, plan.endMs-store.MinuteMs).Scan(&ids[i]); err != nil {
			return 0, fmt.Errorf("record resources: %w", err)
		}
	}
	rows, err := tx.CopyFrom(ctx, pgx.Identifier{"metric_minutes"}, minuteColumns, newMinuteRows(plan, ids))
	if err != nil {
		return 0, fmt.Errorf("copy the minute rows: %w", err)
	}
	cols := "resource_id, start_ms, pass, block, shadow_block, complete, error, rt_sum_ms, rt_min_ms, rt_max_ms, max_concurrency"
	for _, r := range rollups {
		if _, err := tx.Exec(ctx, `INSERT INTO `+r.table+` (`+cols+`)
			SELECT resource_id, start_ms - start_ms % $1, sum(pass), sum(block), sum(shadow_block), sum(complete), sum(error),
				sum(rt_sum_ms), min(rt_min_ms), max(rt_max_ms), max(max_concurrency)
			FROM metric_minutes GROUP BY 1, 2 ORDER BY 1, 2`, r.bucketMs); err != nil {
			return 0, fmt.Errorf("sum %s: %w", r.table, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	// Fresh statistics, as autovacuum would gather in time: the planner's
	// choice is what the benchmarks measure.
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		return 0, err
	}
	return rows, nil
}

// minuteRows hands COPY the plan's minute rows one at a time, drawn as
// seed draws them: resource by resource, minute by minute.
type minuteRows struct {
	plan    seedPlan
	ids     []int64
	rng     *rand.Rand
	startMs int64
	// i is the current resource, profile its habits and next the start of
	// its next minute.
	i       int
	profile trafficProfile
	next    int64
	row     []any
}

func newMinuteRows(plan seedPlan, ids []int64) *minuteRows {
	rng := rand.New(rand.NewPCG(plan.seed, plan.seed^0x5eed))
	startMs := plan.endMs - int64(plan.days)*store.DayMs
	return &minuteRows{plan: plan, ids: ids, rng: rng, startMs: startMs, i: -1, next: plan.endMs}
}

// Next moves to the next row.
func (m *minuteRows) Next() bool {
	if m.next >= m.plan.endMs {
		m.i++
		if m.i >= len(m.ids) {
			return false
		}
		m.profile = newTrafficProfile(m.rng, m.i)
		m.next = m.startMs
	}
	c := m.profile.minute(m.rng, m.next)
	var minRt any
	if c.Complete > 0 {
		minRt = c.MinRtMs
	}
	m.row = []any{m.ids[m.i], m.next, c.Pass, c.Block, c.ShadowBlock, c.Complete, c.Error,
		c.RtSumMs, minRt, c.MaxRtMs, c.MaxConcurrency}
	m.next += store.MinuteMs
	return true
}

// Values returns the current row.
func (m *minuteRows) Values() ([]any, error) { return m.row, nil }

// Err reports no error: drawing rows cannot fail.
func (m *minuteRows) Err() error { return nil }
