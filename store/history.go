package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/engine"
)

// HistoryQuery is a resource's history as the store reads it: the steps of
// StepMs from FromMs (inclusive) to ToMs (exclusive), UTC-aligned.
type HistoryQuery struct {
	Resource string
	// Instance narrows the points to what one instance reported, by its
	// own id (an Instance's UID); "" reads the sum over the server and
	// every instance.
	Instance             string
	FromMs, ToMs, StepMs int64
}

// HistoryRows is what the store holds of a history.
type HistoryRows struct {
	// Points has one point per step with traffic, oldest first.
	Points []MetricPoint
	// CoveredMs are the starts of the steps, oldest first, in which a
	// server recorded a heartbeat (CoveredSteps): an instance's history
	// is covered by the servers' heartbeats too.
	CoveredMs []int64
	// Catalogued says that the catalogue holds the resource (it had
	// traffic within retention or a rule names it), which a history
	// without points needs to tell an idle resource from an unknown one.
	// It is read only when Points is empty: a resource with points is in
	// the catalogue.
	Catalogued bool
}

// HistoryRows reads q's points and the steps of its range a server was up in,
// as ResourceMetrics (or InstanceMetrics) and CoveredSteps answer them. An
// instance that no instance's id is, is an error wrapping ErrNotFound. The
// instance is named by its own id, as the resource by its name, and both
// are resolved here, so that a history is one read of the store.
func (s *Store) HistoryRows(ctx context.Context, q HistoryQuery) (HistoryRows, error) {
	var points []MetricPoint
	var err error
	if q.Instance != "" {
		var ids []int64
		if err := s.read.WithContext(ctx).Raw(`SELECT id FROM instances WHERE uid = ?`, q.Instance).Scan(&ids).Error; err != nil {
			return HistoryRows{}, err
		}
		if len(ids) == 0 {
			return HistoryRows{}, fmt.Errorf("no instance has id %q: %w", q.Instance, ErrNotFound)
		}
		points, err = s.InstanceMetrics(ctx, q.Resource, ids[0], q.FromMs, q.ToMs, q.StepMs)
	} else {
		points, err = s.ResourceMetrics(ctx, q.Resource, q.FromMs, q.ToMs, q.StepMs)
	}
	if err != nil {
		return HistoryRows{}, err
	}
	covered, err := s.CoveredSteps(ctx, q.FromMs, q.ToMs, q.StepMs)
	if err != nil {
		return HistoryRows{}, err
	}
	rows := HistoryRows{Points: points, CoveredMs: covered, Catalogued: len(points) > 0}
	if !rows.Catalogued {
		var n int64
		if err := s.read.WithContext(ctx).Raw(`SELECT count(*) FROM resources WHERE name = ?`, q.Resource).Scan(&n).Error; err != nil {
			return HistoryRows{}, err
		}
		rows.Catalogued = n > 0
	}
	return rows, nil
}

// MetricPoint is a resource's traffic in the step that starts at StartMs.
type MetricPoint struct {
	StartMs int64
	engine.Counts
	// BlockedBy splits Block by rule and reason, by reason then rule;
	// nil without blocks (and for an instance's own points).
	BlockedBy []engine.RuleBlocks
}

// pointFields is how many numbers ResourceMetrics reads per point: the
// step's start, then the figures in the order of countColumns.
const pointFields = 14

// pointText writes a point's numbers, from the columns of
// countColumns (a grouped step) or a table's row (a step of its span),
// separated by spaces.
const pointText = `step_ms || ' ' || pass || ' ' || block || ' ' || shadow_block || ' ' ||
	complete || ' ' || error || ' ' || rt_sum_ms || ' ' || coalesce(rt_min_ms, 0) || ' ' ||
	rt_max_ms || ' ' || max_concurrency || ' ' || busiest_second || ' ' || coalesce(adaptive_limit_min, 0) || ' ' ||
	adaptive_limit_max || ' ' || adaptive_limit_last`

// ResourceMetrics returns the named resource's traffic from fromMs
// (inclusive) to toMs (exclusive) in steps of stepMs, UTC-aligned: fromMs is
// rounded down and toMs up to a multiple of the step. stepMs is a whole
// number of minutes; each step is read from the coarsest rollup whose span
// divides it, row by row when the span is the step. Steps without traffic
// are absent; an unknown resource has none.
func (s *Store) ResourceMetrics(ctx context.Context, name string, fromMs, toMs, stepMs int64) ([]MetricPoint, error) {
	if stepMs <= 0 || stepMs%MinuteMs != 0 {
		return nil, fmt.Errorf("store: step of %d ms is not a whole number of minutes", stepMs)
	}
	table := metricTables[0]
	for _, t := range metricTables {
		if stepMs%t.spanMs == 0 {
			table = t
		}
	}
	return s.metricPoints(ctx, table, "", nil, name, fromMs, toMs, stepMs)
}

// metricPoints reads the points of the named resource from table's rows
// that filter (a condition ending in AND, or "") with filterArgs keeps,
// as ResourceMetrics answers them.
func (s *Store) metricPoints(ctx context.Context, table metricTable, filter string, filterArgs []any, name string, fromMs, toMs, stepMs int64) ([]MetricPoint, error) {
	fromMs, toMs = floorTo(fromMs, stepMs), ceilTo(toMs, stepMs)
	// Rows of the step's own span are the points: nothing to group.
	steps := `SELECT start_ms AS step_ms, pass, block, shadow_block, complete, error, rt_sum_ms,
			rt_min_ms, rt_max_ms, max_concurrency, busiest_second,
			adaptive_limit_min, adaptive_limit_max, adaptive_limit_last FROM ` + table.name + `
		WHERE ` + filter + ` resource_id = (SELECT id FROM resources WHERE name = ?)
		  AND start_ms >= ? AND start_ms < ?`
	args := append(slices.Clone(filterArgs), name, fromMs, toMs)
	if table.spanMs != stepMs {
		steps = `SELECT start_ms / ? * ? AS step_ms, ` + countColumns + ` FROM ` + table.name + `
			WHERE ` + filter + ` resource_id = (SELECT id FROM resources WHERE name = ?)
			  AND start_ms >= ? AND start_ms < ?
			GROUP BY step_ms`
		args = append([]any{stepMs, stepMs}, args...)
	}
	// The points come back as one string of numbers: the driver crosses
	// into C twice per column and row (its type, then its value), and a
	// day of minutes as rows was 29,000 such calls, most of a history's
	// time. string_agg with ORDER BY is SQLite's (3.44) and PostgreSQL's.
	var text sql.NullString
	if err := s.read.WithContext(ctx).Raw(`SELECT string_agg(`+pointText+`, ' ' ORDER BY step_ms)
		FROM (`+steps+`) AS p`, args...).Row().Scan(&text); err != nil {
		return nil, err
	}
	points, err := parsePoints(text.String)
	if err != nil {
		return nil, err
	}
	return points, s.addPointBlocks(ctx, table, name, fromMs, toMs, stepMs, points)
}

// parsePoints reads the points that ResourceMetrics writes as text.
func parsePoints(text string) ([]MetricPoint, error) {
	fields := strings.Fields(text)
	if len(fields)%pointFields != 0 {
		return nil, fmt.Errorf("store: %d numbers do not make points of %d", len(fields), pointFields)
	}
	points := make([]MetricPoint, 0, len(fields)/pointFields)
	var n [pointFields]int64
	for point := range slices.Chunk(fields, pointFields) {
		for i, f := range point {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("store: read a point: %w", err)
			}
			n[i] = v
		}
		points = append(points, MetricPoint{StartMs: n[0], Counts: engine.Counts{
			Calls:   engine.Calls{Pass: n[1], Block: n[2], ShadowBlock: n[3], Complete: n[4], Error: n[5]},
			RtSumMs: n[6], MinRtMs: n[7], MaxRtMs: n[8], MaxConcurrency: n[9], BusiestSecond: n[10],
			AdaptiveLimitMin: n[11], AdaptiveLimitMax: n[12], AdaptiveLimitLast: n[13],
		}})
	}
	return points, nil
}

// InstanceMetrics is ResourceMetrics narrowed to what one instance
// (instanceID, an Instance's ID) reported: read from its own minute rows.
func (s *Store) InstanceMetrics(ctx context.Context, name string, instanceID, fromMs, toMs, stepMs int64) ([]MetricPoint, error) {
	if stepMs <= 0 || stepMs%MinuteMs != 0 {
		return nil, fmt.Errorf("store: step of %d ms is not a whole number of minutes", stepMs)
	}
	return s.metricPoints(ctx, instanceMinutes, "instance_id = ? AND", []any{instanceID}, name, fromMs, toMs, stepMs)
}

// addPointBlocks sets the BlockedBy of points, the named resource's steps
// of stepMs from fromMs to toMs (both on the step) read from table, from
// its blocks table.
func (s *Store) addPointBlocks(ctx context.Context, table metricTable, name string, fromMs, toMs, stepMs int64, points []MetricPoint) error {
	if table.blocks == "" || len(points) == 0 {
		return nil
	}
	rows, err := s.read.WithContext(ctx).Raw(`SELECT start_ms / ? * ? AS step_ms, reason, rule, sum(blocked)
		FROM `+table.blocks+`
		WHERE resource_id = (SELECT id FROM resources WHERE name = ?) AND start_ms >= ? AND start_ms < ?
		GROUP BY step_ms, reason, rule ORDER BY step_ms, reason, rule`,
		stepMs, stepMs, name, fromMs, toMs).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var stepStartMs int64
		var b engine.RuleBlocks
		if err := rows.Scan(&stepStartMs, &b.Reason, &b.Rule, &b.Blocked); err != nil {
			return err
		}
		for i < len(points) && points[i].StartMs < stepStartMs {
			i++
		}
		if i < len(points) && points[i].StartMs == stepStartMs {
			points[i].BlockedBy = append(points[i].BlockedBy, b)
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// CoveredSteps returns, oldest first, the starts of the steps of stepMs
// (UTC-aligned) from fromMs (inclusive) to toMs (exclusive) in which a
// server recorded a heartbeat in at least one minute.
func (s *Store) CoveredSteps(ctx context.Context, fromMs, toMs, stepMs int64) ([]int64, error) {
	var starts []int64
	err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT (minute_ms / ?) * ? AS start_ms FROM metric_heartbeats
		WHERE minute_ms >= ? AND minute_ms < ? ORDER BY start_ms`, stepMs, stepMs, fromMs, toMs).Scan(&starts).Error
	if err != nil {
		return nil, fmt.Errorf("covered steps: %w", err)
	}
	return starts, nil
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
