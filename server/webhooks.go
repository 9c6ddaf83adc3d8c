package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/webhook"
	"github.com/sluicehq/sluice/store"
)

// Event types of the webhooks besides the rule domain's (rules.EventRule…).
const (
	eventBreakerOpened   = "breaker.opened"
	eventBreakerHalfOpen = "breaker.halfOpen"
	eventBreakerClosed   = "breaker.closed"
	eventTest            = "test"
)

// webhookEventTypes are the types an endpoint may ask for, "*" aside.
var webhookEventTypes = []string{
	rules.EventRuleCreated, rules.EventRuleUpdated, rules.EventRuleDeleted, rules.EventRuleRolledBack,
	rules.EventRulesApplied, eventBreakerOpened, eventBreakerHalfOpen, eventBreakerClosed,
	eventClusterFallbackEntered, eventClusterFallbackLeft, eventInstanceStale, eventInstanceGone, eventInstanceBack,
	eventResourceOverflow, eventResourceBlockRate,
}

// Bounds of the endpoints: each rule write reads them all, and writes a
// delivery per endpoint that wants its event.
const (
	maxWebhooks           = 100
	maxWebhookDescription = 500
	maxWebhookDeliveries  = 100
)

// Webhook is an endpoint as lists show it: never its secret.
type Webhook struct {
	ID          int64  `json:"id" example:"3"`
	URL         string `json:"url" example:"https://hooks.example.com/sluice"`
	Description string `json:"description" example:"on-call channel"`
	// Events are the event types it takes; "*" is every type.
	Events []string `json:"events" example:"breaker.opened,rule.updated"`
	// App and Resource, when set, keep only the events about that app or
	// resource.
	App      string `json:"app,omitempty" example:"checkout"`
	Resource string `json:"resource,omitempty" example:"POST:/api/pay"`
	Enabled  bool   `json:"enabled" example:"true"`
	// State is active, paused (the delivery worker paused it after it
	// kept failing: pausedReason says why; POST .../resume ends it) or
	// disabled (enabled is false).
	State        string     `json:"state" enums:"active,paused,disabled" example:"active"`
	PausedReason string     `json:"pausedReason,omitempty" example:"20 attempts in a row failed since 2026-11-28T19:00:00Z; the last: HTTP 503"`
	PausedAt     *time.Time `json:"pausedAt,omitempty" format:"date-time"`
	// Failures counts the attempts failed in a row.
	Failures int `json:"failures" example:"0"`
	// BlockRatePercent and BlockRateMinutes are its resource.blockRate
	// condition: a resource's calls blocked at or over that percent in
	// each of that many finished minutes.
	BlockRatePercent int       `json:"blockRatePercent" example:"50"`
	BlockRateMinutes int       `json:"blockRateMinutes" example:"5"`
	CreatedBy        string    `json:"createdBy" example:"alice"`
	CreatedAt        time.Time `json:"createdAt" format:"date-time"`
	UpdatedAt        time.Time `json:"updatedAt" format:"date-time"`
}

// NewWebhook is an endpoint just created, with its secret: shown this once.
type NewWebhook struct {
	Webhook
	// Secret signs every delivery (webhook-signature): "whsec_" and the
	// base64 of 32 bytes, as Standard Webhooks spells it.
	Secret string `json:"secret" example:"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`
}

// WebhookRequest creates an endpoint, or changes one (PATCH: only the
// fields present).
type WebhookRequest struct {
	// URL is where events are posted: http or https, no user or password,
	// at most 2048 bytes, on a host that resolves to no loopback,
	// link-local, private or other internal address (unless the server
	// runs with --webhook-allow-private). Required on create.
	URL string `json:"url" example:"https://hooks.example.com/sluice" validate:"optional"`
	// Description is optional: at most 500 characters.
	Description string `json:"description" example:"on-call channel" validate:"optional"`
	// Events are the event types to deliver, or ["*"] for every type.
	// Required on create.
	Events []string `json:"events" example:"breaker.opened,rule.updated" validate:"optional"`
	// App, optional, keeps only the events about that app's rules.
	App string `json:"app" example:"checkout" validate:"optional"`
	// Resource, optional, keeps only the events about that resource.
	Resource string `json:"resource" example:"POST:/api/pay" validate:"optional"`
	// Enabled is optional: default true. A disabled endpoint gets no new
	// events, and its pending deliveries wait.
	Enabled *bool `json:"enabled" example:"true" validate:"optional"`
	// BlockRatePercent is optional (1 to 100, default 50): the
	// resource.blockRate condition's share of blocked calls.
	BlockRatePercent int `json:"blockRatePercent" example:"50" validate:"optional"`
	// BlockRateMinutes is optional (1 to 60, default 5): the
	// resource.blockRate condition's run of minutes.
	BlockRateMinutes int `json:"blockRateMinutes" example:"5" validate:"optional"`
}

// WebhookList is every endpoint.
type WebhookList struct {
	Items []Webhook `json:"items"`
}

// WebhookDelivery is one event's delivery to an endpoint.
type WebhookDelivery struct {
	ID int64 `json:"id" example:"81"`
	// EventID is the event's stable id, the webhook-id header.
	EventID   string `json:"eventId" example:"msg_2kwpbgllafxdpx2ai54ppj85f4"`
	EventType string `json:"eventType" example:"breaker.opened"`
	State     string `json:"state" enums:"pending,delivered,failed" example:"delivered"`
	Attempts  int    `json:"attempts" example:"1"`
	// NextAttemptAt is when a pending delivery is tried next.
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty" format:"date-time"`
	// LastStatus is the receiver's last HTTP status, 0 when none came.
	LastStatus    int        `json:"lastStatus" example:"204"`
	LastError     string     `json:"lastError,omitempty" example:"HTTP 503: try later"`
	LastAttemptAt *time.Time `json:"lastAttemptAt,omitempty" format:"date-time"`
	CreatedAt     time.Time  `json:"createdAt" format:"date-time"`
}

// WebhookDeliveryList is an endpoint's newest deliveries, newest first.
type WebhookDeliveryList struct {
	Items []WebhookDelivery `json:"items"`
}

// WebhookTest is the test event a test request queued.
type WebhookTest struct {
	// EventID is the event's id, the webhook-id its delivery carries.
	EventID string `json:"eventId" example:"msg_2kwpbgllafxdpx2ai54ppj85f4"`
}

// TestEvent is the data of a test event.
type TestEvent struct {
	Webhook int64  `json:"webhook" example:"3"`
	Actor   string `json:"actor" example:"alice"`
}

type webhookHandler struct {
	store        *store.Store
	worker       *webhook.Worker
	allowPrivate bool
	resolver     *net.Resolver
	now          func() time.Time
}

func bindWebhooks(api apiRoutes, h *webhookHandler) {
	api.get("/webhooks", admins, h.list)
	api.post("/webhooks", admins, h.create)
	api.get("/webhooks/:id", admins, h.get)
	api.patch("/webhooks/:id", admins, h.update)
	api.delete("/webhooks/:id", admins, h.delete)
	api.post("/webhooks/:id/test", admins, h.test)
	api.post("/webhooks/:id/resume", admins, h.resume)
	api.post("/webhooks/:id/rotate-secret", admins, h.rotateSecret)
	api.get("/webhooks/:id/deliveries", admins, h.deliveries)
}

func webhookOf(e store.WebhookEndpoint) Webhook {
	w := Webhook{
		ID: e.ID, URL: e.URL, Description: e.Description, Events: e.Events, App: e.App, Resource: e.Resource,
		Enabled: e.Enabled, State: "active", PausedReason: e.PausedReason, Failures: e.Failures,
		BlockRatePercent: e.BlockRatePercent, BlockRateMinutes: e.BlockRateMinutes,
		CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC(),
	}
	if w.Events == nil {
		w.Events = []string{}
	}
	switch {
	case !e.Enabled:
		w.State = "disabled"
	case e.PausedReason != "":
		w.State = "paused"
	}
	if e.PausedAtMs != 0 {
		at := time.UnixMilli(e.PausedAtMs).UTC()
		w.PausedAt = &at
	}
	return w
}

// list answers every webhook endpoint, without its secret.
//
//	@Summary	List webhook endpoints
//	@ID			listWebhooks
//	@Tags		webhooks
//	@Produce	json
//	@Success	200	{object}	WebhookList
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/webhooks [get]
func (h *webhookHandler) list(c *fiber.Ctx) error {
	all, err := h.store.Webhooks(c.UserContext())
	if err != nil {
		return err
	}
	items := make([]Webhook, len(all))
	for i, e := range all {
		items[i] = webhookOf(e)
	}
	return writeJSON(c, http.StatusOK, WebhookList{Items: items})
}

// get answers one webhook endpoint, without its secret.
//
//	@Summary	Get a webhook endpoint
//	@ID			getWebhook
//	@Tags		webhooks
//	@Produce	json
//	@Param		id	path		int	true	"endpoint id"
//	@Success	200	{object}	Webhook
//	@Failure	400	{object}	ErrorResponse
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such endpoint"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/webhooks/{id} [get]
func (h *webhookHandler) get(c *fiber.Ctx) error {
	e, err := h.endpoint(c)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, webhookOf(e))
}

// endpoint reads the endpoint the path's id names.
func (h *webhookHandler) endpoint(c *fiber.Ctx) (store.WebhookEndpoint, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	e, err := h.store.Webhook(c.UserContext(), id)
	if err != nil {
		return e, fmt.Errorf("no webhook has id %d: %w", id, err)
	}
	return e, nil
}

// create registers an endpoint and answers its secret, this once.
//
//	@Summary		Register a webhook endpoint
//	@ID				createWebhook
//	@Tags			webhooks
//	@Description	The server makes the endpoint's signing secret and answers it this once. The URL is refused (422 naming url) if its host resolves to a loopback, link-local (the cloud metadata address 169.254.169.254 among them), private, carrier-grade NAT, unspecified, multicast or reserved address, unless the server runs with --webhook-allow-private; each delivery checks the address it connects to again. docs/webhooks.md has the events, their payloads and the signature.
//	@Accept			json
//	@Produce		json
//	@Param			webhook	body		WebhookRequest	true	"url and events required"
//	@Success		201		{object}	NewWebhook
//	@Failure		400		{object}	ErrorResponse
//	@Failure		401		{object}	ErrorResponse
//	@Failure		403		{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		409		{object}	ErrorResponse	"there are 100 webhooks already"
//	@Failure		413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422		{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/webhooks [post]
func (h *webhookHandler) create(c *fiber.Ctx) error {
	e := store.WebhookEndpoint{Enabled: true, BlockRatePercent: defaultBlockRatePercent, BlockRateMinutes: defaultBlockRateMinutes}
	if err := h.decode(c, &e, true); err != nil {
		return err
	}
	all, err := h.store.Webhooks(c.UserContext())
	if err != nil {
		return err
	}
	if len(all) >= maxWebhooks {
		return Conflict(fmt.Sprintf("there are %d webhooks, the most a server keeps: delete one first", len(all)))
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return err
	}
	e.Secret, e.CreatedBy = secret, principalOf(c).actorName()
	if err := h.store.CreateWebhook(c.UserContext(), &e); err != nil {
		return err
	}
	c.Location(fmt.Sprintf("%s/%d", c.Path(), e.ID))
	return writeJSON(c, http.StatusCreated, NewWebhook{Webhook: webhookOf(e), Secret: secret})
}

// update changes the fields the body names.
//
//	@Summary	Change a webhook endpoint
//	@ID			updateWebhook
//	@Tags		webhooks
//	@Accept		json
//	@Produce	json
//	@Param		id		path		int				true	"endpoint id"
//	@Param		webhook	body		WebhookRequest	true	"only the fields to change"
//	@Success	200		{object}	Webhook
//	@Failure	400		{object}	ErrorResponse
//	@Failure	401		{object}	ErrorResponse
//	@Failure	403		{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404		{object}	ErrorResponse	"no such endpoint"
//	@Failure	413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure	415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure	422		{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure	429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/webhooks/{id} [patch]
func (h *webhookHandler) update(c *fiber.Ctx) error {
	e, err := h.endpoint(c)
	if err != nil {
		return err
	}
	if err := h.decode(c, &e, false); err != nil {
		return err
	}
	if err := h.store.UpdateWebhook(c.UserContext(), &e); err != nil {
		return fmt.Errorf("no webhook has id %d: %w", e.ID, err)
	}
	return writeJSON(c, http.StatusOK, webhookOf(e))
}

// decode reads a WebhookRequest into e: every field on create (url and
// events required), those present on update.
func (h *webhookHandler) decode(c *fiber.Ctx, e *store.WebhookEndpoint, create bool) error {
	var bodyErrs []engine.FieldError
	o, err := codec.ParseBody(c.Body(), &bodyErrs)
	if err != nil {
		return errNotJSONObject(err)
	}
	var errs []FieldError
	hasURL := o.Str("url", &e.URL)
	o.Str("description", &e.Description)
	o.Str("app", &e.App)
	o.Str("resource", &e.Resource)
	o.Bool("enabled", &e.Enabled, true)
	readBound(o, "blockRatePercent", 1, 100, &e.BlockRatePercent, &errs)
	readBound(o, "blockRateMinutes", 1, maxBlockRateMinutes, &e.BlockRateMinutes, &errs)
	events, hasEvents := readEvents(o, &errs)
	if hasEvents {
		e.Events = events
	}
	o.Rest(func(string) string { return "" })
	errs = append(fieldErrors(bodyErrs), errs...)
	if create && !hasURL {
		errs = append(errs, FieldError{"url", "is required"})
	} else if hasURL || create {
		if why := webhook.CheckURL(c.UserContext(), h.resolver, e.URL, h.allowPrivate); why != "" {
			errs = append(errs, FieldError{"url", why})
		}
	}
	if create && !hasEvents {
		errs = append(errs, FieldError{"events", `is required: a list of event types, or ["*"]`})
	}
	if utf8.RuneCountInString(e.Description) > maxWebhookDescription || strings.ContainsFunc(e.Description, unicode.IsControl) {
		errs = append(errs, FieldError{"description", fmt.Sprintf("must be at most %d characters, without control characters", maxWebhookDescription)})
	}
	if e.App != "" && !wire.AppPattern.MatchString(e.App) {
		errs = append(errs, FieldError{"app", "must match " + wire.AppPattern.String()})
	}
	if msg := engine.ValidateResourceName(e.Resource); e.Resource != "" && msg != "" {
		errs = append(errs, FieldError{"resource", msg})
	}
	if len(errs) > 0 {
		return ValidationFailed("the webhook is not valid; see details", errs...)
	}
	return nil
}

// readBound reads the whole number field name, from lo to hi, into dst
// when it is present.
func readBound(o *wire.Object, name string, lo, hi int, dst *int, errs *[]FieldError) {
	var v int64
	if !o.Integer(name, &v) {
		return
	}
	if v < int64(lo) || v > int64(hi) {
		*errs = append(*errs, FieldError{name, fmt.Sprintf("must be a whole number from %d to %d", lo, hi)})
		return
	}
	*dst = int(v)
}

// readEvents reads the events field: known event types, none twice, or
// ["*"].
func readEvents(o *wire.Object, errs *[]FieldError) ([]string, bool) {
	raw, present := o.Value("events")
	if !present {
		return nil, false
	}
	var events []string
	if raw == nil || json.Unmarshal(raw, &events) != nil || len(events) == 0 {
		*errs = append(*errs, FieldError{"events", `must be a list of event types, or ["*"]`})
		return nil, true
	}
	for i, ev := range events {
		field := "events[" + strconv.Itoa(i) + "]"
		switch {
		case ev == "*" && len(events) > 1:
			*errs = append(*errs, FieldError{field, `"*" is every type: list it alone`})
		case ev != "*" && !slices.Contains(webhookEventTypes, ev):
			*errs = append(*errs, FieldError{field, fmt.Sprintf("%q is not an event type: must be one of %s, or *", ev, strings.Join(webhookEventTypes, ", "))})
		case slices.Index(events, ev) < i:
			*errs = append(*errs, FieldError{field, fmt.Sprintf("%q is listed twice", ev)})
		}
	}
	return events, true
}

// delete removes an endpoint and its deliveries, pending ones included.
//
//	@Summary	Delete a webhook endpoint
//	@ID			deleteWebhook
//	@Tags		webhooks
//	@Param		id	path	int	true	"endpoint id"
//	@Success	204
//	@Failure	400	{object}	ErrorResponse
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such endpoint"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/webhooks/{id} [delete]
func (h *webhookHandler) delete(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.store.DeleteWebhook(c.UserContext(), id); err != nil {
		return fmt.Errorf("no webhook has id %d: %w", id, err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// test queues a test event for the endpoint, delivered through the outbox
// as every event is.
//
//	@Summary	Send a test event to a webhook endpoint
//	@ID			testWebhook
//	@Tags		webhooks
//	@Produce	json
//	@Param		id	path		int	true	"endpoint id"
//	@Success	202	{object}	WebhookTest
//	@Failure	400	{object}	ErrorResponse
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such endpoint"
//	@Failure	413	{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure	415	{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/webhooks/{id}/test [post]
func (h *webhookHandler) test(c *fiber.Ctx) error {
	e, err := h.endpoint(c)
	if err != nil {
		return err
	}
	data, err := json.Marshal(TestEvent{Webhook: e.ID, Actor: principalOf(c).actorName()})
	if err != nil {
		return err
	}
	id, err := h.store.Publish(c.UserContext(), store.Announcement{Type: eventTest, Data: data, Endpoint: e.ID})
	if err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("no webhook has id %d: %w", e.ID, store.ErrNotFound)
	}
	h.worker.Nudge()
	return writeJSON(c, http.StatusAccepted, WebhookTest{EventID: id})
}

// resume ends an endpoint's pause: its pending deliveries are due at once.
//
//	@Summary	Resume a paused webhook endpoint
//	@ID			resumeWebhook
//	@Tags		webhooks
//	@Produce	json
//	@Param		id	path		int	true	"endpoint id"
//	@Success	200	{object}	Webhook
//	@Failure	400	{object}	ErrorResponse
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such endpoint"
//	@Failure	413	{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure	415	{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/webhooks/{id}/resume [post]
func (h *webhookHandler) resume(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.store.ResumeWebhook(c.UserContext(), id, h.now().UnixMilli()); err != nil {
		return fmt.Errorf("no webhook has id %d: %w", id, err)
	}
	h.worker.Nudge()
	e, err := h.store.Webhook(c.UserContext(), id)
	if err != nil {
		return fmt.Errorf("no webhook has id %d: %w", id, err)
	}
	return writeJSON(c, http.StatusOK, webhookOf(e))
}

// rotateSecret gives the endpoint a new signing secret and answers it,
// this once.
//
//	@Summary		Rotate a webhook endpoint's signing secret
//	@ID				rotateWebhookSecret
//	@Tags			webhooks
//	@Description	The new secret signs every attempt from now on, retries of earlier events included; the old one signs nothing more.
//	@Produce		json
//	@Param			id	path		int	true	"endpoint id"
//	@Success		200	{object}	NewWebhook
//	@Failure		400	{object}	ErrorResponse
//	@Failure		401	{object}	ErrorResponse
//	@Failure		403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404	{object}	ErrorResponse	"no such endpoint"
//	@Failure		413	{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415	{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/webhooks/{id}/rotate-secret [post]
func (h *webhookHandler) rotateSecret(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return err
	}
	if err := h.store.RotateWebhookSecret(c.UserContext(), id, secret); err != nil {
		return fmt.Errorf("no webhook has id %d: %w", id, err)
	}
	e, err := h.store.Webhook(c.UserContext(), id)
	if err != nil {
		return fmt.Errorf("no webhook has id %d: %w", id, err)
	}
	return writeJSON(c, http.StatusOK, NewWebhook{Webhook: webhookOf(e), Secret: secret})
}

// deliveries answers the endpoint's newest deliveries.
//
//	@Summary	List a webhook endpoint's deliveries
//	@ID			listWebhookDeliveries
//	@Tags		webhooks
//	@Produce	json
//	@Param		id		path		int	true	"endpoint id"
//	@Param		limit	query		int	false	"deliveries, 1 to 100"	default(50)
//	@Success	200		{object}	WebhookDeliveryList
//	@Failure	400		{object}	ErrorResponse
//	@Failure	401		{object}	ErrorResponse
//	@Failure	403		{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404		{object}	ErrorResponse	"no such endpoint"
//	@Failure	429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/webhooks/{id}/deliveries [get]
func (h *webhookHandler) deliveries(c *fiber.Ctx) error {
	e, err := h.endpoint(c)
	if err != nil {
		return err
	}
	limit := 50
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxWebhookDeliveries {
			msg := fmt.Sprintf("must be a whole number from 1 to %d", maxWebhookDeliveries)
			return BadRequest("limit "+msg, FieldError{"limit", msg})
		}
		limit = n
	}
	rows, err := h.store.WebhookDeliveries(c.UserContext(), e.ID, limit)
	if err != nil {
		return err
	}
	items := make([]WebhookDelivery, len(rows))
	for i, d := range rows {
		items[i] = WebhookDelivery{
			ID: d.ID, EventID: d.EventID, EventType: d.EventType, State: d.State, Attempts: d.Attempts,
			LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: time.UnixMilli(d.CreatedAtMs).UTC(),
		}
		if d.State == store.DeliveryPending {
			at := time.UnixMilli(d.NextAttemptMs).UTC()
			items[i].NextAttemptAt = &at
		}
		if d.LastAttemptMs != 0 {
			at := time.UnixMilli(d.LastAttemptMs).UTC()
			items[i].LastAttemptAt = &at
		}
	}
	return writeJSON(c, http.StatusOK, WebhookDeliveryList{Items: items})
}
