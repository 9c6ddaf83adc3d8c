package store

import (
	"context"
	"fmt"
	"slices"
)

// BreakerTransition is one circuit breaker state change, as the engine
// reported it.
type BreakerTransition struct {
	ID       int64 `gorm:"primaryKey"`
	AtMs     int64
	Rule     string
	Resource string
	From     string `gorm:"column:from_state"`
	To       string `gorm:"column:to_state"`
}

// TableName is the breaker transitions table.
func (BreakerTransition) TableName() string { return "breaker_transitions" }

// AddBreakerTransitions stores transitions in the order given, which is
// the order they are read back in within one millisecond.
func (s *Store) AddBreakerTransitions(ctx context.Context, transitions []BreakerTransition) error {
	if len(transitions) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Create(&transitions).Error
}

// BreakerTransitions returns the transitions from fromMs (inclusive) to
// toMs (exclusive), of resource unless it is "", oldest first, at most
// limit of them: the newest limit when there are more, as a timeline
// wants.
func (s *Store) BreakerTransitions(ctx context.Context, resource string, fromMs, toMs int64, limit int) ([]BreakerTransition, error) {
	q := s.db.WithContext(ctx).Where("at_ms >= ? AND at_ms < ?", fromMs, toMs)
	if resource != "" {
		q = q.Where("resource = ?", resource)
	}
	out := []BreakerTransition{}
	if err := q.Order("at_ms DESC, id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// PruneBreakerTransitions deletes the transitions before beforeMs,
// batchRows at a time, and returns how many it deleted.
func (s *Store) PruneBreakerTransitions(ctx context.Context, beforeMs int64, batchRows int) (int64, error) {
	if batchRows < 1 {
		return 0, fmt.Errorf("store: batch of %d rows", batchRows)
	}
	return s.deleteInBatches(ctx, "breaker_transitions", `DELETE FROM breaker_transitions WHERE id IN
		(SELECT id FROM breaker_transitions WHERE at_ms < ? ORDER BY id LIMIT ?)`, batchRows, beforeMs)
}
