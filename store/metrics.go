package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/sluicehq/sluice/engine"
)

// Lengths of the spans metric rows cover, in milliseconds.
const (
	MinuteMs      = int64(60_000)
	FiveMinutesMs = 5 * MinuteMs
	HourMs        = 60 * MinuteMs
	DayMs         = 24 * HourMs
)

// metricTable is a table of metric rows that each cover spanMs, UTC-aligned,
// and blocks the table of their blocks per rule and reason ("" for a table
// without).
type metricTable struct {
	name   string
	spanMs int64
	blocks string
}

// metricTables are the minute rows and the rollups that sum them, finest
// first; each span divides the next. Every flush adds to all of them in
// one transaction, so a rollup row always equals the sum of its minutes,
// the one still being written included. A read takes the coarsest rows
// that fit its range or step: a week is a few day rows per resource
// instead of 10,080 minutes.
var metricTables = []metricTable{
	{"metric_minutes", MinuteMs, "metric_minute_blocks"},
	{"metric_five_minutes", FiveMinutesMs, "metric_five_minute_blocks"},
	{"metric_hours", HourMs, "metric_hour_blocks"},
	{"metric_days", DayMs, "metric_day_blocks"},
}

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

// minLimit is the adaptive_limit_min column of c: NULL when it had no
// adaptive limit.
func minLimit(c engine.Counts) any {
	if c.AdaptiveLimitLast == 0 {
		return nil
	}
	return c.AdaptiveLimitMin
}

// limitShift makes a row's latest adaptive limit a key that the latest
// one is the greatest of, in SQL's max: adaptive_limit_at_ms × 2^20 + the
// limit (engine.MaxAdaptiveLimit < 2^20; a time in milliseconds × 2^20 is
// about 2^60), so that "latest" sums up in a GROUP BY on SQLite and
// PostgreSQL alike. lastKey is that key of the rows aliased alias, NULL
// for one without a limit; lastOf reads the limit back from the greatest.
const limitShift = "1048576"

func lastKey(alias string) string {
	return `CASE WHEN ` + alias + `adaptive_limit_last > 0 THEN ` + alias + `adaptive_limit_at_ms * ` + limitShift + ` + ` + alias + `adaptive_limit_last END`
}

func lastOf(key string) string { return `coalesce(max(` + key + `) % ` + limitShift + `, 0)` }

// MinuteDelta is what one resource did in one UTC minute since the previous
// flush.
type MinuteDelta struct {
	Resource string
	// StartMs is the minute's start in Unix milliseconds.
	StartMs int64
	engine.Counts
	// BlockedBy splits Block by the rule and reason that blocked, as
	// engine.MinuteStat does. Optional. Default: none.
	BlockedBy []engine.RuleBlocks
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

// topColumns are the columns each ranking sums to order the resources:
// the ranking reads only those, and the full figures of the winners only.
var topColumns = map[TopBy][]string{
	TopByPass:  {"pass"},
	TopByBlock: {"block"},
	TopByError: {"error"},
	TopByAvgRt: {"complete", "rt_sum_ms"},
}

// topOrder is the ORDER BY of each ranking over topColumns' sums; the name
// breaks ties.
var topOrder = map[TopBy]string{
	TopByPass:  "t.pass DESC",
	TopByBlock: "t.block DESC",
	TopByError: "t.error DESC",
	TopByAvgRt: "CASE WHEN t.complete > 0 THEN CAST(t.rt_sum_ms AS REAL) / t.complete END DESC NULLS LAST",
}

// addMetricsChunk is how many deltas AddFlush prepares at a time, within
// its one transaction: a flush of 100,000 resources then never holds all
// its rows at once.
const addMetricsChunk = 5000

// Flush is what one flush of the metrics pipeline writes.
type Flush struct {
	// Deltas add to the minute rows, as AddMetrics adds them.
	Deltas []MinuteDelta
	// HeartbeatsMs are the minutes a server was up in, as AddHeartbeats
	// records them.
	HeartbeatsMs []int64
}

// AddFlush writes f in one transaction: a flush costs one commit, and one
// that fails writes nothing, so that no reader takes its minutes for idle
// ones (a heartbeat without rows) while they wait for the next flush.
func (s *Store) AddFlush(ctx context.Context, f Flush) error {
	if len(f.Deltas) == 0 && len(f.HeartbeatsMs) == 0 {
		return nil
	}
	// Its statements go straight to the connection, past the callbacks
	// that refuse writes to a gone file.
	if err := s.b.fileGone(); err != nil {
		return err
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for chunk := range slices.Chunk(f.Deltas, addMetricsChunk) {
			if err := addMetricsIn(ctx, tx, chunk); err != nil {
				return err
			}
		}
		return addHeartbeatsIn(tx, f.HeartbeatsMs)
	})
}

// AddMetrics adds deltas to the minute rows, to the rollups of
// metricTables, and to the resources' first and last seen times, in one
// transaction:
// counts add, the minimum and maxima merge, so a minute flushed in several
// parts, or again after a restart, adds up and is never overwritten.
func (s *Store) AddMetrics(ctx context.Context, deltas []MinuteDelta) error {
	return s.AddFlush(ctx, Flush{Deltas: deltas})
}

// addMetricsIn adds deltas within tx. A resource's deltas split over two
// calls add up as they would in one.
func addMetricsIn(ctx context.Context, tx *gorm.DB, deltas []MinuteDelta) error {
	seen := map[string]*MetricResource{}
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
	}
	ids, err := upsertResources(ctx, tx, seen)
	if err != nil {
		return err
	}
	minuteRows := make([]countRow, len(deltas))
	for i, d := range deltas {
		minuteRows[i] = countRow{resourceID: ids[d.Resource], startMs: d.StartMs, counts: d.Counts, blocks: d.BlockedBy}
	}
	return addMinuteRows(ctx, tx, minuteRows)
}

// addMinuteRows adds minute rows, and their blocks per rule, to the
// minute table and every rollup of metricTables within tx.
func addMinuteRows(ctx context.Context, tx *gorm.DB, minuteRows []countRow) error {
	for i, t := range metricTables {
		rows := minuteRows
		if i > 0 {
			rows = rollUp(minuteRows, t.spanMs)
		}
		if err := upsertCounts(ctx, tx, t.name, rows); err != nil {
			return err
		}
		if err := upsertBlocks(ctx, tx, t.blocks, rows); err != nil {
			return err
		}
	}
	return nil
}

// rollUp merges rows into one per resource and span of spanMs, in the
// order each first appears.
func rollUp(rows []countRow, spanMs int64) []countRow {
	type key struct{ resourceID, startMs int64 }
	at := make(map[key]int, len(rows))
	out := make([]countRow, 0, len(rows))
	for _, r := range rows {
		k := key{r.resourceID, floorTo(r.startMs, spanMs)}
		if i, ok := at[k]; ok {
			// Merge takes r's adaptive limit as the latest, which it is
			// only if its minute is not before the one kept.
			kept, keptMs := out[i].counts.AdaptiveLimitLast, out[i].latestLimitMs
			out[i].counts.Merge(r.counts)
			out[i].blocks = engine.MergeBlocks(out[i].blocks, r.blocks)
			if ms := r.limitAtMs(); ms < keptMs {
				out[i].counts.AdaptiveLimitLast = kept
			} else if ms != 0 {
				out[i].latestLimitMs = ms
			}
			continue
		}
		at[k] = len(out)
		out = append(out, countRow{resourceID: k.resourceID, startMs: k.startMs, counts: r.counts, latestLimitMs: r.limitAtMs(),
			blocks: engine.MergeBlocks(nil, r.blocks)})
	}
	return out
}

type countRow struct {
	resourceID int64
	startMs    int64
	counts     engine.Counts
	// blocks splits counts.Block by rule and reason.
	blocks []engine.RuleBlocks
	// latestLimitMs is the start of the minute whose adaptive limit is
	// the row's latest, for a rollup row; 0 for a minute row.
	latestLimitMs int64
}

// limitAtMs is the row's adaptive_limit_at_ms: the start of the minute
// its latest adaptive limit is of, 0 without one.
func (r countRow) limitAtMs() int64 {
	switch {
	case r.counts.AdaptiveLimitLast == 0:
		return 0
	case r.latestLimitMs != 0:
		return r.latestLimitMs
	}
	return r.startMs
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
			first_seen_ms = coalesce(` + least(tx) + `(resources.first_seen_ms, excluded.first_seen_ms), excluded.first_seen_ms),
			last_seen_ms = coalesce(` + greatest(tx) + `(resources.last_seen_ms, excluded.last_seen_ms), excluded.last_seen_ms)
			RETURNING id, name`)
		rows, err := tx.Statement.ConnPool.QueryContext(ctx, bind(tx, sql.String()), args...)
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

// addCounts is the SET list of an upsert, into a metric table aliased m,
// that adds the excluded row's counts to the stored row's. SQLite's
// two-argument min is NULL if either is: coalesce keeps whichever side has
// a minimum. The latest adaptive limit is the excluded row's if it has one
// of the same minute or a later one: of a minute, deltas come in time
// order.
func addCounts(tx *gorm.DB) string {
	least, greatest := least(tx), greatest(tx)
	return `pass = m.pass + excluded.pass,
			block = m.block + excluded.block,
			shadow_block = m.shadow_block + excluded.shadow_block,
			complete = m.complete + excluded.complete,
			error = m.error + excluded.error,
			rt_sum_ms = m.rt_sum_ms + excluded.rt_sum_ms,
			rt_min_ms = coalesce(` + least + `(m.rt_min_ms, excluded.rt_min_ms), m.rt_min_ms, excluded.rt_min_ms),
			rt_max_ms = ` + greatest + `(m.rt_max_ms, excluded.rt_max_ms),
			max_concurrency = ` + greatest + `(m.max_concurrency, excluded.max_concurrency),
			busiest_second = ` + greatest + `(m.busiest_second, excluded.busiest_second),
			adaptive_limit_min = coalesce(` + least + `(m.adaptive_limit_min, excluded.adaptive_limit_min), m.adaptive_limit_min, excluded.adaptive_limit_min),
			adaptive_limit_max = ` + greatest + `(m.adaptive_limit_max, excluded.adaptive_limit_max),
			adaptive_limit_last = CASE WHEN excluded.adaptive_limit_last > 0 AND excluded.adaptive_limit_at_ms >= m.adaptive_limit_at_ms
				THEN excluded.adaptive_limit_last ELSE m.adaptive_limit_last END,
			adaptive_limit_at_ms = ` + greatest + `(m.adaptive_limit_at_ms, excluded.adaptive_limit_at_ms)`
}

// upsertCounts adds rows to table (one of metricTables). On SQLite it
// runs one prepared statement row by row: cheaper there than many-row
// VALUES lists, which SQLite compiles anew each time. On PostgreSQL,
// where every statement is a round trip, rows of distinct keys go as
// many-row VALUES lists (a key twice in one list is an error there, so
// rows that repeat one go row by row).
func upsertCounts(ctx context.Context, tx *gorm.DB, table string, rows []countRow) error {
	insert := `INSERT INTO ` + table + ` AS m (resource_id, start_ms,
			pass, block, shadow_block, complete, error, rt_sum_ms, rt_min_ms, rt_max_ms, max_concurrency, busiest_second,
			adaptive_limit_min, adaptive_limit_max, adaptive_limit_last, adaptive_limit_at_ms)
		VALUES `
	conflict := ` ON CONFLICT (resource_id, start_ms) DO UPDATE SET ` + addCounts(tx)
	type key struct{ resourceID, startMs int64 }
	many := onPostgres(tx) && distinct(rows, func(r countRow) key { return key{r.resourceID, r.startMs} })
	return upsertRows(ctx, tx, table, insert, conflict, countWidth, many, func(yield func(...any) bool) {
		for _, r := range rows {
			c := r.counts
			if !yield(r.resourceID, r.startMs, c.Pass, c.Block, c.ShadowBlock,
				c.Complete, c.Error, c.RtSumMs, minRt(c), c.MaxRtMs, c.MaxConcurrency, c.BusiestSecond,
				minLimit(c), c.AdaptiveLimitMax, c.AdaptiveLimitLast, r.limitAtMs()) {
				return
			}
		}
	})
}

// countWidth is how many columns upsertCounts writes a row.
const countWidth = 16

// upsertBlocks adds the blocks of rows to table, a metric table's blocks
// table, within tx, as upsertCounts adds the counts.
func upsertBlocks(ctx context.Context, tx *gorm.DB, table string, rows []countRow) error {
	type key struct {
		resourceID, startMs int64
		reason              engine.BlockReason
		rule                string
	}
	if !slices.ContainsFunc(rows, func(r countRow) bool { return len(r.blocks) > 0 }) {
		return nil
	}
	insert := `INSERT INTO ` + table + ` AS m (resource_id, start_ms, reason, rule, blocked) VALUES `
	conflict := ` ON CONFLICT (resource_id, start_ms, reason, rule) DO UPDATE SET blocked = m.blocked + excluded.blocked`
	many := false
	if onPostgres(tx) {
		var keys []key
		for _, r := range rows {
			for _, b := range r.blocks {
				if b.Blocked != 0 {
					keys = append(keys, key{r.resourceID, r.startMs, b.Reason, b.Rule})
				}
			}
		}
		many = distinct(keys, func(k key) key { return k })
	}
	return upsertRows(ctx, tx, table, insert, conflict, 5, many, func(yield func(...any) bool) {
		for _, r := range rows {
			for _, b := range r.blocks {
				if b.Blocked != 0 && !yield(r.resourceID, r.startMs, string(b.Reason), b.Rule, b.Blocked) {
					return
				}
			}
		}
	})
}

// rowsPerStatement bounds a many-row VALUES list: 16,000 parameters at
// most, far below PostgreSQL's 65,535.
const rowsPerStatement = 1000

// upsertRows runs insert, a list of VALUES, conflict for each of the rows
// of width columns that rows yields, into table, within tx: as many-row
// lists of up to rowsPerStatement rows if many, else with one prepared
// statement, row by row.
func upsertRows(ctx context.Context, tx *gorm.DB, table, insert, conflict string, width int, many bool, rows func(yield func(...any) bool)) error {
	row := "(" + strings.Repeat("?, ", width-1) + "?)"
	// The driver watches a cancellable context with a goroutine per
	// statement, which costs more than the insert; the transaction still
	// ends when ctx does.
	ctx = context.WithoutCancel(ctx)
	if many {
		var args []any
		n := 0
		flush := func() error {
			if n == 0 {
				return nil
			}
			query := insert + strings.Repeat(row+", ", n-1) + row + conflict
			if _, err := tx.Statement.ConnPool.ExecContext(ctx, bind(tx, query), args...); err != nil {
				return fmt.Errorf("add to %s: %w", table, err)
			}
			args, n = args[:0], 0
			return nil
		}
		var err error
		rows(func(values ...any) bool {
			args = append(args, values...)
			if n++; n == rowsPerStatement {
				err = flush()
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		return flush()
	}
	stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, bind(tx, insert+row+conflict))
	if err != nil {
		return fmt.Errorf("add to %s: %w", table, err)
	}
	defer stmt.Close()
	rows(func(values ...any) bool {
		_, err = stmt.ExecContext(ctx, values...)
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("add to %s: %w", table, err)
	}
	return nil
}

// distinct reports whether no two of items have the same key.
func distinct[T any, K comparable](items []T, key func(T) K) bool {
	seen := make(map[K]struct{}, len(items))
	for _, it := range items {
		k := key(it)
		if _, dup := seen[k]; dup {
			return false
		}
		seen[k] = struct{}{}
	}
	return true
}

// GetMetricResource returns the resource called name, or ErrNotFound if it
// never had traffic (or all of it is past retention).
func (s *Store) GetMetricResource(ctx context.Context, name string) (MetricResource, error) {
	var r MetricResource
	err := s.read.WithContext(ctx).Where("name = ? AND first_seen_ms IS NOT NULL", name).Take(&r).Error
	return r, translate(err)
}

// MetricResources returns every resource that had traffic, by name.
func (s *Store) MetricResources(ctx context.Context) ([]MetricResource, error) {
	rs := []MetricResource{}
	err := s.read.WithContext(ctx).Where("first_seen_ms IS NOT NULL").Order("name").Find(&rs).Error
	return rs, err
}

// partColumns sums the rows of a metric table aliased m into a part of
// a range, which partSumColumns sums: the minima are NULL if none was
// seen, and the latest adaptive limit is kept as its key (lastKey).
var partColumns = `sum(m.pass) AS pass, sum(m.block) AS block, sum(m.shadow_block) AS shadow_block,
	sum(m.complete) AS complete, sum(m.error) AS error, sum(m.rt_sum_ms) AS rt_sum_ms,
	min(m.rt_min_ms) AS rt_min_ms, max(m.rt_max_ms) AS rt_max_ms,
	max(m.max_concurrency) AS max_concurrency, max(m.busiest_second) AS busiest_second,
	min(m.adaptive_limit_min) AS adaptive_limit_min, max(m.adaptive_limit_max) AS adaptive_limit_max,
	max(` + lastKey("m.") + `) AS adaptive_limit_key`

// sumColumns sums what rows and parts alike hold, in the order scanCounts
// reads them, up to the latest adaptive limit.
const sumColumns = `sum(pass) AS pass, sum(block) AS block, sum(shadow_block) AS shadow_block,
	sum(complete) AS complete, sum(error) AS error, sum(rt_sum_ms) AS rt_sum_ms,
	coalesce(min(rt_min_ms), 0) AS rt_min_ms, max(rt_max_ms) AS rt_max_ms,
	max(max_concurrency) AS max_concurrency, max(busiest_second) AS busiest_second,
	coalesce(min(adaptive_limit_min), 0) AS adaptive_limit_min, max(adaptive_limit_max) AS adaptive_limit_max`

// rowColumns are the columns of a metric table's rows that countColumns
// sums.
const rowColumns = `pass, block, shadow_block, complete, error, rt_sum_ms, rt_min_ms, rt_max_ms,
	max_concurrency, busiest_second, adaptive_limit_min, adaptive_limit_max, adaptive_limit_last, adaptive_limit_at_ms`

// countColumns sums a metric table's rows in SQL, in the order scanCounts
// reads them; partSumColumns sums the parts partColumns made.
var (
	countColumns   = sumColumns + `, ` + lastOf(lastKey("")) + ` AS adaptive_limit_last`
	partSumColumns = sumColumns + `, ` + lastOf("adaptive_limit_key") + ` AS adaptive_limit_last`
)

// scanner is what scanCounts reads from.
type scanner interface {
	Scan(dest ...any) error
}

// scanCounts reads key, then countColumns.
func scanCounts(rows scanner, key any, c *engine.Counts) error {
	return rows.Scan(key, &c.Pass, &c.Block, &c.ShadowBlock, &c.Complete, &c.Error,
		&c.RtSumMs, &c.MinRtMs, &c.MaxRtMs, &c.MaxConcurrency, &c.BusiestSecond,
		&c.AdaptiveLimitMin, &c.AdaptiveLimitMax, &c.AdaptiveLimitLast)
}

// rangePart is the rows of one metric table that start in [fromMs, toMs).
type rangePart struct {
	table        string
	fromMs, toMs int64
}

// rangeParts splits [fromMs, toMs), whole minutes, into the fewest rows of
// tables (finest first) that sum to it: the coarsest table's whole spans
// in the middle, then the same for what is left at either end with the
// finer ones. A week ending mid-hour reads six days, 23 hours and at most
// 11 five-minute and 4 minute rows at each end per resource.
func rangeParts(fromMs, toMs int64, tables []metricTable) []rangePart {
	for i := len(tables) - 1; i >= 0 && fromMs < toMs; i-- {
		lo, hi := ceilTo(fromMs, tables[i].spanMs), floorTo(toMs, tables[i].spanMs)
		if lo < hi {
			parts := rangeParts(fromMs, lo, tables[:i])
			parts = append(parts, rangePart{tables[i].name, lo, hi})
			return append(parts, rangeParts(hi, toMs, tables[:i])...)
		}
	}
	return nil
}

// perResource is a query over parts, each summed per resource with
// columns (over m, the part's rows), of the resources that filter (over r)
// keeps, and its arguments: a UNION ALL whose rows the caller sums again.
// CROSS JOIN keeps resources as the outer loop, so that a part reads a
// range of the primary key per resource, in order, with nothing to sort.
func perResource(parts []rangePart, columns, filter string, filterArgs []any) (string, []any) {
	selects := make([]string, len(parts))
	var args []any
	for i, p := range parts {
		selects[i] = `SELECT r.id AS resource_id, ` + columns + `
			FROM resources AS r CROSS JOIN ` + p.table + ` AS m
			WHERE ` + filter + ` m.resource_id = r.id AND m.start_ms >= ? AND m.start_ms < ?
			GROUP BY r.id`
		args = append(append(args, filterArgs...), p.fromMs, p.toMs)
	}
	return strings.Join(selects, " UNION ALL "), args
}

// byStart is perResource for PostgreSQL's rankings: each part's rows of
// columns that filter (a condition over m ending in AND, or "") keeps,
// read from the table's index by start (00017), which covers them, and
// summed per resource once, by the caller. Every resource's rows of a
// part are one index-only range scan; joining the resources to each
// part and summing each part on its own, as SQLite's plan needs, made
// PostgreSQL plan and run four aggregates and three joins where one
// aggregate does (docs/performance.md, "PostgreSQL rankings").
func byStart(parts []rangePart, columns []string, filter string) (string, []any) {
	selects := make([]string, len(parts))
	var args []any
	for i, p := range parts {
		selects[i] = `SELECT m.resource_id, m.` + strings.Join(columns, ", m.") + `
			FROM ` + p.table + ` AS m WHERE ` + filter + ` m.start_ms >= ? AND m.start_ms < ?`
		args = append(args, p.fromMs, p.toMs)
	}
	return strings.Join(selects, " UNION ALL "), args
}

// ofResource is the rows of parts of the resource whose ID is id (a
// column of an outer query), with the columns countColumns sums: a range
// of each part's primary key.
func ofResource(parts []rangePart, id string) (string, []any) {
	selects := make([]string, len(parts))
	var args []any
	for i, p := range parts {
		selects[i] = `SELECT ` + rowColumns + ` FROM ` + p.table + `
			WHERE resource_id = ` + id + ` AND start_ms >= ? AND start_ms < ?`
		args = append(args, p.fromMs, p.toMs)
	}
	return strings.Join(selects, " UNION ALL "), args
}

// TopResources ranks the resources by their traffic from fromMs (inclusive,
// rounded down to the minute) to toMs (exclusive, rounded up), highest
// first, ties by name, and returns the first limit. Only resources with
// traffic in the range take part. The range is read from the coarsest
// rows that fit it (rangeParts); the ranking sums only the columns it
// orders by, and the full figures are summed for the first limit only.
func (s *Store) TopResources(ctx context.Context, fromMs, toMs int64, by TopBy, limit int) ([]ResourceTotals, error) {
	order, ok := topOrder[by]
	if !ok {
		return nil, fmt.Errorf("store: cannot rank by %q", by)
	}
	parts := rangeParts(floorTo(fromMs, MinuteMs), ceilTo(toMs, MinuteMs), metricTables)
	if len(parts) == 0 {
		return []ResourceTotals{}, nil
	}
	if onPostgres(s.read) {
		return s.topOnPostgres(ctx, parts, by, limit)
	}
	var partSums, sums []string
	for _, c := range topColumns[by] {
		partSums = append(partSums, "sum(m."+c+") AS "+c)
		sums = append(sums, "sum(p."+c+") AS "+c)
	}
	union, args := perResource(parts, strings.Join(partSums, ", "), "", nil)
	rows, err := s.read.WithContext(ctx).Raw(`SELECT r.id, r.name
		FROM (SELECT resource_id, `+strings.Join(sums, ", ")+` FROM (`+union+`) AS p
			GROUP BY resource_id) AS t
		JOIN resources AS r ON r.id = t.resource_id
		ORDER BY `+order+`, r.name LIMIT ?`, append(args, limit)...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	top := []ResourceTotals{}
	for rows.Next() {
		var id int64
		var t ResourceTotals
		if err := rows.Scan(&id, &t.Resource); err != nil {
			return nil, err
		}
		ids = append(ids, id)
		top = append(top, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(ids) == 0 {
		return top, err
	}
	totals, err := s.partTotals(ctx, parts, ids)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		top[i].Counts = totals[id]
	}
	return top, nil
}

// topOnPostgres is TopResources on PostgreSQL, in one statement: the
// ranking, read by start (byStart), and the full figures of its first
// limit, each summed over its own rows of the parts (ofResource). As a
// second query, by the winners' IDs, the figures took a planning and a
// round trip more, about a fifth of the 1-hour ranking's time in the
// database (docs/performance.md, "PostgreSQL rankings").
//
// A ranking by a count sums only the rows where it is not 0: blocks and
// errors are rare, and the rows without any were most of what the
// ranking summed, and their resources most of what it named and sorted.
// Counts are never negative, so the resources it leaves out, whose sum
// is 0, come after all the others, by name: fillByName adds them to a
// ranking short of limit.
func (s *Store) topOnPostgres(ctx context.Context, parts []rangePart, by TopBy, limit int) ([]ResourceTotals, error) {
	var sums []string
	for _, c := range topColumns[by] {
		sums = append(sums, "sum(p."+c+") AS "+c)
	}
	filter := ""
	if by != TopByAvgRt {
		filter = "m." + topColumns[by][0] + " > 0 AND"
	}
	union, args := byStart(parts, topColumns[by], filter)
	rowsOf, rowsArgs := ofResource(parts, "top.id")
	// The limit is written into the statement, a number, rather than
	// bound: bound, it left PostgreSQL's generic plan to guess for how
	// many winners the figures are summed, which priced that plan above
	// a custom one, so every 24-hour ranking was planned anew. The
	// figures are ordered as the ranking was: their sums of the ranked
	// columns are the ranking's, over the same rows.
	top, err := s.totals(ctx, `WITH top AS (SELECT r.id, r.name
			FROM (SELECT resource_id, `+strings.Join(sums, ", ")+` FROM (`+union+`) AS p
				GROUP BY resource_id) AS t
			JOIN resources AS r ON r.id = t.resource_id
			ORDER BY `+topOrder[by]+`, r.name LIMIT `+strconv.Itoa(limit)+`)
		SELECT top.name, t.* FROM top CROSS JOIN LATERAL (SELECT `+countColumns+` FROM (`+rowsOf+`) AS m) AS t
		ORDER BY `+topOrder[by]+`, top.name`, append(args, rowsArgs...))
	if err != nil || filter == "" || len(top) == limit {
		return top, err
	}
	return s.fillByName(ctx, parts, top, limit)
}

// fillByName appends to top, a ranking by a count short of limit, the
// resources with rows in parts that it left out, by name, up to limit:
// their sum of the count is 0.
func (s *Store) fillByName(ctx context.Context, parts []rangePart, top []ResourceTotals, limit int) ([]ResourceTotals, error) {
	ofR, ofRArgs := ofResource(parts, "r.id")
	rowsOf, rowsArgs := ofResource(parts, "top.id")
	// The first limit by name hold at least the limit - len(top) that top
	// does not.
	named, err := s.totals(ctx, `SELECT top.name, t.* FROM (SELECT r.id, r.name FROM resources AS r
			WHERE EXISTS (`+ofR+`) ORDER BY r.name LIMIT `+strconv.Itoa(limit)+`) AS top
		CROSS JOIN LATERAL (SELECT `+countColumns+` FROM (`+rowsOf+`) AS m) AS t
		ORDER BY top.name`, append(ofRArgs, rowsArgs...))
	if err != nil {
		return nil, err
	}
	ranked := make(map[string]bool, len(top))
	for _, t := range top {
		ranked[t.Resource] = true
	}
	for _, t := range named {
		if len(top) == limit {
			break
		}
		if !ranked[t.Resource] {
			top = append(top, t)
		}
	}
	return top, nil
}

// totals runs query, whose rows are a resource's name then countColumns.
func (s *Store) totals(ctx context.Context, query string, args []any) ([]ResourceTotals, error) {
	rows, err := s.read.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ResourceTotals{}
	for rows.Next() {
		var t ResourceTotals
		if err := scanCounts(rows, &t.Resource, &t.Counts); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// partTotals sums every figure of the resources ids over parts, by
// resource ID.
func (s *Store) partTotals(ctx context.Context, parts []rangePart, ids []int64) (map[int64]engine.Counts, error) {
	union, args := perResource(parts, partColumns, "r.id IN ? AND", []any{ids})
	rows, err := s.read.WithContext(ctx).Raw(`SELECT resource_id, `+partSumColumns+` FROM (`+union+`) AS m
		GROUP BY resource_id`, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	totals := make(map[int64]engine.Counts, len(ids))
	for rows.Next() {
		var id int64
		var c engine.Counts
		if err := scanCounts(rows, &id, &c); err != nil {
			return nil, err
		}
		totals[id] = c
	}
	return totals, rows.Err()
}

// MinuteMetrics returns the named resources' rows of the minute that starts
// at startMs, by name; resources without traffic in it are absent.
func (s *Store) MinuteMetrics(ctx context.Context, startMs int64, names []string) (map[string]engine.Counts, error) {
	out := make(map[string]engine.Counts, len(names))
	for batch := range slices.Chunk(names, namesPerQuery) {
		rows, err := s.read.WithContext(ctx).Raw(`SELECT r.name, `+countColumns+`
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

// MinuteBlocks returns the named resources' blocks per rule and reason in
// the minute that starts at startMs, by name, each by reason then rule;
// resources without blocks in it are absent.
func (s *Store) MinuteBlocks(ctx context.Context, startMs int64, names []string) (map[string][]engine.RuleBlocks, error) {
	out := map[string][]engine.RuleBlocks{}
	for batch := range slices.Chunk(names, namesPerQuery) {
		rows, err := s.read.WithContext(ctx).Raw(`SELECT r.name, m.reason, m.rule, m.blocked
			FROM resources AS r CROSS JOIN metric_minute_blocks AS m
			WHERE r.name IN ? AND m.resource_id = r.id AND m.start_ms = ?
			ORDER BY r.name, m.reason, m.rule`, batch, startMs).Rows()
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var b engine.RuleBlocks
			if err := rows.Scan(&name, &b.Reason, &b.Rule, &b.Blocked); err != nil {
				return nil, errors.Join(err, rows.Close())
			}
			out[name] = append(out[name], b)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PruneMetrics deletes the metric rows that start before beforeMs (the
// instances' own minute rows and folded minutes included), then the instances and the
// resources last seen before it, in transactions of at most batchRows
// rows each, so that flushes are never held up for long; a resource that
// rules name stays, without seen times. A rollup row whose span holds
// beforeMs keeps the sum of what is left of it, so that every step and
// every range agree on what is kept: callers cut at a whole hour, which
// leaves only the day rows to sum again. It returns how many metric rows
// it deleted.
func (s *Store) PruneMetrics(ctx context.Context, beforeMs int64, batchRows int) (int64, error) {
	if batchRows < 1 {
		return 0, fmt.Errorf("store: batch of %d rows", batchRows)
	}
	var deleted int64
	for i, t := range metricTables {
		cutMs := beforeMs
		if i > 0 {
			cutMs = floorTo(beforeMs, t.spanMs)
		}
		n, err := s.pruneTable(ctx, t.name, cutMs, batchRows)
		deleted += n
		if err == nil {
			n, err = s.pruneTable(ctx, t.blocks, cutMs, batchRows)
			deleted += n
		}
		if err == nil && cutMs < beforeMs {
			n, err = s.sumAgain(ctx, metricTables[i-1].name, t, cutMs, batchRows)
			deleted += n
		}
		if err == nil && cutMs < beforeMs {
			err = s.sumBlocksAgain(ctx, metricTables[i-1].blocks, t, cutMs)
		}
		if err != nil {
			return deleted, fmt.Errorf("prune %s: %w", t.name, err)
		}
	}
	n, err := s.pruneTable(ctx, instanceMinutes.name, beforeMs, batchRows)
	deleted += n
	if err != nil {
		return deleted, fmt.Errorf("prune %s: %w", instanceMinutes.name, err)
	}
	if _, err := s.deleteInBatches(ctx, "instance_folds", `DELETE FROM instance_folds WHERE (start_ms, instance_id, name_hash) IN
		(SELECT start_ms, instance_id, name_hash FROM instance_folds WHERE start_ms < ? LIMIT ?)`, batchRows, beforeMs); err != nil {
		return deleted, err
	}
	if err := s.db.WithContext(ctx).Where("last_seen_ms < ?", beforeMs).Delete(&Instance{}).Error; err != nil {
		return deleted, fmt.Errorf("prune instances: %w", err)
	}
	if err := s.db.WithContext(ctx).Exec(`UPDATE resources SET first_seen_ms = NULL, last_seen_ms = NULL
		WHERE last_seen_ms < ? AND rule_count > 0`, beforeMs).Error; err != nil {
		return deleted, fmt.Errorf("prune resources: %w", err)
	}
	_, err = s.deleteInBatches(ctx, "resources", `DELETE FROM resources WHERE id IN
		(SELECT id FROM resources WHERE last_seen_ms < ? LIMIT ?)`, batchRows, beforeMs)
	return deleted, err
}

// deleteInBatches runs query, a DELETE from table of at most batchRows
// rows (its last placeholder, the LIMIT, after those of args), until a
// run deletes fewer, so that no transaction holds the writer long; it
// returns how many rows it deleted.
func (s *Store) deleteInBatches(ctx context.Context, table, query string, batchRows int, args ...any) (int64, error) {
	args = append(args, batchRows)
	var deleted int64
	for {
		res := s.db.WithContext(ctx).Exec(query, args...)
		deleted += res.RowsAffected
		if res.Error != nil {
			return deleted, fmt.Errorf("prune %s: %w", table, res.Error)
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

// sumAgain sets the rows of rollup that start at startMs to the sum of
// the rows of finer within their span, batchRows resources at a time, and
// deletes those that have none left. It returns how many it deleted.
func (s *Store) sumAgain(ctx context.Context, finer string, rollup metricTable, startMs int64, batchRows int) (int64, error) {
	endMs := startMs + rollup.spanMs
	var deleted int64
	cursor := int64(0)
	for {
		var ids []int64
		if err := s.db.WithContext(ctx).Raw(`SELECT m.resource_id FROM resources AS r CROSS JOIN `+rollup.name+` AS m
			WHERE r.id > ? AND m.resource_id = r.id AND m.start_ms = ?
			ORDER BY r.id LIMIT ?`, cursor, startMs, batchRows).Scan(&ids).Error; err != nil || len(ids) == 0 {
			return deleted, err
		}
		// The finer rows of the span, correlated to the rollup row being
		// written: PostgreSQL reads the outer table by its name as SQLite does.
		finerRows := `FROM ` + finer + ` AS f WHERE f.resource_id = ` + rollup.name + `.resource_id
			AND f.start_ms >= ? AND f.start_ms < ?`
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			res := tx.Exec(`DELETE FROM `+rollup.name+` WHERE start_ms = ? AND resource_id IN ?
				AND NOT EXISTS (SELECT 1 `+finerRows+`)`, startMs, ids, startMs, endMs)
			if res.Error != nil {
				return res.Error
			}
			deleted += res.RowsAffected
			return tx.Exec(`UPDATE `+rollup.name+` SET (pass, block, shadow_block, complete, error,
					rt_sum_ms, rt_min_ms, rt_max_ms, max_concurrency, busiest_second,
					adaptive_limit_min, adaptive_limit_max, adaptive_limit_last, adaptive_limit_at_ms) =
				(SELECT sum(f.pass), sum(f.block), sum(f.shadow_block), sum(f.complete), sum(f.error),
					sum(f.rt_sum_ms), min(f.rt_min_ms), max(f.rt_max_ms), max(f.max_concurrency), max(f.busiest_second),
					min(f.adaptive_limit_min), coalesce(max(f.adaptive_limit_max), 0), `+lastOf(lastKey("f."))+`,
					coalesce(max(f.adaptive_limit_at_ms), 0) `+finerRows+`)
				WHERE start_ms = ? AND resource_id IN ?`, startMs, endMs, startMs, ids).Error
		})
		if err != nil || len(ids) < batchRows {
			return deleted, err
		}
		cursor = ids[len(ids)-1]
	}
}

// sumBlocksAgain sets the blocks rows of rollup that start at startMs to
// the sum of finer's blocks rows within their span, in one transaction,
// as sumAgain does for the counts.
func (s *Store) sumBlocksAgain(ctx context.Context, finer string, rollup metricTable, startMs int64) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM `+rollup.blocks+` WHERE start_ms = ?`, startMs).Error; err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO `+rollup.blocks+` (resource_id, start_ms, reason, rule, blocked)
			SELECT resource_id, ?, reason, rule, sum(blocked) FROM `+finer+`
			WHERE start_ms >= ? AND start_ms < ?
			GROUP BY resource_id, reason, rule`, startMs, startMs, startMs+rollup.spanMs).Error
	})
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
			ORDER BY r.id, m.start_ms LIMIT ?) AS old
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
