package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/sluicehq/sluice/engine"
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
var instanceMinutes = metricTable{"instance_minutes", MinuteMs, ""}

// PutInstance records in, matched by UID: a new instance is inserted, a
// known one takes in's fields, its first seen time kept. It sets in.ID.
//
// Calls that arrive while another's transaction runs are committed
// together in the next one, as AddInstanceMinutes's are: a fleet of
// thousands records its instances every few seconds, and a transaction
// each would keep the database's one writer busy with nothing else. If
// the transaction fails, every call it carried fails.
func (s *Store) PutInstance(ctx context.Context, in *Instance) error {
	// Its statements go straight to the connection, as AddMetrics's.
	if err := s.b.fileGone(); err != nil {
		return err
	}
	return s.instances.do(in, "instance records", func(*Instance) int { return 1 }, maxGroupInstances, func(group []*Instance) error {
		return s.putInstances(ctx, group)
	})
}

// maxGroupInstances bounds the instances one group commit of PutInstance
// records.
const maxGroupInstances = 1000

// putInstances records a group of instances in one transaction, in order,
// and sets their keys.
func (s *Store) putInstances(ctx context.Context, group []*Instance) error {
	ctx = context.WithoutCancel(ctx)
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if onPostgres(tx) {
			return upsertInstances(ctx, tx, group)
		}
		// Row by row, without RETURNING, and the keys read back after: on
		// SQLite a statement with a RETURNING took ten times what it takes
		// without, and every instance rewrites its record every few
		// seconds.
		stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, upsertInstance(tx, 1))
		if err != nil {
			return fmt.Errorf("record instances: %w", err)
		}
		defer stmt.Close()
		for _, in := range group {
			if _, err := stmt.ExecContext(ctx, in.UID, in.App, in.Hostname, in.PID, in.Version, in.RulesRevision, in.FirstSeenMs, in.LastSeenMs); err != nil {
				return fmt.Errorf("record instance %q: %w", in.UID, err)
			}
		}
		return readInstanceKeys(ctx, tx, group)
	})
}

// upsertInstance is the statement that records n instances, each
// matched by its UID: a new one is inserted, a known one takes the new
// fields, its first seen time kept.
func upsertInstance(tx *gorm.DB, n int) string {
	return bind(tx, `INSERT INTO instances AS i (uid, app, hostname, pid, version, rules_revision, first_seen_ms, last_seen_ms)
		VALUES `+strings.Repeat(",(?, ?, ?, ?, ?, ?, ?, ?)", n)[1:]+`
		ON CONFLICT (uid) DO UPDATE SET app = excluded.app, hostname = excluded.hostname,
			pid = excluded.pid, version = excluded.version, rules_revision = excluded.rules_revision,
			first_seen_ms = `+least(tx)+`(i.first_seen_ms, excluded.first_seen_ms),
			last_seen_ms = `+greatest(tx)+`(i.last_seen_ms, excluded.last_seen_ms)`)
}

// upsertInstances is putInstances's write on PostgreSQL: a statement per
// namesPerQuery instances, since one a row cost a round trip each. An
// instance named twice in the group is written once, as the calls in turn
// would leave it (the later one's fields, the earliest first seen and the
// latest last seen time): PostgreSQL refuses a statement that updates a
// row twice. The rows are written in UID order, so that two replicas'
// groups do not deadlock.
func upsertInstances(ctx context.Context, tx *gorm.DB, group []*Instance) error {
	merged := make(map[string]Instance, len(group))
	for _, in := range group {
		m := *in
		if prev, ok := merged[in.UID]; ok {
			m.FirstSeenMs, m.LastSeenMs = min(prev.FirstSeenMs, m.FirstSeenMs), max(prev.LastSeenMs, m.LastSeenMs)
		}
		merged[in.UID] = m
	}
	keys := make(map[string]Instance, len(merged))
	for batch := range slices.Chunk(slices.Sorted(maps.Keys(merged)), namesPerQuery) {
		args := make([]any, 0, 8*len(batch))
		for _, uid := range batch {
			in := merged[uid]
			args = append(args, in.UID, in.App, in.Hostname, in.PID, in.Version, in.RulesRevision, in.FirstSeenMs, in.LastSeenMs)
		}
		rows, err := tx.Statement.ConnPool.QueryContext(ctx, upsertInstance(tx, len(batch))+` RETURNING id, uid, first_seen_ms`, args...)
		if err != nil {
			return fmt.Errorf("record instances: %w", err)
		}
		if err := scanKeys(rows, func(row Instance) { keys[row.UID] = row }); err != nil {
			return fmt.Errorf("record instances: %w", err)
		}
	}
	for _, in := range group {
		in.ID, in.FirstSeenMs = keys[in.UID].ID, keys[in.UID].FirstSeenMs
	}
	return nil
}

// readInstanceKeys sets the ID and first seen time of each of group as
// tx holds them, a query per namesPerQuery instances.
func readInstanceKeys(ctx context.Context, tx *gorm.DB, group []*Instance) error {
	byUID := make(map[string][]*Instance, len(group))
	for _, in := range group {
		byUID[in.UID] = append(byUID[in.UID], in)
	}
	for batch := range slices.Chunk(slices.Collect(maps.Keys(byUID)), namesPerQuery) {
		args := make([]any, len(batch))
		for i, uid := range batch {
			args[i] = uid
		}
		marks := strings.Repeat(",?", len(batch))[1:]
		rows, err := tx.Statement.ConnPool.QueryContext(ctx, bind(tx, `SELECT id, uid, first_seen_ms FROM instances WHERE uid IN (`+marks+`)`), args...)
		if err != nil {
			return fmt.Errorf("read instances' keys: %w", err)
		}
		err = scanKeys(rows, func(row Instance) {
			for _, in := range byUID[row.UID] {
				in.ID, in.FirstSeenMs = row.ID, row.FirstSeenMs
			}
		})
		if err != nil {
			return fmt.Errorf("read instances' keys: %w", err)
		}
	}
	return nil
}

// scanKeys hands each of rows, an instance's id, uid and first_seen_ms,
// to set, and closes rows.
func scanKeys(rows *sql.Rows, set func(Instance)) error {
	for rows.Next() {
		var row Instance
		if err := rows.Scan(&row.ID, &row.UID, &row.FirstSeenMs); err != nil {
			return errors.Join(err, rows.Close())
		}
		set(row)
	}
	return errors.Join(rows.Err(), rows.Close())
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

// AddedMinutes is what AddInstanceMinutes made of a report's minutes.
type AddedMinutes struct {
	// Added is how many minutes were new (not a retry), folded ones
	// included.
	Added int
	// Folded is how many of those were of new names beyond the budget,
	// counted under engine.OverflowResource.
	Folded int
	// Counts is what the new minutes added, by the name they were counted
	// under (engine.OverflowResource for the folded ones).
	Counts map[string]engine.Counts
	// Blocks splits the Block of Counts by rule and reason, by name.
	Blocks map[string][]engine.RuleBlocks
}

// add adds o to n.
func (n *AddedMinutes) add(o AddedMinutes) {
	n.Added += o.Added
	n.Folded += o.Folded
	for name, c := range o.Counts {
		if n.Counts == nil {
			n.Counts = map[string]engine.Counts{}
		}
		sum := n.Counts[name]
		sum.Merge(c)
		n.Counts[name] = sum
	}
	for name, b := range o.Blocks {
		if n.Blocks == nil {
			n.Blocks = map[string][]engine.RuleBlocks{}
		}
		n.Blocks[name] = engine.MergeBlocks(n.Blocks[name], b)
	}
}

// AddInstanceMinutes adds an instance's minutes to its own rows and, in
// the same transaction, to the summed minute rows, their rollups and the
// resources' seen times, like AddMetrics. A minute of a resource that the
// instance reported before (a retried report) is skipped: only the first
// report of it counts, and only once.
//
// maxResources, when above 0, is the stored-resource budget: a name the
// resources table lacks while it holds maxResources names
// (engine.OverflowResource aside) gets no row, and its minutes are counted
// under engine.OverflowResource instead, as the engine counts the calls it
// has no room for; so are the instance's own minutes of
// engine.OverflowResource. A folded minute is still counted once:
// instance_folds keeps, per instance and minute, a hash of each name
// folded. Names the resources table holds (a rule's among them) are never
// folded. Across replicas the budget may be overshot by what reports
// committed side by side add.
//
// Calls that arrive while another's transaction runs are committed
// together in the next one (group commit): a fleet's reports come in a
// burst at each minute's end, and one transaction a report would queue
// them all behind the database's one writer. A group's reports are
// applied one after the other, as they would be alone, but their sums go
// to the minute rows and rollups merged, one upsert per resource and
// minute. If the transaction fails, every report it carried fails with
// the error, and none of them counted. The transaction does not end with
// ctx, which is one caller's of many.
func (s *Store) AddInstanceMinutes(ctx context.Context, instanceID int64, deltas []MinuteDelta, maxResources int) (AddedMinutes, error) {
	if len(deltas) == 0 {
		return AddedMinutes{}, nil
	}
	// As AddMetrics, past the callbacks that refuse writes to a gone file.
	if err := s.b.fileGone(); err != nil {
		return AddedMinutes{}, err
	}
	w := &reportWrite{instanceID: instanceID, deltas: deltas, maxResources: maxResources}
	err := s.reports.do(w, "instance reports", reportSize, maxGroupDeltas, func(group []*reportWrite) error {
		return s.addReports(ctx, group)
	})
	if err != nil {
		return AddedMinutes{}, fmt.Errorf("add an instance's minutes: %w", err)
	}
	return w.sum, nil
}

// reportWrite is one AddInstanceMinutes call: its arguments, and what it
// added.
type reportWrite struct {
	instanceID   int64
	deltas       []MinuteDelta
	maxResources int
	sum          AddedMinutes
}

// reportSize is a report's size in a group: its minutes.
func reportSize(w *reportWrite) int { return len(w.deltas) }

// maxGroupDeltas bounds the minutes one group commit carries, so that a
// fleet's burst does not hold the database's writer in one long
// transaction; the rest go in the next.
const maxGroupDeltas = 20_000

// addReports adds a group of reports in one transaction, one after the
// other, and their sums, merged, at its end.
func (s *Store) addReports(ctx context.Context, group []*reportWrite) error {
	ctx = context.WithoutCancel(ctx)
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var rows []countRow
		res := groupResources{ids: map[string]int64{}, stored: map[string]seenSpan{}, seen: map[string]*MetricResource{}}
		for _, w := range group {
			w.sum = AddedMinutes{}
			for chunk := range slices.Chunk(w.deltas, addMetricsChunk) {
				n, fresh, err := addInstanceMinutesIn(ctx, tx, &res, w.instanceID, chunk, w.maxResources)
				if err != nil {
					return err
				}
				w.sum.add(n)
				rows = append(rows, fresh...)
			}
		}
		if _, err := upsertResources(ctx, tx, res.moved()); err != nil {
			return err
		}
		return addMinuteRows(ctx, tx, rollUp(rows, MinuteMs))
	})
}

// groupResources is what a group commit knows of the resources its
// reports name: the ids of those it has read or upserted, the seen times
// the table holds for them, and the seen times that the group's reports
// moved, written once at its end, since a fleet's reports name the same
// resources.
type groupResources struct {
	ids    map[string]int64
	stored map[string]seenSpan
	seen   map[string]*MetricResource
}

// seenSpan is a resource's seen times as the resources table holds them;
// set is false while they are NULL (a rule's resource never seen).
type seenSpan struct {
	firstMs, lastMs int64
	set             bool
}

// covers reports whether s holds r's seen times already.
func (s seenSpan) covers(r *MetricResource) bool {
	return s.set && s.firstMs <= r.FirstSeenMs && s.lastMs >= r.LastSeenMs
}

// lookUp reads the ids and seen times of the names of deltas that the
// group has not met yet. A fleet's reports of a minute name the
// resources that the first of them stored: a read finds them, and only
// the seen times that go beyond the stored ones are written, where an
// upsert of every name a group met rewrote each row (most of the group
// commit's CPU on SQLite, its RETURNING included).
func (res *groupResources) lookUp(ctx context.Context, tx *gorm.DB, deltas []MinuteDelta) error {
	names := map[string]bool{}
	for _, d := range deltas {
		if _, known := res.ids[d.Resource]; !known {
			names[d.Resource] = true
		}
	}
	for batch := range slices.Chunk(slices.Sorted(maps.Keys(names)), namesPerQuery) {
		args := make([]any, len(batch))
		for i, name := range batch {
			args[i] = name
		}
		query := `SELECT id, name, first_seen_ms, last_seen_ms FROM resources WHERE name IN (?` +
			strings.Repeat(",?", len(batch)-1) + `)`
		rows, err := tx.Statement.ConnPool.QueryContext(ctx, bind(tx, query), args...)
		if err != nil {
			return fmt.Errorf("look up resources: %w", err)
		}
		for rows.Next() {
			var id int64
			var name string
			var first, last sql.NullInt64
			if err := rows.Scan(&id, &name, &first, &last); err != nil {
				return errors.Join(fmt.Errorf("look up resources: %w", err), rows.Close())
			}
			res.ids[name] = id
			res.stored[name] = seenSpan{firstMs: first.Int64, lastMs: last.Int64, set: first.Valid && last.Valid}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("look up resources: %w", err)
		}
	}
	return nil
}

// moved returns the seen times of the group's reports that the table
// does not hold yet.
func (res *groupResources) moved() map[string]*MetricResource {
	out := map[string]*MetricResource{}
	for name, r := range res.seen {
		if !res.stored[name].covers(r) {
			out[name] = r
		}
	}
	return out
}

// addInstanceMinutesIn is AddInstanceMinutes for one chunk of one report,
// within tx: it returns the rows to add to the sums rather than add them,
// so that a group's go in at once. A name the table lacks is upserted at
// once, so that the next report's budget counts it; res keeps the seen
// times of the others.
func addInstanceMinutesIn(ctx context.Context, tx *gorm.DB, res *groupResources, instanceID int64, deltas []MinuteDelta, maxResources int) (AddedMinutes, []countRow, error) {
	if err := res.lookUp(ctx, tx, deltas); err != nil {
		return AddedMinutes{}, nil, err
	}
	folded, err := namesToFold(ctx, tx, deltas, maxResources, res.ids)
	if err != nil {
		return AddedMinutes{}, nil, err
	}
	seen := map[string]*MetricResource{}
	for _, d := range deltas {
		name := d.Resource
		if folded[name] {
			name = engine.OverflowResource
		}
		r, ok := seen[name]
		if !ok {
			seen[name] = &MetricResource{Name: name, FirstSeenMs: d.StartMs, LastSeenMs: d.StartMs + MinuteMs - 1}
			continue
		}
		r.FirstSeenMs, r.LastSeenMs = min(r.FirstSeenMs, d.StartMs), max(r.LastSeenMs, d.StartMs+MinuteMs-1)
	}
	upsert := map[string]*MetricResource{}
	for name, r := range seen {
		if _, known := res.ids[name]; !known {
			upsert[name] = r
		} else if moved, ok := res.seen[name]; ok {
			moved.FirstSeenMs, moved.LastSeenMs = min(moved.FirstSeenMs, r.FirstSeenMs), max(moved.LastSeenMs, r.LastSeenMs)
		} else {
			res.seen[name] = r
		}
	}
	upserted, err := upsertResources(ctx, tx, upsert)
	if err != nil {
		return AddedMinutes{}, nil, err
	}
	maps.Copy(res.ids, upserted)
	for name, r := range upsert {
		// At least these: another replica's may have widened them.
		res.stored[name] = seenSpan{firstMs: r.FirstSeenMs, lastMs: r.LastSeenMs, set: true}
	}
	ids := res.ids
	fresh, err := addOwnMinutes(ctx, tx, instanceID, deltas, folded, ids)
	if err != nil {
		return AddedMinutes{}, nil, err
	}
	overflow, err := addFoldedMinutes(ctx, tx, instanceID, deltas, folded, ids[engine.OverflowResource])
	if err != nil {
		return AddedMinutes{}, nil, err
	}
	n := AddedMinutes{Added: len(fresh), Counts: make(map[string]engine.Counts, len(fresh)), Blocks: map[string][]engine.RuleBlocks{}}
	names := make(map[int64]string, len(seen))
	for name := range seen {
		names[ids[name]] = name
	}
	for _, r := range fresh {
		sum := n.Counts[names[r.resourceID]]
		sum.Merge(r.counts)
		n.Counts[names[r.resourceID]] = sum
		if len(r.blocks) > 0 {
			n.Blocks[names[r.resourceID]] = engine.MergeBlocks(n.Blocks[names[r.resourceID]], r.blocks)
		}
	}
	for _, r := range overflow {
		fresh = append(fresh, r.row)
		n.Folded += r.minutes
		sum := n.Counts[engine.OverflowResource]
		sum.Merge(r.row.counts)
		n.Counts[engine.OverflowResource] = sum
		if len(r.row.blocks) > 0 {
			n.Blocks[engine.OverflowResource] = engine.MergeBlocks(n.Blocks[engine.OverflowResource], r.row.blocks)
		}
	}
	n.Added += n.Folded
	return n, fresh, nil
}

// namesToFold returns the names of deltas whose minutes are counted under
// engine.OverflowResource: that name itself, and, with maxResources above
// 0, the names the resources table lacks beyond its room, in name order.
// The names of upserted, which the table holds, are not looked up.
func namesToFold(ctx context.Context, tx *gorm.DB, deltas []MinuteDelta, maxResources int, upserted map[string]int64) (map[string]bool, error) {
	folded := map[string]bool{}
	names := map[string]bool{}
	for _, d := range deltas {
		if d.Resource == engine.OverflowResource {
			folded[d.Resource] = true
		} else if _, ok := upserted[d.Resource]; !ok {
			names[d.Resource] = true
		}
	}
	if maxResources <= 0 {
		return folded, nil
	}
	sorted := slices.Sorted(maps.Keys(names))
	for batch := range slices.Chunk(sorted, namesPerQuery) {
		var known []string
		if err := tx.Raw(`SELECT name FROM resources WHERE name IN ?`, batch).Scan(&known).Error; err != nil {
			return nil, fmt.Errorf("look up resources: %w", err)
		}
		for _, name := range known {
			delete(names, name)
		}
	}
	if len(names) == 0 {
		return folded, nil
	}
	var stored int64
	if err := tx.Raw(`SELECT count(*) FROM resources WHERE name <> ?`, engine.OverflowResource).Scan(&stored).Error; err != nil {
		return nil, fmt.Errorf("count resources: %w", err)
	}
	room := max(int64(maxResources)-stored, 0)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if room > 0 {
			room--
			continue
		}
		folded[name] = true
	}
	return folded, nil
}

// addOwnMinutes inserts the instance's rows of the deltas not folded, and
// returns those new (not a retry) as rows to add to the sums.
func addOwnMinutes(ctx context.Context, tx *gorm.DB, instanceID int64, deltas []MinuteDelta, folded map[string]bool, ids map[string]int64) ([]countRow, error) {
	own := slices.DeleteFunc(slices.Clone(deltas), func(d MinuteDelta) bool { return folded[d.Resource] })
	// As in upsertCounts: no goroutine per statement.
	uncancelled := context.WithoutCancel(ctx)
	insert := insertOwnRowByRow
	if onPostgres(tx) {
		insert = insertOwnRows
	}
	fresh := make([]countRow, 0, len(own))
	for batch := range slices.Chunk(own, ownRowsPerStatement) {
		inserted, err := insert(uncancelled, tx, instanceID, batch, ids)
		if err != nil {
			return nil, fmt.Errorf("add to %s: %w", instanceMinutes.name, err)
		}
		for _, d := range batch {
			k := rowKey{ids[d.Resource], d.StartMs}
			if inserted[k] {
				// A minute given twice in one report counts once.
				delete(inserted, k)
				fresh = append(fresh, countRow{resourceID: k.resourceID, startMs: k.startMs, counts: d.Counts, blocks: d.BlockedBy})
			}
		}
	}
	return fresh, nil
}

// ownRowColumns are the columns of an instance's own row.
const ownRowColumns = `(resource_id, start_ms, instance_id, pass, block, shadow_block, complete, error, rt_sum_ms,
	rt_min_ms, rt_max_ms, max_concurrency, busiest_second, adaptive_limit_min, adaptive_limit_max, adaptive_limit_last,
	adaptive_limit_at_ms)`

// ownRow is the values of ownRowColumns for d.
func ownRow(instanceID int64, d MinuteDelta, ids map[string]int64) []any {
	c := d.Counts
	return []any{ids[d.Resource], d.StartMs, instanceID, c.Pass, c.Block, c.ShadowBlock, c.Complete, c.Error, c.RtSumMs,
		minRt(c), c.MaxRtMs, c.MaxConcurrency, c.BusiestSecond, minLimit(c), c.AdaptiveLimitMax, c.AdaptiveLimitLast,
		countRow{startMs: d.StartMs, counts: c}.limitAtMs()}
}

// insertOwnRowByRow inserts the instance's rows of deltas with one
// prepared statement, row by row, and returns the keys of those it
// inserted: those that were not there already (a retried report's). On
// SQLite, one statement of many rows and a RETURNING took twice the CPU.
func insertOwnRowByRow(ctx context.Context, tx *gorm.DB, instanceID int64, deltas []MinuteDelta, ids map[string]int64) (map[rowKey]bool, error) {
	stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, bind(tx, `INSERT INTO `+instanceMinutes.name+` `+ownRowColumns+`
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (resource_id, start_ms, instance_id) DO NOTHING`))
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	inserted := make(map[rowKey]bool, len(deltas))
	for _, d := range deltas {
		res, err := stmt.ExecContext(ctx, ownRow(instanceID, d, ids)...)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 1 {
			inserted[rowKey{ids[d.Resource], d.StartMs}] = true
		}
	}
	return inserted, nil
}

// ownRowsPerStatement is how many of an instance's own rows one INSERT of
// many rows (insertOwnRows) carries: 17 parameters a row stay far below
// PostgreSQL's limit of 65,535.
const ownRowsPerStatement = 500

// rowKey is a metric row's resource and start.
type rowKey struct{ resourceID, startMs int64 }

// insertOwnRows is insertOwnRowByRow in one statement: on PostgreSQL a
// statement a row cost a report's 50 rows 50 round trips, and a fleet's
// burst took two to five times as long.
func insertOwnRows(ctx context.Context, tx *gorm.DB, instanceID int64, deltas []MinuteDelta, ids map[string]int64) (map[rowKey]bool, error) {
	var sql strings.Builder
	sql.WriteString(`INSERT INTO ` + instanceMinutes.name + ` ` + ownRowColumns + ` VALUES `)
	args := make([]any, 0, 17*len(deltas))
	for i, d := range deltas {
		if i > 0 {
			sql.WriteByte(',')
		}
		sql.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
		args = append(args, ownRow(instanceID, d, ids)...)
	}
	sql.WriteString(` ON CONFLICT (resource_id, start_ms, instance_id) DO NOTHING RETURNING resource_id, start_ms`)
	rows, err := tx.Statement.ConnPool.QueryContext(ctx, bind(tx, sql.String()), args...)
	if err != nil {
		return nil, err
	}
	inserted := make(map[rowKey]bool, len(deltas))
	for rows.Next() {
		var k rowKey
		if err := rows.Scan(&k.resourceID, &k.startMs); err != nil {
			return nil, errors.Join(err, rows.Close())
		}
		inserted[k] = true
	}
	return inserted, errors.Join(rows.Err(), rows.Close())
}

// foldedMinute is the counts folded into the overflow resource's row of
// one minute, and how many reported minutes they hold.
type foldedMinute struct {
	row     countRow
	minutes int
}

// addFoldedMinutes records each folded delta in instance_folds and adds
// those new there to the instance's row of the overflow resource
// (overflowID), which adds up, and returns what it added, by minute, as
// rows to add to the sums.
func addFoldedMinutes(ctx context.Context, tx *gorm.DB, instanceID int64, deltas []MinuteDelta, folded map[string]bool, overflowID int64) ([]foldedMinute, error) {
	if len(folded) == 0 {
		return nil, nil
	}
	stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, bind(tx, `INSERT INTO instance_folds (start_ms, instance_id, name_hash)
		VALUES (?, ?, ?) ON CONFLICT (start_ms, instance_id, name_hash) DO NOTHING`))
	if err != nil {
		return nil, fmt.Errorf("add to instance_folds: %w", err)
	}
	defer stmt.Close()
	uncancelled := context.WithoutCancel(ctx)
	byMinute := map[int64]int{}
	var out []foldedMinute
	for _, d := range deltas {
		if !folded[d.Resource] {
			continue
		}
		res, err := stmt.ExecContext(uncancelled, d.StartMs, instanceID, nameHash(d.Resource))
		if err != nil {
			return nil, fmt.Errorf("add to instance_folds: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 0 {
			continue
		}
		i, ok := byMinute[d.StartMs]
		if !ok {
			i = len(out)
			byMinute[d.StartMs] = i
			out = append(out, foldedMinute{row: countRow{resourceID: overflowID, startMs: d.StartMs}})
		}
		out[i].row.counts.Merge(d.Counts)
		out[i].row.blocks = engine.MergeBlocks(out[i].row.blocks, d.BlockedBy)
		out[i].minutes++
	}
	rows := make([]countRow, len(out))
	for i, m := range out {
		rows[i] = m.row
	}
	return out, upsertInstanceCounts(ctx, tx, instanceID, rows)
}

// upsertInstanceCounts adds rows to the instance's own rows, as
// upsertCounts adds to the summed ones.
func upsertInstanceCounts(ctx context.Context, tx *gorm.DB, instanceID int64, rows []countRow) error {
	stmt, err := tx.Statement.ConnPool.PrepareContext(ctx, bind(tx, `INSERT INTO `+instanceMinutes.name+` AS m (resource_id, start_ms,
			instance_id, pass, block, shadow_block, complete, error, rt_sum_ms, rt_min_ms, rt_max_ms, max_concurrency,
			busiest_second, adaptive_limit_min, adaptive_limit_max, adaptive_limit_last, adaptive_limit_at_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (resource_id, start_ms, instance_id) DO UPDATE SET `+addCounts(tx)))
	if err != nil {
		return fmt.Errorf("add to %s: %w", instanceMinutes.name, err)
	}
	defer stmt.Close()
	uncancelled := context.WithoutCancel(ctx)
	for _, r := range rows {
		c := r.counts
		if _, err := stmt.ExecContext(uncancelled, r.resourceID, r.startMs, instanceID, c.Pass, c.Block, c.ShadowBlock,
			c.Complete, c.Error, c.RtSumMs, minRt(c), c.MaxRtMs, c.MaxConcurrency, c.BusiestSecond,
			minLimit(c), c.AdaptiveLimitMax, c.AdaptiveLimitLast, r.limitAtMs()); err != nil {
			return fmt.Errorf("add to %s: %w", instanceMinutes.name, err)
		}
	}
	return nil
}

// nameHash is a resource name's key in instance_folds: its 64-bit FNV-1a
// hash, as the signed integer the column holds.
func nameHash(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}
