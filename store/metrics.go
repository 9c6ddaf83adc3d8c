package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/sluicehq/sluice/engine"
)

// Lengths of the spans metric rows cover, in milliseconds.
const (
	MinuteMs = int64(60_000)
	HourMs   = 60 * MinuteMs
)

// namesPerQuery is how many names one IN list carries, far below SQLite's
// limit of 32,766 parameters.
const namesPerQuery = 500

// minRt is c's MinRtMs as a column value: NULL while nothing completed.
func minRt(c engine.Counts) any {
	if c.Complete == 0 {
		return nil
	}
	return c.MinRtMs
}

// MinuteDelta is what one resource did in one UTC minute since the previous
// flush.
type MinuteDelta struct {
	Resource string
	// StartMs is the minute's start in Unix milliseconds.
	StartMs int64
	engine.Counts
	// FirstSeenMs and LastSeenMs say when in the minute the resource was
	// seen, for its first and last seen times. Optional. Default: StartMs.
	FirstSeenMs int64
	LastSeenMs  int64
}

// MetricResource is a resource that had traffic, with when it was first
// and last seen (Unix milliseconds): a row of the resources table whose
// seen times are set (see CatalogueEntry for the others).
type MetricResource struct {
	ID          int64 `gorm:"primaryKey"`
	Name        string
	FirstSeenMs int64
	LastSeenMs  int64
}

// TableName is the resources table.
func (MetricResource) TableName() string { return "resources" }

// MetricPoint is a resource's traffic in the step that starts at StartMs.
type MetricPoint struct {
	StartMs int64
	engine.Counts
}

// ResourceTotals is a resource's traffic summed over a range.
type ResourceTotals struct {
	Resource string
	engine.Counts
}

// TopBy is what TopResources ranks by.
type TopBy string

// Rankings, each highest first.
const (
	TopByPass  TopBy = "pass"
	TopByBlock TopBy = "block"
	TopByError TopBy = "error"
	TopByAvgRt TopBy = "avgRt"
)

// topOrder is the ORDER BY of each ranking; the name breaks ties.
var topOrder = map[TopBy]string{
	TopByPass:  "t.pass DESC",
	TopByBlock: "t.block DESC",
	TopByError: "t.error DESC",
	TopByAvgRt: "CASE WHEN t.complete > 0 THEN CAST(t.rt_sum_ms AS REAL) / t.complete END DESC NULLS LAST",
}

// addMetricsChunk is how many deltas AddMetrics prepares at a time, within
// its one transaction: a flush of 100,000 resources then never holds all
// its rows at once.
const addMetricsChunk = 5000

// AddMetrics adds deltas to the minute rows, to the hour rows that roll them
// up, and to the resources' first and last seen times, in one transaction:
// counts add, the minimum and maxima merge, so a minute flushed in several
// parts, or again after a restart, adds up and is never overwritten.
func (s *Store) AddMetrics(ctx context.Context, deltas []MinuteDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for chunk := range slices.Chunk(deltas, addMetricsChunk) {
			if err := addMetricsIn(ctx, tx, chunk); err != nil {
				return err
			}
		}
		return nil
	})
}

// addMetricsIn adds deltas within tx. A resource's deltas split over two
// calls add up as they would in one.
func addMetricsIn(ctx context.Context, tx *gorm.DB, deltas []MinuteDelta) error {
	seen := map[string]*MetricResource{}
	hours := map[countKey]*engine.Counts{}
	var hourOrder []countKey
	for _, d := range deltas {
		first, last := d.FirstSeenMs, d.LastSeenMs
		if first == 0 {
			first = d.StartMs
		}
		if last == 0 {
			last = d.StartMs
		}
		if r, ok := seen[d.Resource]; ok {
			r.FirstSeenMs, r.LastSeenMs = min(r.FirstSeenMs, first), max(r.LastSeenMs, last)
		} else {
			seen[d.Resource] = &MetricResource{Name: d.Resource, FirstSeenMs: first, LastSeenMs: last}
		}
		k := countKey{resource: d.Resource, startMs: floorTo(d.StartMs, HourMs)}
		if h, ok := hours[k]; ok {
			h.Merge(d.Counts)
		} else {
			c := d.Counts
			hours[k] = &c
			hourOrder = append(hourOrder, k)
		}
	}
	ids, err := upsertResources(ctx, tx, seen)
	if err != nil {
		return err
	}
	minuteRows := make([]countRow, len(deltas))
	for i, d := range deltas {
		minuteRows[i] = countRow{resourceID: ids[d.Resource], startMs: d.StartMs, counts: d.Counts}
	}
	if err := upsertCounts(ctx, tx, "metric_minutes", minuteRows); err != nil {
		return err
	}
	hourRows := make([]countRow, len(hourOrder))
	for i, k := range hourOrder {
		hourRows[i] = countRow{resourceID: ids[k.resource], startMs: k.startMs, counts: *hours[k]}
	}
	return upsertCounts(ctx, tx, "metric_hours", hourRows)
}

type countKey struct {
	resource string
	startMs  int64
}

type countRow struct {
	resourceID int64
	startMs    int64
	counts     engine.Counts
}

// upsertResources records that the resources were seen and returns their
// IDs by name, many rows a statement.
func upsertResources(ctx context.Context, tx *gorm.DB, seen map[string]*MetricResource) (map[string]int64, error) {
	names := slices.Sorted(maps.Keys(seen))
	ids := make(map[string]int64, len(names))
	for batch := range slices.Chunk(names, namesPerQuery) {
		var sql strings.Builder
		sql.WriteString("INSERT INTO resources (name, first_seen_ms, last_seen_ms) VALUES ")
		args := make([]any, 0, 3*len(batch))
		for i, name := range batch {
			if i > 0 {
				sql.WriteByte(',')
			}
			sql.WriteString("(?,?,?)")
			r := seen[name]
			args = append(args, name, r.FirstSeenMs, r.LastSeenMs)
		}
		// A resource named by a rule may have no seen times yet: SQLite's
		// min and max of a NULL are NULL, so coalesce keeps the new one.
		sql.WriteString(` ON CONFLICT (name) DO UPDATE SET
			first_seen_ms = coalesce(min(first_seen_ms, excluded.first_seen_ms), excluded.first_seen_ms),
			last_seen_ms = coalesce(max(last_seen_ms, excluded.last_seen_ms), excluded.last_seen_ms)
			RETURNING id, name`)
		rows, err := tx.Statement.ConnPool.QueryContext(ctx, sql.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("record resources: %w", err)
		}
		for rows.Next() {
			var id int64
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				return nil, errors.Join(err, rows.Close())
			}
			ids[name] = id
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("record resources: %w", err)
		}
	}
	return ids, nil
}

// upsertCounts adds rows to table (metric_minutes or metric_hours) with one
// prepared statement, row by row: cheaper here than many-row VALUES lists,
// which SQLite compiles anew each time.
func upsertCounts(ctx context.Context, tx *gorm.DB, table string, rows []countRow) error {
	// SQLite's two-argument min is NULL if either is: coalesce keeps
	// whichever side has a minimum.
	stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, `INSERT INTO `+table+` (resource_id, start_ms,
			pass, block, shadow_block, complete, error, rt_sum_ms, rt_min_ms, rt_max_ms, max_concurrency)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (resource_id, start_ms) DO UPDATE SET
			pass = pass + excluded.pass,
			block = block + excluded.block,
			shadow_block = shadow_block + excluded.shadow_block,
			complete = complete + excluded.complete,
			error = error + excluded.error,
			rt_sum_ms = rt_sum_ms + excluded.rt_sum_ms,
			rt_min_ms = coalesce(min(rt_min_ms, excluded.rt_min_ms), rt_min_ms, excluded.rt_min_ms),
			rt_max_ms = max(rt_max_ms, excluded.rt_max_ms),
			max_concurrency = max(max_concurrency, excluded.max_concurrency)`)
	if err != nil {
		return fmt.Errorf("add to %s: %w", table, err)
	}
	defer stmt.Close()
	// The driver watches a cancellable context with a goroutine per
	// statement, which costs more than the insert; the transaction still
	// ends when ctx does.
	ctx = context.WithoutCancel(ctx)
	for _, r := range rows {
		c := r.counts
		if _, err := stmt.ExecContext(ctx, r.resourceID, r.startMs, c.Pass, c.Block, c.ShadowBlock,
			c.Complete, c.Error, c.RtSumMs, minRt(c), c.MaxRtMs, c.MaxConcurrency); err != nil {
			return fmt.Errorf("add to %s: %w", table, err)
		}
	}
	return nil
}

// GetMetricResource returns the resource called name, or ErrNotFound if it
// never had traffic (or all of it is past retention).
func (s *Store) GetMetricResource(ctx context.Context, name string) (MetricResource, error) {
	var r MetricResource
	err := s.db.WithContext(ctx).Where("name = ? AND first_seen_ms IS NOT NULL", name).Take(&r).Error
	return r, translate(err)
}

// MetricResources returns every resource that had traffic, by name.
func (s *Store) MetricResources(ctx context.Context) ([]MetricResource, error) {
	rs := []MetricResource{}
	err := s.db.WithContext(ctx).Where("first_seen_ms IS NOT NULL").Order("name").Find(&rs).Error
	return rs, err
}

// partColumns sums the rows of a metric table, or of partial sums, aliased
// m: the minimum is NULL if no call completed.
const partColumns = `sum(m.pass) AS pass, sum(m.block) AS block, sum(m.shadow_block) AS shadow_block,
	sum(m.complete) AS complete, sum(m.error) AS error, sum(m.rt_sum_ms) AS rt_sum_ms,
	min(m.rt_min_ms) AS rt_min_ms, max(m.rt_max_ms) AS rt_max_ms,
	max(m.max_concurrency) AS max_concurrency`

// countColumns sums a metric table's rows in SQL, in the order scanCounts
// reads them.
const countColumns = `sum(pass) AS pass, sum(block) AS block, sum(shadow_block) AS shadow_block,
	sum(complete) AS complete, sum(error) AS error, sum(rt_sum_ms) AS rt_sum_ms,
	coalesce(min(rt_min_ms), 0) AS rt_min_ms, max(rt_max_ms) AS rt_max_ms,
	max(max_concurrency) AS max_concurrency`

// ResourceMetrics returns the named resource's traffic from fromMs
// (inclusive) to toMs (exclusive) in steps of stepMs, UTC-aligned: fromMs is
// rounded down and toMs up to a multiple of the step. stepMs is a whole
// number of minutes; whole hours are read from the hourly rollup. Steps
// without traffic are absent; an unknown resource has none.
func (s *Store) ResourceMetrics(ctx context.Context, name string, fromMs, toMs, stepMs int64) ([]MetricPoint, error) {
	if stepMs <= 0 || stepMs%MinuteMs != 0 {
		return nil, fmt.Errorf("store: step of %d ms is not a whole number of minutes", stepMs)
	}
	table := "metric_minutes"
	if stepMs%HourMs == 0 {
		table = "metric_hours"
	}
	fromMs, toMs = floorTo(fromMs, stepMs), ceilTo(toMs, stepMs)
	rows, err := s.db.WithContext(ctx).Raw(`SELECT start_ms / @step * @step AS step_ms, `+countColumns+`
		FROM `+table+`
		WHERE resource_id = (SELECT id FROM resources WHERE name = @name)
		  AND start_ms >= @from AND start_ms < @to
		GROUP BY step_ms ORDER BY step_ms`,
		map[string]any{"step": stepMs, "name": name, "from": fromMs, "to": toMs}).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	points := []MetricPoint{}
	for rows.Next() {
		var p MetricPoint
		if err := scanCounts(rows, &p.StartMs, &p.Counts); err != nil {
			return nil, err
		}
		points = append(points, p)
	}
	return points, rows.Err()
}

// scanner is what scanCounts reads from.
type scanner interface {
	Scan(dest ...any) error
}

// scanCounts reads key, then countColumns.
func scanCounts(rows scanner, key any, c *engine.Counts) error {
	return rows.Scan(key, &c.Pass, &c.Block, &c.ShadowBlock, &c.Complete, &c.Error,
		&c.RtSumMs, &c.MinRtMs, &c.MaxRtMs, &c.MaxConcurrency)
}

// TopResources ranks the resources by their traffic from fromMs (inclusive,
// rounded down to the minute) to toMs (exclusive, rounded up), highest
// first, ties by name, and returns the first limit. Only resources with
// traffic in the range take part. Whole hours of the range are read from
// the hourly rollup, the minutes at either end from the minute rows.
func (s *Store) TopResources(ctx context.Context, fromMs, toMs int64, by TopBy, limit int) ([]ResourceTotals, error) {
	order, ok := topOrder[by]
	if !ok {
		return nil, fmt.Errorf("store: cannot rank by %q", by)
	}
	fromMs, toMs = floorTo(fromMs, MinuteMs), ceilTo(toMs, MinuteMs)
	type part struct {
		table    string
		from, to int64
	}
	parts := []part{{"metric_minutes", fromMs, toMs}}
	if hourFrom, hourTo := ceilTo(fromMs, HourMs), floorTo(toMs, HourMs); hourFrom < hourTo {
		parts = []part{
			{"metric_minutes", fromMs, hourFrom},
			{"metric_hours", hourFrom, hourTo},
			{"metric_minutes", hourTo, toMs},
		}
	}
	// Each part is summed per resource on its own: CROSS JOIN keeps
	// resources as the outer loop, so that a part reads a range of the
	// primary key per resource, in order, with nothing to sort. Then the
	// parts' sums are added up.
	var selects []string
	var args []any
	for _, p := range parts {
		if p.from >= p.to {
			continue
		}
		selects = append(selects, `SELECT r.id AS resource_id, `+partColumns+`
			FROM resources AS r CROSS JOIN `+p.table+` AS m
			WHERE m.resource_id = r.id AND m.start_ms >= ? AND m.start_ms < ?
			GROUP BY r.id`)
		args = append(args, p.from, p.to)
	}
	if len(selects) == 0 {
		return []ResourceTotals{}, nil
	}
	args = append(args, limit)
	rows, err := s.db.WithContext(ctx).Raw(`SELECT r.name, t.pass, t.block, t.shadow_block, t.complete, t.error,
			t.rt_sum_ms, coalesce(t.rt_min_ms, 0), t.rt_max_ms, t.max_concurrency
		FROM (SELECT resource_id, `+partColumns+` FROM (`+strings.Join(selects, " UNION ALL ")+`) AS m
			GROUP BY resource_id) AS t
		JOIN resources AS r ON r.id = t.resource_id
		ORDER BY `+order+`, r.name LIMIT ?`, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	top := []ResourceTotals{}
	for rows.Next() {
		var t ResourceTotals
		if err := scanCounts(rows, &t.Resource, &t.Counts); err != nil {
			return nil, err
		}
		top = append(top, t)
	}
	return top, rows.Err()
}

// MinuteMetrics returns the named resources' rows of the minute that starts
// at startMs, by name; resources without traffic in it are absent.
func (s *Store) MinuteMetrics(ctx context.Context, startMs int64, names []string) (map[string]engine.Counts, error) {
	out := make(map[string]engine.Counts, len(names))
	for batch := range slices.Chunk(names, namesPerQuery) {
		rows, err := s.db.WithContext(ctx).Raw(`SELECT r.name, `+countColumns+`
			FROM resources AS r CROSS JOIN metric_minutes AS m
			WHERE r.name IN ? AND m.resource_id = r.id AND m.start_ms = ?
			GROUP BY r.name`, batch, startMs).Rows()
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var c engine.Counts
			if err := scanCounts(rows, &name, &c); err != nil {
				return nil, errors.Join(err, rows.Close())
			}
			out[name] = c
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PruneMetrics deletes the minute and hour rows that start before beforeMs,
// then the resources last seen before it, in transactions of at most
// batchRows rows each, so that flushes are never held up for long; a
// resource that rules name stays, without seen times. It returns how many
// metric rows it deleted.
func (s *Store) PruneMetrics(ctx context.Context, beforeMs int64, batchRows int) (int64, error) {
	if batchRows < 1 {
		return 0, fmt.Errorf("store: batch of %d rows", batchRows)
	}
	var deleted int64
	for _, table := range []string{"metric_minutes", "metric_hours"} {
		n, err := s.pruneTable(ctx, table, beforeMs, batchRows)
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("prune %s: %w", table, err)
		}
	}
	if err := s.db.WithContext(ctx).Exec(`UPDATE resources SET first_seen_ms = NULL, last_seen_ms = NULL
		WHERE last_seen_ms < ? AND rule_count > 0`, beforeMs).Error; err != nil {
		return deleted, fmt.Errorf("prune resources: %w", err)
	}
	for {
		res := s.db.WithContext(ctx).Exec(`DELETE FROM resources WHERE id IN
			(SELECT id FROM resources WHERE last_seen_ms < ? LIMIT ?)`, beforeMs, batchRows)
		if res.Error != nil {
			return deleted, fmt.Errorf("prune resources: %w", res.Error)
		}
		if res.RowsAffected < int64(batchRows) {
			return deleted, nil
		}
	}
}

// pruneTable deletes table's rows that start before beforeMs, batchRows at
// a time, walking the resources in ID order.
func (s *Store) pruneTable(ctx context.Context, table string, beforeMs int64, batchRows int) (int64, error) {
	var deleted int64
	cursor := int64(0)
	for {
		ends, selected, err := s.oldRows(ctx, table, cursor, beforeMs, batchRows)
		if err != nil || len(ends) == 0 {
			return deleted, err
		}
		err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			for _, e := range ends {
				res := tx.Exec("DELETE FROM "+table+" WHERE resource_id = ? AND start_ms <= ?", e.resourceID, e.lastStartMs)
				if res.Error != nil {
					return res.Error
				}
				deleted += res.RowsAffected
			}
			return nil
		})
		if err != nil || selected < batchRows {
			return deleted, err
		}
		cursor = ends[len(ends)-1].resourceID
	}
}

// oldRowsEnd is where a batch of old rows ends for one resource.
type oldRowsEnd struct {
	resourceID  int64
	lastStartMs int64
}

// oldRows finds the next batchRows rows of table that start before
// beforeMs, from resource cursor on, and says where they end per resource.
func (s *Store) oldRows(ctx context.Context, table string, cursor, beforeMs int64, batchRows int) ([]oldRowsEnd, int, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT resource_id, max(start_ms), count(*) FROM (
			SELECT m.resource_id, m.start_ms
			FROM resources AS r CROSS JOIN `+table+` AS m
			WHERE r.id >= ? AND m.resource_id = r.id AND m.start_ms < ?
			ORDER BY r.id, m.start_ms LIMIT ?)
		GROUP BY resource_id ORDER BY resource_id`, cursor, beforeMs, batchRows).Rows()
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var ends []oldRowsEnd
	selected := 0
	for rows.Next() {
		var e oldRowsEnd
		var n int
		if err := rows.Scan(&e.resourceID, &e.lastStartMs, &n); err != nil {
			return nil, 0, err
		}
		ends = append(ends, e)
		selected += n
	}
	return ends, selected, rows.Err()
}

// floorTo rounds ms down to a multiple of step.
func floorTo(ms, step int64) int64 {
	r := ms % step
	if r < 0 {
		r += step
	}
	return ms - r
}

// ceilTo rounds ms up to a multiple of step.
func ceilTo(ms, step int64) int64 {
	f := floorTo(ms, step)
	if f == ms {
		return ms
	}
	return f + step
}
