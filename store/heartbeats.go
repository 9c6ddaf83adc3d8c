package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// metricHeartbeat is a UTC minute in which a server ran its metrics
// pipeline: what tells an idle minute (a server was up, nothing called)
// from an outage (none was), since both leave no metric row.
type metricHeartbeat struct {
	MinuteMs int64 `gorm:"column:minute_ms;primaryKey;autoIncrement:false"`
}

// TableName is the heartbeats table.
func (metricHeartbeat) TableName() string { return "metric_heartbeats" }

// AddHeartbeats records that a server was up in the minutes starting at
// minutesMs; a minute already recorded (by another replica, or before a
// restart) stays as it is.
func (s *Store) AddHeartbeats(ctx context.Context, minutesMs []int64) error {
	return addHeartbeatsIn(s.db.WithContext(ctx), minutesMs)
}

// addHeartbeatsIn is AddHeartbeats within db, a transaction or not.
func addHeartbeatsIn(db *gorm.DB, minutesMs []int64) error {
	if len(minutesMs) == 0 {
		return nil
	}
	rows := make([]metricHeartbeat, len(minutesMs))
	for i, ms := range minutesMs {
		rows[i] = metricHeartbeat{MinuteMs: floorTo(ms, MinuteMs)}
	}
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error; err != nil {
		return fmt.Errorf("add heartbeats: %w", err)
	}
	return nil
}

// PruneHeartbeats deletes the heartbeats of the minutes before beforeMs,
// at most batchRows in a transaction, as PruneMetrics does the rows they
// vouch for. It returns how many it deleted.
func (s *Store) PruneHeartbeats(ctx context.Context, beforeMs int64, batchRows int) (int64, error) {
	if batchRows < 1 {
		return 0, fmt.Errorf("store: batch of %d rows", batchRows)
	}
	return s.deleteInBatches(ctx, "metric_heartbeats", `DELETE FROM metric_heartbeats WHERE minute_ms IN
		(SELECT minute_ms FROM metric_heartbeats WHERE minute_ms < ? ORDER BY minute_ms LIMIT ?)`, batchRows, beforeMs)
}
