package store

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"
)

// Instance is one row of the instances registry: an app process that
// embeds the engine and reports to the server. UID is the id the instance
// gives itself; ID is the small key its metric rows carry.
type Instance struct {
	ID            int64  `gorm:"primaryKey"`
	UID           string `gorm:"column:uid"`
	App           string
	Hostname      string
	PID           int64 `gorm:"column:pid"`
	Version       string
	RulesRevision int64
	// FirstSeenMs and LastSeenMs are its first and last report, in Unix
	// milliseconds.
	FirstSeenMs int64
	LastSeenMs  int64
}

// TableName is the instances table.
func (Instance) TableName() string { return "instances" }

// instanceMinutes is the table of the instances' own minute rows: not a
// rollup of metric_minutes but a part of it, read only for one instance.
var instanceMinutes = metricTable{"instance_minutes", MinuteMs}

// PutInstance records in, matched by UID: a new instance is inserted, a
// known one takes in's fields, its first seen time kept. It sets in.ID.
func (s *Store) PutInstance(ctx context.Context, in *Instance) error {
	db := s.db.WithContext(ctx)
	row := db.Raw(`INSERT INTO instances AS i
			(uid, app, hostname, pid, version, rules_revision, first_seen_ms, last_seen_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET app = excluded.app, hostname = excluded.hostname,
			pid = excluded.pid, version = excluded.version, rules_revision = excluded.rules_revision,
			first_seen_ms = `+least(db)+`(i.first_seen_ms, excluded.first_seen_ms),
			last_seen_ms = `+greatest(db)+`(i.last_seen_ms, excluded.last_seen_ms)
		RETURNING id, first_seen_ms`,
		in.UID, in.App, in.Hostname, in.PID, in.Version, in.RulesRevision, in.FirstSeenMs, in.LastSeenMs).Row()
	if err := row.Scan(&in.ID, &in.FirstSeenMs); err != nil {
		return fmt.Errorf("record instance %q: %w", in.UID, err)
	}
	return nil
}

// Instances returns the registry, by UID; with app set, only that app's
// instances.
func (s *Store) Instances(ctx context.Context, app string) ([]Instance, error) {
	q := s.read.WithContext(ctx).Order("uid")
	if app != "" {
		q = q.Where("app = ?", app)
	}
	out := []Instance{}
	return out, q.Find(&out).Error
}

// InstanceByUID returns the instance whose own id is uid, or ErrNotFound.
func (s *Store) InstanceByUID(ctx context.Context, uid string) (Instance, error) {
	var in Instance
	err := s.read.WithContext(ctx).Where("uid = ?", uid).Take(&in).Error
	return in, translate(err)
}

// RulesRevision is the revision of the rule set instances poll by: the id
// of the last rule revision written, which every rule write adds to (ids
// are never reused), 0 before the first. Rule writes take turns (InTx),
// so ids grow in the order the writes commit: whoever has read every rule
// written up to a revision has read every write before it too.
func (s *Store) RulesRevision(ctx context.Context) (int64, error) {
	return rulesRevision(s.db.WithContext(ctx))
}

func rulesRevision(db *gorm.DB) (int64, error) {
	var rev int64
	err := db.Raw(`SELECT coalesce(max(id), 0) FROM rule_revisions`).Row().Scan(&rev)
	return rev, err
}

// AddInstanceMinutes adds an instance's minutes to its own rows and, in
// the same transaction, to the summed minute rows, their rollups and the
// resources' seen times, like AddMetrics. A minute of a resource that the
// instance reported before (a retried report) is skipped: only the first
// report of it counts, and only once. It returns how many deltas it
// added.
func (s *Store) AddInstanceMinutes(ctx context.Context, instanceID int64, deltas []MinuteDelta) (int, error) {
	if len(deltas) == 0 {
		return 0, nil
	}
	// As AddMetrics, past the callbacks that refuse writes to a gone file.
	if err := s.b.fileGone(); err != nil {
		return 0, err
	}
	added := 0
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		added = 0
		for chunk := range slices.Chunk(deltas, addMetricsChunk) {
			n, err := addInstanceMinutesIn(ctx, tx, instanceID, chunk)
			if err != nil {
				return err
			}
			added += n
		}
		return nil
	})
	return added, err
}

// addInstanceMinutesIn is AddInstanceMinutes for one chunk, within tx.
func addInstanceMinutesIn(ctx context.Context, tx *gorm.DB, instanceID int64, deltas []MinuteDelta) (int, error) {
	seen := map[string]*MetricResource{}
	for _, d := range deltas {
		r, ok := seen[d.Resource]
		if !ok {
			seen[d.Resource] = &MetricResource{Name: d.Resource, FirstSeenMs: d.StartMs, LastSeenMs: d.StartMs + MinuteMs - 1}
			continue
		}
		r.FirstSeenMs, r.LastSeenMs = min(r.FirstSeenMs, d.StartMs), max(r.LastSeenMs, d.StartMs+MinuteMs-1)
	}
	ids, err := upsertResources(ctx, tx, seen)
	if err != nil {
		return 0, err
	}
	stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, bind(tx, `INSERT INTO `+instanceMinutes.name+` (resource_id, start_ms,
			instance_id, pass, block, shadow_block, complete, error, rt_sum_ms, rt_min_ms, rt_max_ms, max_concurrency)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (resource_id, start_ms, instance_id) DO NOTHING`))
	if err != nil {
		return 0, fmt.Errorf("add to %s: %w", instanceMinutes.name, err)
	}
	defer stmt.Close()
	// As in upsertCounts: no goroutine per statement.
	uncancelled := context.WithoutCancel(ctx)
	fresh := make([]countRow, 0, len(deltas))
	for _, d := range deltas {
		c := d.Counts
		res, err := stmt.ExecContext(uncancelled, ids[d.Resource], d.StartMs, instanceID, c.Pass, c.Block, c.ShadowBlock,
			c.Complete, c.Error, c.RtSumMs, minRt(c), c.MaxRtMs, c.MaxConcurrency)
		if err != nil {
			return 0, fmt.Errorf("add to %s: %w", instanceMinutes.name, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n == 1 {
			fresh = append(fresh, countRow{resourceID: ids[d.Resource], startMs: d.StartMs, counts: c})
		}
	}
	return len(fresh), addMinuteRows(ctx, tx, fresh)
}

// InstanceMetrics is ResourceMetrics narrowed to what one instance
// (instanceID, an Instance's ID) reported: read from its own minute rows.
func (s *Store) InstanceMetrics(ctx context.Context, name string, instanceID, fromMs, toMs, stepMs int64) ([]MetricPoint, error) {
	if stepMs <= 0 || stepMs%MinuteMs != 0 {
		return nil, fmt.Errorf("store: step of %d ms is not a whole number of minutes", stepMs)
	}
	return s.metricPoints(ctx, instanceMinutes, "instance_id = ? AND", []any{instanceID}, name, fromMs, toMs, stepMs)
}
