package store

import (
	"context"

	"gorm.io/gorm"
)

// QuotaWindow is the passes in the window of one quota rule (of one value,
// for a hotspot rule) as a server's engine counted them: Spans is a JSON
// array of [atMs, passes].
type QuotaWindow struct {
	Node     string `gorm:"primaryKey"`
	Resource string `gorm:"primaryKey"`
	Rule     string `gorm:"primaryKey"`
	Value    string `gorm:"primaryKey"`
	Spans    string
}

// TableName is the quota windows table.
func (QuotaWindow) TableName() string { return "quota_windows" }

// SaveQuotaWindows replaces the quota windows of node with windows, in one
// transaction: a crash leaves the last save whole.
func (s *Store) SaveQuotaWindows(ctx context.Context, node string, windows []QuotaWindow) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("node = ?", node).Delete(&QuotaWindow{}).Error; err != nil {
			return err
		}
		if len(windows) == 0 {
			return nil
		}
		for i := range windows {
			windows[i].Node = node
		}
		return tx.CreateInBatches(windows, 500).Error
	})
}

// QuotaWindows returns the quota windows node saved last.
func (s *Store) QuotaWindows(ctx context.Context, node string) ([]QuotaWindow, error) {
	out := []QuotaWindow{}
	err := s.db.WithContext(ctx).Where("node = ?", node).Find(&out).Error
	return out, err
}
