package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Webhooks are kept as an outbox (docs/webhooks.md): an event is written
// with one pending delivery per endpoint that wants it, in the
// transaction of the change it announces, and a delivery worker claims
// the due deliveries, posts them and records how each attempt went. A
// claim is a lease (claimed_by, claim_until_ms): on PostgreSQL replicas
// claim with FOR UPDATE SKIP LOCKED, so two never hold the same delivery,
// and a replica that dies holding one lets it go when its lease ends.

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// WebhookEndpoint is a registered receiver of events.
type WebhookEndpoint struct {
	ID          int64 `gorm:"primaryKey"`
	URL         string
	Secret      string
	Description string
	// Events are the event types it wants; "*" is every type.
	Events []string `gorm:"serializer:json"`
	// App and Resource, when not "", keep only the events of that app or
	// resource.
	App      string
	Resource string
	// Enabled is the admin's switch: a disabled endpoint gets no new
	// deliveries and its pending ones wait.
	Enabled bool
	// PausedReason is why the delivery worker paused the endpoint; "" when
	// it is not paused. A paused endpoint's deliveries wait until an admin
	// resumes it.
	PausedReason string
	PausedAtMs   int64
	// Failures counts the failed attempts since the last delivered one,
	// and FailingSinceMs is when the first of them was made (0: none).
	Failures       int
	FailingSinceMs int64
	// BlockRatePercent and BlockRateMinutes are the endpoint's
	// resource.blockRate condition: a resource's block rate at or over
	// that percent in each of that many finished minutes.
	BlockRatePercent int
	BlockRateMinutes int
	CreatedBy        string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// TableName is the webhook endpoints table.
func (WebhookEndpoint) TableName() string { return "webhook_endpoints" }

// Wants reports whether the endpoint takes an event of type kind about
// apps and resources.
func (e *WebhookEndpoint) Wants(kind string, apps, resources []string) bool {
	if !slices.Contains(e.Events, "*") && !slices.Contains(e.Events, kind) {
		return false
	}
	if e.App != "" && !slices.Contains(apps, e.App) {
		return false
	}
	return e.Resource == "" || slices.Contains(resources, e.Resource)
}

// WebhookEvent is one event announced to the endpoints: ID is the stable
// id receivers de-duplicate by (webhook-id).
type WebhookEvent struct {
	ID          string `gorm:"primaryKey"`
	Type        string
	Payload     string
	CreatedAtMs int64
}

// TableName is the webhook events table.
func (WebhookEvent) TableName() string { return "webhook_events" }

// WebhookDelivery is one event to deliver to one endpoint.
type WebhookDelivery struct {
	ID            int64 `gorm:"primaryKey"`
	EventID       string
	EndpointID    int64
	State         string
	Attempts      int
	NextAttemptMs int64
	// GiveUpMs is when a failed attempt makes the delivery failed: set at
	// its first failure, cleared when its endpoint is resumed.
	GiveUpMs      int64
	LastStatus    int
	LastError     string
	LastAttemptMs int64
	ClaimedBy     string
	ClaimUntilMs  int64
	CreatedAtMs   int64
}

// TableName is the webhook deliveries table.
func (WebhookDelivery) TableName() string { return "webhook_deliveries" }

// Announcement is an event to publish.
type Announcement struct {
	// Type is the event's type ("rule.created", …).
	Type string
	// Data is the JSON of the event's data: its payload is
	// {"type", "timestamp", "data"}, as Standard Webhooks recommends.
	Data []byte
	// Apps and Resources are what the event is about, matched against an
	// endpoint's app and resource filters.
	Apps, Resources []string
	// Endpoint, when not 0, delivers the event to that endpoint alone,
	// whatever its filters (a test event, a block-rate alert).
	Endpoint int64
}

// Publish writes a in t's transaction, for the endpoints that want it:
// it is delivered if, and only if, the transaction commits. It returns
// the event's id, "" when no endpoint wants it (nothing is written).
func (t *Tx) Publish(a Announcement) (string, error) { return publish(t.db, a) }

// Publish writes a in a transaction of its own; see Tx.Publish.
func (s *Store) Publish(ctx context.Context, a Announcement) (string, error) {
	var id string
	err := s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		var err error
		id, err = publish(db, a)
		return err
	})
	return id, err
}

func publish(db *gorm.DB, a Announcement) (string, error) {
	q := db.Where("enabled = ?", true)
	if a.Endpoint != 0 {
		q = db.Where("id = ?", a.Endpoint)
	}
	var endpoints []WebhookEndpoint
	if err := q.Order("id").Find(&endpoints).Error; err != nil {
		return "", err
	}
	if a.Endpoint == 0 {
		endpoints = slices.DeleteFunc(endpoints, func(e WebhookEndpoint) bool { return !e.Wants(a.Type, a.Apps, a.Resources) })
	}
	if len(endpoints) == 0 {
		return "", nil
	}
	id, err := newEventID()
	if err != nil {
		return "", err
	}
	now := db.NowFunc()
	nowMs := now.UnixMilli()
	payload, err := json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{a.Type, now.Truncate(time.Millisecond), a.Data})
	if err != nil {
		return "", err
	}
	if err := db.Create(&WebhookEvent{ID: id, Type: a.Type, Payload: string(payload), CreatedAtMs: nowMs}).Error; err != nil {
		return "", err
	}
	deliveries := make([]WebhookDelivery, len(endpoints))
	for i, e := range endpoints {
		deliveries[i] = WebhookDelivery{EventID: id, EndpointID: e.ID, State: DeliveryPending, NextAttemptMs: nowMs, CreatedAtMs: nowMs}
	}
	return id, db.CreateInBatches(deliveries, createBatchSize).Error
}

// newEventID is a "msg_" id of 128 random bits, as Standard Webhooks'
// examples spell them.
func newEventID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}

// CreateWebhook inserts e and sets its ID and times.
func (s *Store) CreateWebhook(ctx context.Context, e *WebhookEndpoint) error {
	e.ID = 0
	return translate(s.db.WithContext(ctx).Create(e).Error)
}

// Webhooks returns every endpoint, by ID.
func (s *Store) Webhooks(ctx context.Context) ([]WebhookEndpoint, error) {
	out := []WebhookEndpoint{}
	return out, s.db.WithContext(ctx).Order("id").Find(&out).Error
}

// Webhook returns endpoint id, or ErrNotFound.
func (s *Store) Webhook(ctx context.Context, id int64) (WebhookEndpoint, error) {
	var e WebhookEndpoint
	return e, translate(s.db.WithContext(ctx).Where("id = ?", id).Take(&e).Error)
}

// UpdateWebhook writes e's URL, description, filters and switch over
// endpoint e.ID; ErrNotFound if it is gone.
func (s *Store) UpdateWebhook(ctx context.Context, e *WebhookEndpoint) error {
	db := s.db.WithContext(ctx)
	e.UpdatedAt = db.NowFunc()
	res := db.Model(&WebhookEndpoint{}).Where("id = ?", e.ID).Updates(map[string]any{
		"url": e.URL, "description": e.Description, "events": e.Events, "app": e.App,
		"resource": e.Resource, "enabled": e.Enabled, "updated_at": e.UpdatedAt,
		"block_rate_percent": e.BlockRatePercent, "block_rate_minutes": e.BlockRateMinutes,
	})
	if res.Error != nil {
		return translate(res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// RotateWebhookSecret sets endpoint id's secret; ErrNotFound if it is gone.
func (s *Store) RotateWebhookSecret(ctx context.Context, id int64, secret string) error {
	db := s.db.WithContext(ctx)
	res := db.Model(&WebhookEndpoint{}).Where("id = ?", id).Updates(map[string]any{"secret": secret, "updated_at": db.NowFunc()})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteWebhook removes endpoint id and its deliveries; ErrNotFound if it
// is gone.
func (s *Store) DeleteWebhook(ctx context.Context, id int64) error {
	return s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		if err := db.Where("endpoint_id = ?", id).Delete(&WebhookDelivery{}).Error; err != nil {
			return err
		}
		res := db.Where("id = ?", id).Delete(&WebhookEndpoint{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// ResumeWebhook ends endpoint id's pause at nowMs: its pending deliveries
// are due at once, each with a new retry period from its next failure.
// ErrNotFound if it is gone.
func (s *Store) ResumeWebhook(ctx context.Context, id, nowMs int64) error {
	return s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		res := db.Model(&WebhookEndpoint{}).Where("id = ?", id).Updates(map[string]any{
			"paused_reason": "", "paused_at_ms": 0, "failures": 0, "failing_since_ms": 0, "updated_at": db.NowFunc(),
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return db.Model(&WebhookDelivery{}).Where("endpoint_id = ? AND state = ?", id, DeliveryPending).
			Updates(map[string]any{"next_attempt_ms": nowMs, "give_up_ms": 0}).Error
	})
}

// DeliveryRecord is a delivery with its event's type, as lists show it.
type DeliveryRecord struct {
	WebhookDelivery
	EventType string
}

// WebhookDeliveries returns endpoint id's newest limit deliveries, newest
// first.
func (s *Store) WebhookDeliveries(ctx context.Context, id int64, limit int) ([]DeliveryRecord, error) {
	out := []DeliveryRecord{}
	err := s.db.WithContext(ctx).Table("webhook_deliveries AS d").
		Select("d.*, e.type AS event_type").
		Joins("JOIN webhook_events e ON e.id = d.event_id").
		Where("d.endpoint_id = ?", id).Order("d.id DESC").Limit(limit).Scan(&out).Error
	return out, err
}

// DueDelivery is a claimed delivery with what posting it takes.
type DueDelivery struct {
	WebhookDelivery
	EventType        string
	Payload          string
	EventCreatedAtMs int64
	URL              string
	Secret           string
}

// ClaimDeliveries leases to node, until nowMs+leaseMs, at most limit
// deliveries that are due at nowMs, of endpoints neither disabled nor
// paused and not leased to anyone, oldest due first.
func (s *Store) ClaimDeliveries(ctx context.Context, node string, nowMs, leaseMs int64, limit int) ([]DueDelivery, error) {
	// Looked for first on the read pool: most polls find nothing, and
	// should not take SQLite's write lock (or a PostgreSQL transaction)
	// to learn it.
	var due []int64
	err := s.read.WithContext(ctx).Model(&WebhookDelivery{}).Select("id").
		Where("state = ? AND next_attempt_ms <= ? AND claim_until_ms <= ?", DeliveryPending, nowMs, nowMs).
		Where("endpoint_id IN (SELECT id FROM webhook_endpoints WHERE enabled = ? AND paused_reason = '')", true).
		Limit(1).Find(&due).Error
	if err != nil || len(due) == 0 {
		return nil, err
	}
	var out []DueDelivery
	err = s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		q := db.Model(&WebhookDelivery{}).Select("id").
			Where("state = ? AND next_attempt_ms <= ? AND claim_until_ms <= ?", DeliveryPending, nowMs, nowMs).
			Where("endpoint_id IN (SELECT id FROM webhook_endpoints WHERE enabled = ? AND paused_reason = '')", true).
			Order("next_attempt_ms, id").Limit(limit)
		if onPostgres(db) {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		var ids []int64
		if err := q.Find(&ids).Error; err != nil || len(ids) == 0 {
			return err
		}
		if err := db.Model(&WebhookDelivery{}).Where("id IN ?", ids).
			Updates(map[string]any{"claimed_by": node, "claim_until_ms": nowMs + leaseMs}).Error; err != nil {
			return err
		}
		return db.Table("webhook_deliveries AS d").
			Select("d.*, e.type AS event_type, e.payload, e.created_at_ms AS event_created_at_ms, w.url, w.secret").
			Joins("JOIN webhook_events e ON e.id = d.event_id").
			Joins("JOIN webhook_endpoints w ON w.id = d.endpoint_id").
			Where("d.id IN ?", ids).Order("d.next_attempt_ms, d.id").Scan(&out).Error
	})
	return out, err
}

// ReleaseDeliveries ends node's claims on the deliveries it has not
// finished, so that another worker takes them at once rather than when
// their leases end.
func (s *Store) ReleaseDeliveries(ctx context.Context, node string) error {
	return s.db.WithContext(ctx).Model(&WebhookDelivery{}).Where("claimed_by = ? AND state = ?", node, DeliveryPending).
		Updates(map[string]any{"claimed_by": "", "claim_until_ms": 0}).Error
}

// webhookInstanceState is an instance's state last announced to the
// webhooks.
type webhookInstanceState struct {
	UID   string `gorm:"primaryKey"`
	State string
}

// TableName is the announced instance states table.
func (webhookInstanceState) TableName() string { return "webhook_instance_states" }

// AnnouncedInstanceStates returns the instance states last announced to
// the webhooks, by instance id. It reads through the read pool: every
// replica reads every state every few seconds, a fleet's thousands of
// rows, and on SQLite the writer's one connection held for that read
// kept the reports' group commits waiting. A state read just before
// another replica's change is safe: AnnounceInstanceState changes only
// the state it is given.
func (s *Store) AnnouncedInstanceStates(ctx context.Context) (map[string]string, error) {
	var rows []webhookInstanceState
	if err := s.read.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.UID] = r.State
	}
	return out, nil
}

// AnnounceInstanceState records that instance uid went from state from
// ("" for an instance none was recorded of) to state to and, in the same
// transaction, publishes a, unless its Type is "". It reports false, and
// publishes nothing, when the recorded state is no longer from: another
// replica announced the change first.
func (s *Store) AnnounceInstanceState(ctx context.Context, uid, from, to string, a Announcement) (bool, error) {
	won := false
	err := s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		var res *gorm.DB
		if from == "" {
			res = db.Clauses(clause.OnConflict{DoNothing: true}).Create(&webhookInstanceState{UID: uid, State: to})
		} else {
			res = db.Model(&webhookInstanceState{}).Where("uid = ? AND state = ?", uid, from).Update("state", to)
		}
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		won = true
		if a.Type == "" {
			return nil
		}
		_, err := publish(db, a)
		return err
	})
	return won, err
}

// webhookBlockAlert is a resource whose sustained block rate was
// announced to an endpoint.
type webhookBlockAlert struct {
	EndpointID int64  `gorm:"primaryKey"`
	Resource   string `gorm:"primaryKey"`
}

// TableName is the block-rate alerts table.
func (webhookBlockAlert) TableName() string { return "webhook_block_alerts" }

// BlockRateMinCalls is the calls a minute needs to count towards a
// sustained block rate: a minute of three calls, two blocked, says little.
const BlockRateMinCalls = 10

// SustainedBlocks returns, by name, the resources whose every minute from
// fromMs (inclusive) to toMs (exclusive), minutes of the fleet's summed
// figures, had at least BlockRateMinCalls calls, percent or more of them
// blocked.
func (s *Store) SustainedBlocks(ctx context.Context, fromMs, toMs int64, percent int) ([]string, error) {
	minutes := (toMs - fromMs) / MinuteMs
	out := []string{}
	err := s.read.WithContext(ctx).Raw(`SELECT r.name FROM metric_minutes AS m JOIN resources AS r ON r.id = m.resource_id
		WHERE m.start_ms >= ? AND m.start_ms < ? AND m.pass + m.block >= ? AND m.block * 100 >= ? * (m.pass + m.block)
		GROUP BY r.name HAVING count(*) = ? ORDER BY r.name`, fromMs, toMs, BlockRateMinCalls, percent, minutes).Scan(&out).Error
	return out, err
}

// BlockAlerts returns the resources whose sustained block rate is
// announced to endpoint id.
func (s *Store) BlockAlerts(ctx context.Context, id int64) ([]string, error) {
	out := []string{}
	return out, s.db.WithContext(ctx).Model(&webhookBlockAlert{}).Where("endpoint_id = ?", id).Order("resource").Pluck("resource", &out).Error
}

// StartBlockAlert records that resource's sustained block rate is
// announced to endpoint id and publishes a to it in the same
// transaction; it reports false, publishing nothing, if it was already
// (another replica first).
func (s *Store) StartBlockAlert(ctx context.Context, id int64, resource string, a Announcement) (bool, error) {
	won := false
	err := s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&webhookBlockAlert{EndpointID: id, Resource: resource})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		won = true
		a.Endpoint = id
		_, err := publish(db, a)
		return err
	})
	return won, err
}

// EndBlockAlert forgets that resource's block rate was announced to
// endpoint id: its next sustained block rate is announced again.
func (s *Store) EndBlockAlert(ctx context.Context, id int64, resource string) error {
	return s.db.WithContext(ctx).Where("endpoint_id = ? AND resource = ?", id, resource).Delete(&webhookBlockAlert{}).Error
}

// Attempt is how one delivery attempt went.
type Attempt struct {
	// AtMs is when it was made.
	AtMs int64
	// Status is the receiver's HTTP status, 0 when none came.
	Status int
	// Error is why it failed; "" when it was delivered.
	Error string
	// NextAttemptMs is when a failed delivery is tried again.
	NextAttemptMs int64
	// RetryForMs is how long after its first failure a delivery is
	// tried again before it is failed.
	RetryForMs int64
	// PauseAfterFailures and PauseAfterMs pause the endpoint once it has
	// failed that many attempts in a row over at least that long.
	PauseAfterFailures int
	PauseAfterMs       int64
}

// FinishDelivery records attempt on delivery id, claimed by node: a
// delivered one if attempt has no Error, else a retry or, past its retry
// period, a failure; the endpoint's run of failures follows, and it is
// paused when the run is long enough. It reports whether this attempt
// paused the endpoint. A delivery whose lease node lost is left alone.
func (s *Store) FinishDelivery(ctx context.Context, id int64, node string, attempt Attempt) (paused bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		var d WebhookDelivery
		err := db.Where("id = ? AND claimed_by = ? AND state = ?", id, node, DeliveryPending).Take(&d).Error
		if err != nil {
			return translate(err)
		}
		update := map[string]any{
			"attempts": d.Attempts + 1, "last_status": attempt.Status, "last_error": attempt.Error,
			"last_attempt_ms": attempt.AtMs, "claimed_by": "", "claim_until_ms": 0,
		}
		if attempt.Error == "" {
			update["state"] = DeliveryDelivered
			if err := db.Model(&d).Updates(update).Error; err != nil {
				return err
			}
			return db.Model(&WebhookEndpoint{}).Where("id = ?", d.EndpointID).
				Updates(map[string]any{"failures": 0, "failing_since_ms": 0}).Error
		}
		giveUp := d.GiveUpMs
		if giveUp == 0 {
			giveUp = attempt.AtMs + attempt.RetryForMs
		}
		update["give_up_ms"] = giveUp
		if attempt.NextAttemptMs > giveUp {
			update["state"] = DeliveryFailed
		} else {
			update["next_attempt_ms"] = attempt.NextAttemptMs
		}
		if err := db.Model(&d).Updates(update).Error; err != nil {
			return err
		}
		var e WebhookEndpoint
		if err := db.Where("id = ?", d.EndpointID).Take(&e).Error; err != nil {
			return translate(err)
		}
		e.Failures++
		if e.FailingSinceMs == 0 {
			e.FailingSinceMs = attempt.AtMs
		}
		fields := map[string]any{"failures": e.Failures, "failing_since_ms": e.FailingSinceMs}
		if e.PausedReason == "" && e.Failures >= attempt.PauseAfterFailures && attempt.AtMs-e.FailingSinceMs >= attempt.PauseAfterMs {
			paused = true
			fields["paused_reason"] = fmt.Sprintf("%d attempts in a row failed since %s; the last: %s",
				e.Failures, time.UnixMilli(e.FailingSinceMs).UTC().Format(time.RFC3339), attempt.Error)
			fields["paused_at_ms"] = attempt.AtMs
		}
		return db.Model(&e).Updates(fields).Error
	})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return paused, err
}

// PruneWebhookDeliveries deletes the delivered and failed deliveries last
// tried before beforeMs, and the events left without deliveries created
// before it, and returns how many deliveries it deleted.
func (s *Store) PruneWebhookDeliveries(ctx context.Context, beforeMs int64) (int64, error) {
	db := s.db.WithContext(ctx)
	res := db.Where("state IN ? AND last_attempt_ms < ?", []string{DeliveryDelivered, DeliveryFailed}, beforeMs).Delete(&WebhookDelivery{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune webhook_deliveries: %w", res.Error)
	}
	err := db.Where("created_at_ms < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)", beforeMs).
		Delete(&WebhookEvent{}).Error
	if err != nil {
		return res.RowsAffected, fmt.Errorf("prune webhook_events: %w", err)
	}
	return res.RowsAffected, nil
}
