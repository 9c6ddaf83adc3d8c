package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/sluicehq/sluice/engine"
)

// upsertBlocks adds the blocks of rows to table, a metric table's blocks
// table, within tx.
func upsertBlocks(ctx context.Context, tx *gorm.DB, table string, rows []countRow) error {
	if !slices.ContainsFunc(rows, func(r countRow) bool { return len(r.blocks) > 0 }) {
		return nil
	}
	stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, bind(tx, `INSERT INTO `+table+` AS m (resource_id, start_ms, reason, rule, blocked)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (resource_id, start_ms, reason, rule) DO UPDATE SET blocked = m.blocked + excluded.blocked`))
	if err != nil {
		return fmt.Errorf("add to %s: %w", table, err)
	}
	defer stmt.Close()
	// As in upsertCounts: no goroutine per statement.
	ctx = context.WithoutCancel(ctx)
	for _, r := range rows {
		for _, b := range r.blocks {
			if b.Blocked == 0 {
				continue
			}
			if _, err := stmt.ExecContext(ctx, r.resourceID, r.startMs, string(b.Reason), b.Rule, b.Blocked); err != nil {
				return fmt.Errorf("add to %s: %w", table, err)
			}
		}
	}
	return nil
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
