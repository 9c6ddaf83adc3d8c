package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EngineMinute is one minute of a resource's traffic as the engines that
// decide on it saw it: what an impact estimate reads.
type EngineMinute struct {
	StartMs int64
	// Calls are the calls that came, passed or blocked.
	Calls int64
	// BusiestSecond is the most calls one engine saw in one second of the
	// minute (0 in rows written before it was kept).
	BusiestSecond int64
	// MaxConcurrency is the most calls one engine had in flight at once.
	MaxConcurrency int64
	// Engines is how many engines saw calls: the instances that reported
	// the minute, and one for the servers' own engines if the minute holds
	// calls no instance reported.
	Engines int64
}

// engineMinuteFields is how many numbers EngineMinutes reads per minute.
const engineMinuteFields = 5

// EngineMinutes returns the named resource's minutes with traffic from
// fromMs (inclusive) to toMs (exclusive), oldest first: for app "" every
// engine's calls, else only those of the app's instances (the only
// engines a rule of that app runs on). An unknown resource has none.
func (s *Store) EngineMinutes(ctx context.Context, name, app string, fromMs, toMs int64) ([]EngineMinute, error) {
	fromMs, toMs = floorTo(fromMs, MinuteMs), ceilTo(toMs, MinuteMs)
	// The instances' rows of a minute are found by the primary key's
	// prefix (resource_id, start_ms), the app by the instance's key.
	minutes := `SELECT m.start_ms, m.pass + m.block AS calls, m.busiest_second, m.max_concurrency,
			count(i.instance_id) + CASE WHEN m.pass + m.block > coalesce(sum(i.pass + i.block), 0) THEN 1 ELSE 0 END AS engines
		FROM metric_minutes AS m LEFT JOIN instance_minutes AS i
			ON i.resource_id = m.resource_id AND i.start_ms = m.start_ms
		WHERE m.resource_id = (SELECT id FROM resources WHERE name = ?) AND m.start_ms >= ? AND m.start_ms < ?
		GROUP BY m.start_ms, m.pass, m.block, m.busiest_second, m.max_concurrency`
	args := []any{name, fromMs, toMs}
	if app != "" {
		minutes = `SELECT i.start_ms, sum(i.pass + i.block) AS calls, max(i.busiest_second) AS busiest_second,
				max(i.max_concurrency) AS max_concurrency, count(*) AS engines
			FROM instance_minutes AS i JOIN instances AS n ON n.id = i.instance_id
			WHERE i.resource_id = (SELECT id FROM resources WHERE name = ?) AND i.start_ms >= ? AND i.start_ms < ?
				AND n.app = ?
			GROUP BY i.start_ms`
		args = append(args, app)
	}
	// As metricPoints: one string of numbers, not a row per minute.
	var text sql.NullString
	if err := s.read.WithContext(ctx).Raw(`SELECT string_agg(start_ms || ' ' || calls || ' ' || busiest_second || ' ' ||
		max_concurrency || ' ' || engines, ' '
		ORDER BY start_ms) FROM (`+minutes+`) AS e`, args...).Row().Scan(&text); err != nil {
		return nil, fmt.Errorf("store: read the engine minutes of %q: %w", name, err)
	}
	fields := strings.Fields(text.String)
	if len(fields)%engineMinuteFields != 0 {
		return nil, fmt.Errorf("store: %d numbers do not make engine minutes", len(fields))
	}
	out := make([]EngineMinute, 0, len(fields)/engineMinuteFields)
	var n [engineMinuteFields]int64
	for minute := range slices.Chunk(fields, engineMinuteFields) {
		for i, f := range minute {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("store: read an engine minute: %w", err)
			}
			n[i] = v
		}
		out = append(out, EngineMinute{StartMs: n[0], Calls: n[1], BusiestSecond: n[2], MaxConcurrency: n[3], Engines: n[4]})
	}
	return out, nil
}
