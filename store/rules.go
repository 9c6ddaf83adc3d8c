package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Rule is one row of the rules table: the envelope every kind shares, and
// the kind's own fields as the JSON document Spec, validated by the engine
// before it is written. One table for every kind keeps names unique across
// kinds with a plain UNIQUE constraint, and a new kind needs no migration.
type Rule struct {
	ID          int64 `gorm:"primaryKey"`
	Name        string
	Kind        string
	App         string // the app whose instances alone run it; "" for every engine
	Resource    string
	Enabled     bool
	Mode        string
	Description string
	Spec        string
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// TableName is the rules table.
func (Rule) TableName() string { return "rules" }

// Revision actions.
const (
	ActionCreate   = "create"
	ActionUpdate   = "update"
	ActionDelete   = "delete"
	ActionRollback = "rollback"
)

// RuleRevision is one version of a rule as it was written: Content is the
// rule's row as that version left it (Row reads it back). Revisions
// outlive their rule.
type RuleRevision struct {
	ID        int64 `gorm:"primaryKey"`
	RuleID    int64
	Version   int64
	Action    string
	Content   string
	Actor     string
	Reason    string
	CreatedAt time.Time
}

// TableName is the rule revisions table.
func (RuleRevision) TableName() string { return "rule_revisions" }

// RuleFilter selects rules for ListRules. Zero fields select everything.
type RuleFilter struct {
	Kind     string
	Resource string
	App      string // only the rules of this app
	Enabled  *bool
	// Query is a case-insensitive substring of the name, resource or
	// description.
	Query string
}

// Page is a 1-based page of Size rows.
type Page struct {
	Number int
	Size   int
}

func (p Page) apply(q *gorm.DB) *gorm.DB {
	return q.Offset((p.Number - 1) * p.Size).Limit(p.Size)
}

// ListRules returns one page of the rules f selects, by ID, and how many it
// selects in all.
func (s *Store) ListRules(ctx context.Context, f RuleFilter, page Page) ([]Rule, int64, error) {
	q := s.db.WithContext(ctx).Model(&Rule{})
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	if f.Resource != "" {
		q = q.Where("resource = ?", f.Resource)
	}
	if f.App != "" {
		q = q.Where("app = ?", f.App)
	}
	if f.Enabled != nil {
		q = q.Where("enabled = ?", *f.Enabled)
	}
	if f.Query != "" {
		like := "%" + escapeLike(strings.ToLower(f.Query)) + "%"
		q = q.Where(`lower(name) LIKE ? ESCAPE '\' OR lower(resource) LIKE ? ESCAPE '\' OR lower(description) LIKE ? ESCAPE '\'`, like, like, like)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	rules := []Rule{}
	err := page.apply(q.Order("id")).Find(&rules).Error
	return rules, total, err
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// GetRule returns the rule with id, or ErrNotFound.
func (s *Store) GetRule(ctx context.Context, id int64) (Rule, error) {
	return getRule(s.db.WithContext(ctx), id)
}

// AllRules returns every rule, by ID.
func (s *Store) AllRules(ctx context.Context) ([]Rule, error) {
	return allRules(s.db.WithContext(ctx))
}

// ListRevisions returns one page of a rule's revisions, newest first, and
// how many there are; ErrNotFound if the rule never existed.
func (s *Store) ListRevisions(ctx context.Context, ruleID int64, page Page) ([]RuleRevision, int64, error) {
	q := s.db.WithContext(ctx).Model(&RuleRevision{}).Where("rule_id = ?", ruleID)
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	if total == 0 {
		return nil, 0, ErrNotFound
	}
	revs := []RuleRevision{}
	err := page.apply(q.Order("version DESC")).Find(&revs).Error
	return revs, total, err
}

// InTx runs fn in one transaction of rule writes: committed if fn returns
// nil, rolled back otherwise. The transactions of every Store on the
// database, every replica's, take turns: one begins only once the one
// before has ended, and reads what that one committed. So a write that
// reads the rules in its transaction checks the set it commits, which no
// other writer changes in between. On PostgreSQL the turn is the rule
// write lock, taken first (lockRules); on SQLite, one process's single
// writer connection, whose transactions begin IMMEDIATE, gives it.
func (s *Store) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	return s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		if err := lockRules(db); err != nil {
			return err
		}
		return fn(&Tx{db: db})
	})
}

// rulesLockKey is the PostgreSQL advisory lock of rule writes: an
// arbitrary number ("sluice" and 1 in ASCII), unlikely to be another
// application's key in a shared database.
const rulesLockKey int64 = 0x736c7569636501

// lockRules takes the rule write lock in db's transaction, waiting for
// the transaction that holds it to end; PostgreSQL releases it when this
// one ends. The statements after it each read what committed before they
// began (READ COMMITTED, the default), so they see what the last holder
// wrote. Nothing on SQLite.
func lockRules(db *gorm.DB) error {
	if !onPostgres(db) {
		return nil
	}
	return db.Exec("SELECT pg_advisory_xact_lock(?)", rulesLockKey).Error
}

// Tx is a transaction in progress; see Store.InTx.
type Tx struct {
	db *gorm.DB
}

// GetRule returns the rule with id, or ErrNotFound.
func (t *Tx) GetRule(id int64) (Rule, error) { return getRule(t.db, id) }

// AllRules returns every rule, by ID.
func (t *Tx) AllRules() ([]Rule, error) { return allRules(t.db) }

// RulesRevision is Store.RulesRevision read in the transaction.
func (t *Tx) RulesRevision() (int64, error) { return rulesRevision(t.db) }

// RuleByName returns the rule called name, or ErrNotFound.
func (t *Tx) RuleByName(name string) (Rule, error) {
	var r Rule
	err := t.db.Where("name = ?", name).Take(&r).Error
	return r, translate(err)
}

// CreateRule inserts r at version 1 and sets its ID and times; ErrConflict
// if its name is taken.
func (t *Tx) CreateRule(r *Rule) error {
	r.ID, r.Version = 0, 1
	return translate(t.db.Create(r).Error)
}

// createBatchSize is how many rows one INSERT of a batch carries: a
// statement's bound values stay far below SQLite's limit of 32,766.
const createBatchSize = 500

// UpdateRule writes r over the stored row if that is still at r.Version,
// then sets r.Version to the next version and r.UpdatedAt. ErrStale if the
// row has moved on, ErrNotFound if it is gone, ErrConflict if the name is
// taken.
func (t *Tx) UpdateRule(r *Rule) error {
	now := t.db.NowFunc()
	res := t.db.Model(&Rule{}).Where("id = ? AND version = ?", r.ID, r.Version).Updates(map[string]any{
		"name":        r.Name,
		"kind":        r.Kind,
		"app":         r.App,
		"resource":    r.Resource,
		"enabled":     r.Enabled,
		"mode":        r.Mode,
		"description": r.Description,
		"spec":        r.Spec,
		"version":     r.Version + 1,
		"updated_at":  now,
	})
	if err := translate(res.Error); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return t.missOrStale(r.ID)
	}
	r.Version++
	r.UpdatedAt = now
	return nil
}

// DeleteRule removes the rule with id if it is still at version. ErrStale
// if it has moved on, ErrNotFound if it is gone. Its revisions stay.
func (t *Tx) DeleteRule(id, version int64) error {
	res := t.db.Where("id = ? AND version = ?", id, version).Delete(&Rule{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return t.missOrStale(id)
	}
	return nil
}

// AddRevision records a version of a rule.
func (t *Tx) AddRevision(rev *RuleRevision) error {
	rev.ID = 0
	return translate(t.db.Create(rev).Error)
}

// RuleWrite is one version of a rule as a write makes it: the row, what
// made it, and who wrote it and why, which its revision keeps.
type RuleWrite struct {
	// Rule is the row as written: WriteRule sets the ID, version and
	// times the write gives it.
	Rule Rule
	// Action is ActionCreate, ActionUpdate, ActionRollback or
	// ActionDelete.
	Action        string
	Actor, Reason string
}

// WriteRule writes w.Rule by its action and records the version it makes
// as a revision, in t: a create inserts it at version 1 (CreateRule), an
// update or a rollback writes it over version w.Rule.Version
// (UpdateRule), a delete removes it at that version (DeleteRule) and
// records its last content at the next one. Errors as those methods'.
func (t *Tx) WriteRule(w *RuleWrite) error {
	var err error
	switch w.Action {
	case ActionCreate:
		err = t.CreateRule(&w.Rule)
	case ActionDelete:
		if err = t.DeleteRule(w.Rule.ID, w.Rule.Version); err == nil {
			w.Rule.Version++
		}
	default:
		err = t.UpdateRule(&w.Rule)
	}
	if err != nil {
		return err
	}
	rev, err := w.revision()
	if err != nil {
		return err
	}
	return t.AddRevision(&rev)
}

// CreateRules inserts the rules of ws at version 1, as WriteRule creates
// each, a batch of rows per statement, sets their IDs and times, and
// records their revisions; ErrConflict if a name is taken.
func (t *Tx) CreateRules(ws []RuleWrite) error {
	rows := make([]Rule, len(ws))
	for i := range ws {
		rows[i] = ws[i].Rule
		rows[i].ID, rows[i].Version = 0, 1
	}
	if err := translate(t.db.CreateInBatches(rows, createBatchSize).Error); err != nil {
		return err
	}
	revs := make([]RuleRevision, len(ws))
	for i := range ws {
		ws[i].Rule = rows[i]
		rev, err := ws[i].revision()
		if err != nil {
			return err
		}
		revs[i] = rev
	}
	return translate(t.db.CreateInBatches(revs, createBatchSize).Error)
}

// revisionFormat is the version of revisionContent that revisions are
// written in. Migration 00005 turned the rows of before it (the rule as the
// API showed it) into format 1.
const revisionFormat = 1

// revisionContent is the content of a revision row: the rule's row, its
// spec as a JSON document. It is the store's own format, so that rollback
// reads a version back without the API's decoder, and a change of the
// API's shape leaves history alone.
type revisionContent struct {
	Format      int             `json:"format"`
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	App         string          `json:"app,omitempty"` // absent in revisions written before rules had an app
	Resource    string          `json:"resource"`
	Enabled     bool            `json:"enabled"`
	Mode        string          `json:"mode"`
	Description string          `json:"description"`
	Spec        json.RawMessage `json:"spec"`
	Version     int64           `json:"version"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
}

// revision is the history row of the version w made.
func (w *RuleWrite) revision() (RuleRevision, error) {
	r := w.Rule
	content, err := json.Marshal(revisionContent{
		Format: revisionFormat, ID: r.ID, Name: r.Name, Kind: r.Kind, App: r.App, Resource: r.Resource,
		Enabled: r.Enabled, Mode: r.Mode, Description: r.Description, Spec: json.RawMessage(r.Spec),
		Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	})
	if err != nil {
		return RuleRevision{}, err
	}
	return RuleRevision{
		RuleID: r.ID, Version: r.Version, Action: w.Action, Content: string(content),
		Actor: w.Actor, Reason: w.Reason,
	}, nil
}

// Row is the rule's row as the revision kept it.
func (rev RuleRevision) Row() (Rule, error) {
	var c revisionContent
	if err := json.Unmarshal([]byte(rev.Content), &c); err != nil {
		return Rule{}, fmt.Errorf("rule %d revision %d: %w", rev.RuleID, rev.Version, err)
	}
	if c.Format != revisionFormat {
		return Rule{}, fmt.Errorf("rule %d revision %d: format %d, not %d", rev.RuleID, rev.Version, c.Format, revisionFormat)
	}
	return Rule{
		ID: c.ID, Name: c.Name, Kind: c.Kind, App: c.App, Resource: c.Resource,
		Enabled: c.Enabled, Mode: c.Mode, Description: c.Description, Spec: string(c.Spec),
		Version: c.Version, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}, nil
}

// GetRevision returns version of the rule with ruleID, or ErrNotFound.
func (t *Tx) GetRevision(ruleID, version int64) (RuleRevision, error) {
	var rev RuleRevision
	err := t.db.Where("rule_id = ? AND version = ?", ruleID, version).Take(&rev).Error
	return rev, translate(err)
}

func (t *Tx) missOrStale(id int64) error {
	if _, err := getRule(t.db, id); err != nil {
		return err
	}
	return ErrStale
}

func getRule(db *gorm.DB, id int64) (Rule, error) {
	var r Rule
	err := db.Where("id = ?", id).Take(&r).Error
	return r, translate(err)
}

func allRules(db *gorm.DB) ([]Rule, error) {
	rules := []Rule{}
	err := db.Order("id").Find(&rules).Error
	return rules, err
}

// translate turns GORM's errors into the store's.
func translate(err error) error {
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return ErrNotFound
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return ErrConflict
	}
	return err
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
