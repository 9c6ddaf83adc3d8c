package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/impact"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/store"
)

// RuleList is one page of rules.
type RuleList struct {
	Items    []rules.APIRule `json:"items"`
	Total    int64           `json:"total" example:"1"`
	Page     int             `json:"page" example:"1"`
	PageSize int             `json:"pageSize" example:"50"`
}

// RuleRevision is one version of a rule as it was written.
type RuleRevision struct {
	Version int64 `json:"version" example:"2"`
	// Action is what made this version.
	Action    string        `json:"action" enums:"create,update,delete,rollback" example:"update"`
	Rule      rules.APIRule `json:"rule"`
	Actor     string        `json:"actor" example:"ci-deploy"`
	Reason    string        `json:"reason" example:"raise the cap for the sale"`
	CreatedAt time.Time     `json:"createdAt" format:"date-time"`
}

// RevisionList is one page of a rule's revisions, newest first.
type RevisionList struct {
	Items    []RuleRevision `json:"items"`
	Total    int64          `json:"total" example:"3"`
	Page     int            `json:"page" example:"1"`
	PageSize int            `json:"pageSize" example:"50"`
}

// ApplyRequest is the body of apply: the wanted rules, matched by name.
type ApplyRequest struct {
	Rules []rules.Content `json:"rules"`
}

// RuleSchema is what a client needs to build rule forms, from the tables
// the server's decoder and the engine's validation follow: the fields every
// rule has, each kind's, and how the demo's rules are marked.
type RuleSchema struct {
	// Envelope are the fields every rule has besides its kind.
	Envelope []wire.Field `json:"envelope" swaggertype:"array,object"`
	Kinds    []KindSchema `json:"kinds"`
	Demo     DemoMarks    `json:"demo"`
}

// KindSchema is one rule kind and its own fields, in display order. A field
// is {name, type, label, help, required, default, example, min, max,
// maxLength, multiline, options: [{value, label}], appliesWhen: {field,
// value}}.
type KindSchema struct {
	Kind   string       `json:"kind" example:"flow"`
	Label  string       `json:"label" example:"Flow"`
	Title  string       `json:"title" example:"Flow rule"`
	Help   string       `json:"help" example:"cap requests per second or calls in flight"`
	Fields []wire.Field `json:"fields" swaggertype:"array,object"`
	// NoResource is true for a kind whose rules are on no resource
	// (system rules guard their whole process): a form leaves it out.
	NoResource bool `json:"noResource,omitempty" example:"false"`
	// Summary says what a rule of the kind does, as a template: {field}
	// is the rule's value of field ({field|per}: an interval in ms, in
	// words), [field=a,b:text] is text where the field holds a or b, and
	// [field!=a,b:text] where it holds neither; a field the rule does not
	// show holds its default.
	Summary string `json:"summary" example:"[metric=qps:{threshold} per {statIntervalMs|per}]"`
}

// DemoMarks tell the rules sluice --demo seeded.
type DemoMarks struct {
	NamePrefix        string `json:"namePrefix" example:"demo-"`
	DescriptionPrefix string `json:"descriptionPrefix" example:"Demo data (sluice --demo): "`
}

// ruleHandler answers the rule routes: each decodes the request, calls the
// rule domain and encodes its answer; errors are mapped in errors.go.
type ruleHandler struct {
	rules *rules.Service
	// demo is how --demo's seeding marks the rules it writes, which the
	// console tells apart; the server wires it, so that the rule handlers
	// need not know the demo.
	demo DemoMarks
	// impact estimates what a rule would have blocked, for dry runs and
	// the impact route.
	impact *impact.Estimator
}

func bindRules(api apiRoutes, h *ruleHandler) {
	api.get("/rules", viewers, h.list)
	api.post("/rules", editors, h.create)
	api.post("/rules/impact", viewers, h.estimate)
	api.get("/rules/export", viewers, h.export)
	api.get("/rules/fields", viewers, h.fields)
	api.postRuleFile("/rules/apply", editorsOrPlans, h.apply)
	api.postRuleFile("/rules/import", editorsOrPlans, h.importRules)
	api.get("/rules/:id", viewers, h.get)
	api.put("/rules/:id", editors, h.replace)
	api.patch("/rules/:id", editors, h.patch)
	api.delete("/rules/:id", editors, h.delete)
	api.get("/rules/:id/revisions", viewers, h.revisions)
	api.post("/rules/:id/rollback", editors, h.rollback)
}

// fields answers the rule fields' tables, for forms.
//
//	@Summary		Rule fields
//	@ID				getRuleFields
//	@Description	Every rule field: the envelope's and each kind's, with its type, label, help, default, range, options and the field value it applies with. The API's decoder and validation follow the same tables.
//	@Tags			rules
//	@Produce		json
//	@Success		200	{object}	RuleSchema
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/fields [get]
func (h *ruleHandler) fields(c *fiber.Ctx) error {
	kinds := make([]KindSchema, len(engine.Kinds))
	for i, k := range engine.Kinds {
		kinds[i] = KindSchema{Kind: k.Name, Label: k.Label, Title: k.Title, Help: k.Help, Fields: wire.FieldsOf(k.Fields), NoResource: k.NoResource, Summary: k.Summary}
	}
	return writeJSON(c, http.StatusOK, RuleSchema{
		Envelope: wire.FieldsOf(wire.EnvelopeFields), Kinds: kinds,
		Demo: h.demo,
	})
}

// list answers one page of the rules the filters select, by id.
//
//	@Summary	List rules
//	@ID			listRules
//	@Tags		rules
//	@Produce	json
//	@Param		kind		query		string	false	"only this kind"	Enums(flow, circuitBreaker, hotspot, authority, system, adaptiveConcurrency)
//	@Param		resource	query		string	false	"only rules of this resource (exact name)"
//	@Param		app			query		string	false	"only the rules of this app (not those without one): ^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$"
//	@Param		enabled		query		bool	false	"only enabled (true) or disabled (false) rules"
//	@Param		q			query		string	false	"case-insensitive substring of the name, resource or description"
//	@Param		page		query		int		false	"page, from 1"				default(1)	minimum(1)
//	@Param		pageSize	query		int		false	"rules per page, 1 to 500"	default(50)	minimum(1)	maximum(500)
//	@Success	200			{object}	RuleList
//	@Failure	400			{object}	ErrorResponse	"bad query parameters, every one named in details"
//	@Failure	401			{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/rules [get]
func (h *ruleHandler) list(c *fiber.Ctx) error {
	var bad badParams
	page, err := pageParams(c)
	bad.note(err)
	enabled, err := boolParam(c, "enabled")
	bad.note(err)
	app, err := appParam(c)
	bad.note(err)
	kind, err := kindParam(c)
	bad.note(err)
	resource, err := resourceParam(c)
	bad.note(err)
	q, err := searchParam(c, "q")
	bad.note(err)
	if err := bad.err(); err != nil {
		return err
	}
	filter := store.RuleFilter{Kind: kind, Resource: resource, App: app, Enabled: enabled, Query: q}
	found, total, err := h.rules.List(c.UserContext(), filter, page)
	if err != nil {
		return err
	}
	items := make([]rules.APIRule, len(found))
	now := h.rules.NowMs()
	for i := range found {
		items[i] = rules.APIOf(&found[i], now)
	}
	return writeJSON(c, http.StatusOK, RuleList{Items: items, Total: total, Page: page.Number, PageSize: page.Size})
}

// get answers one rule, its version as ETag.
//
//	@Summary	Get a rule
//	@ID			getRule
//	@Tags		rules
//	@Produce	json
//	@Param		id	path		int	true	"rule id"
//	@Success	200	{object}	rules.APIRule
//	@Header		200	{string}	ETag			"the rule's version, quoted"
//	@Failure	400	{object}	ErrorResponse	"id is not a positive whole number"
//	@Failure	401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such rule"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/rules/{id} [get]
func (h *ruleHandler) get(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	r, err := h.rules.Get(c.UserContext(), id)
	if err != nil {
		return err
	}
	return h.answerRule(c, http.StatusOK, &r)
}

// create stores a new rule and loads it into the engine.
//
//	@Summary		Create a rule
//	@ID				createRule
//	@Description	Without a name, one is made up: <kind>-<slug of resource>, with -2, -3, … if taken.
//	@Tags			rules
//	@Accept			json
//	@Produce		json
//	@Param			rule			body		rules.Content	true	"the rule; fields that do not apply to its kind or behaviour are rejected"
//	@Param			X-Change-Reason	header		string		false	"why, kept in the rule's history"
//	@Success		201				{object}	rules.APIRule
//	@Header			201				{string}	Location		"the new rule's URL"
//	@Header			201				{string}	ETag			"the rule's version, quoted"
//	@Failure		400				{object}	ErrorResponse	"the body is not JSON, or not UTF-8, or has a key twice"
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role; or, for a caller scoped to apps, the rule's app is outside them (detail app); or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		409				{object}	ErrorResponse	"the name is taken"
//	@Failure		413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad fields, each named in details (the field body for JSON that is no object)"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules [post]
func (h *ruleHandler) create(c *fiber.Ctx) error {
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	r, err := newRuleBody(c)
	if err != nil {
		return err
	}
	if r, err = h.rules.Create(c.UserContext(), r, who); err != nil {
		return err
	}
	c.Location(fmt.Sprintf("%s/%d", c.Path(), r.ID))
	return h.answerRule(c, http.StatusCreated, &r)
}

// newRuleBody reads the request's body as a new rule, as POST /rules takes
// it, and validates it.
func newRuleBody(c *fiber.Ctx) (rules.Rule, error) {
	var errs []engine.FieldError
	o, err := codec.ParseBody(c.Body(), &errs)
	if err != nil {
		return rules.Rule{}, errNotJSONObject(err)
	}
	return decodeRule(o, rules.Rule{}, wire.ForCreate)
}

// decodeRule reads the rule object o onto base, as mode says, and
// validates it; its bad fields are a ValidationError.
func decodeRule(o *wire.Object, base rules.Rule, mode wire.DecodeMode) (rules.Rule, error) {
	r := wire.DecodeRule(o, base, mode)
	wire.ValidateRule(&r, "", "", o.Errs)
	if len(*o.Errs) > 0 {
		return rules.Rule{}, rules.InvalidRule(*o.Errs)
	}
	return r, nil
}

// replace overwrites a rule with the body, whole.
//
//	@Summary		Replace a rule
//	@ID				replaceRule
//	@Description	Takes the whole rule; absent fields take their defaults, except the name, which is kept. The read-only fields (id, version, createdAt, updatedAt) may be sent back as GET returned them; a different id or kind is rejected.
//	@Tags			rules
//	@Accept			json
//	@Produce		json
//	@Param			id				path		int			true	"rule id"
//	@Param			rule			body		rules.Content	true	"the whole rule"
//	@Param			If-Match		header		string		false	"the version the change is based on, e.g. \"3\""
//	@Param			X-Change-Reason	header		string		false	"why, kept in the rule's history"
//	@Success		200				{object}	rules.APIRule
//	@Header		200	{string}	ETag	"the rule's new version, quoted"
//	@Failure		400				{object}	ErrorResponse
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role; or, for a caller scoped to apps, the rule's app, stored or as written, is outside them (detail app); or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404				{object}	ErrorResponse	"no such rule"
//	@Failure		409				{object}	ErrorResponse	"the new name is taken"
//	@Failure		412				{object}	ErrorResponse	"If-Match names another version"
//	@Failure		413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad fields, each named in details (the field body for JSON that is no object)"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/{id} [put]
func (h *ruleHandler) replace(c *fiber.Ctx) error { return h.update(c, wire.ForReplace) }

// patch changes the fields the body names.
//
//	@Summary		Update some fields of a rule
//	@ID				patchRule
//	@Description	Fields present replace the stored ones (null resets a field to its default); absent fields are kept. The result is validated as a whole.
//	@Tags			rules
//	@Accept			json
//	@Produce		json
//	@Param			id				path		int			true	"rule id"
//	@Param			rule			body		rules.Content	true	"the fields to change, e.g. {\"enabled\": false}"
//	@Param			If-Match		header		string		false	"the version the change is based on, e.g. \"3\""
//	@Param			X-Change-Reason	header		string		false	"why, kept in the rule's history"
//	@Success		200				{object}	rules.APIRule
//	@Header		200	{string}	ETag	"the rule's new version, quoted"
//	@Failure		400				{object}	ErrorResponse
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role; or, for a caller scoped to apps, the rule's app, stored or as written, is outside them (detail app); or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404				{object}	ErrorResponse	"no such rule"
//	@Failure		409				{object}	ErrorResponse	"the new name is taken"
//	@Failure		412				{object}	ErrorResponse	"If-Match names another version"
//	@Failure		413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad fields, each named in details (the field body for JSON that is no object)"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/{id} [patch]
func (h *ruleHandler) patch(c *fiber.Ctx) error { return h.update(c, wire.ForPatch) }

func (h *ruleHandler) update(c *fiber.Ctx, mode wire.DecodeMode) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	var errs []engine.FieldError
	o, err := codec.ParseBody(c.Body(), &errs)
	if err != nil {
		return errNotJSONObject(err)
	}
	edit := func(current rules.Rule) (rules.Rule, error) { return decodeRule(o, current, mode) }
	r, err := h.rules.Update(c.UserContext(), id, ifMatchHeader(c).allows, edit, who)
	if err != nil {
		return err
	}
	return h.answerRule(c, http.StatusOK, &r)
}

// delete removes a rule; its history stays readable.
//
//	@Summary	Delete a rule
//	@ID			deleteRule
//	@Tags		rules
//	@Param		id				path	int		true	"rule id"
//	@Param		If-Match		header	string	false	"the version the deletion is based on, e.g. \"3\""
//	@Param		X-Change-Reason	header	string	false	"why, kept in the rule's history"
//	@Success	204
//	@Failure	400	{object}	ErrorResponse
//	@Failure	401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"needs the editor role; or, for a caller scoped to apps, the rule's app is outside them (detail app); or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such rule"
//	@Failure	412	{object}	ErrorResponse	"If-Match names another version"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/rules/{id} [delete]
func (h *ruleHandler) delete(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	if err := h.rules.Delete(c.UserContext(), id, ifMatchHeader(c).allows, who); err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

// revisions answers one page of a rule's history, newest first; a deleted
// rule's history stays readable.
//
//	@Summary	A rule's history
//	@ID			listRuleRevisions
//	@Tags		rules
//	@Produce	json
//	@Param		id			path		int	true	"rule id"
//	@Param		page		query		int	false	"page, from 1"					default(1)	minimum(1)
//	@Param		pageSize	query		int	false	"revisions per page, 1 to 500"	default(50)	minimum(1)	maximum(500)
//	@Success	200			{object}	RevisionList
//	@Failure	400			{object}	ErrorResponse
//	@Failure	401			{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404			{object}	ErrorResponse	"no rule ever had this id"
//	@Failure	429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/rules/{id}/revisions [get]
func (h *ruleHandler) revisions(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	page, err := pageParams(c)
	if err != nil {
		return err
	}
	revs, total, err := h.rules.Revisions(c.UserContext(), id, page)
	if err != nil {
		return err
	}
	items := make([]RuleRevision, len(revs))
	now := h.rules.NowMs()
	for i, rev := range revs {
		items[i] = RuleRevision{
			Version: rev.Version, Action: rev.Action, Rule: rules.APIOf(&rev.Rule, now), Actor: rev.Actor, Reason: rev.Reason,
			CreatedAt: rev.CreatedAt,
		}
	}
	return writeJSON(c, http.StatusOK, RevisionList{Items: items, Total: total, Page: page.Number, PageSize: page.Size})
}

// rollback restores the content of an earlier version as a new version.
//
//	@Summary	Roll a rule back to an earlier version
//	@ID			rollbackRule
//	@Tags		rules
//	@Produce	json
//	@Param		id				path		int		true	"rule id"
//	@Param		toVersion		query		int		true	"the version whose content to restore"	minimum(1)
//	@Param		If-Match		header		string	false	"the version the rollback is based on, e.g. \"3\""
//	@Param		X-Change-Reason	header		string	false	"why, kept in the rule's history"
//	@Success	200				{object}	rules.APIRule
//	@Header		200	{string}	ETag	"the rule's new version, quoted"
//	@Failure	400				{object}	ErrorResponse	"toVersion is missing or not a positive whole number"
//	@Failure	401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403				{object}	ErrorResponse	"needs the editor role; or, for a caller scoped to apps, the rule's app, now or at that version, is outside them (detail app); or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404				{object}	ErrorResponse	"no such rule, or no such version"
//	@Failure	409				{object}	ErrorResponse	"the old name is taken by another rule now"
//	@Failure	412				{object}	ErrorResponse	"If-Match names another version"
//	@Failure	413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure	415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure	429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/rules/{id}/rollback [post]
func (h *ruleHandler) rollback(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	to, err := strconv.ParseInt(c.Query("toVersion"), 10, 64)
	if err != nil || to < 1 {
		return BadRequest("toVersion must be a positive whole number", FieldError{"toVersion", "must be a positive whole number"})
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	r, err := h.rules.Rollback(c.UserContext(), id, to, ifMatchHeader(c).allows, who)
	if err != nil {
		return err
	}
	return h.answerRule(c, http.StatusOK, &r)
}

// apply syncs the stored rules to the body.
//
//	@Summary		Apply a rule file (declarative sync for CI)
//	@ID				applyRules
//	@Description	Matches the body's rules to the stored ones by name: creates the new, updates the changed, and with prune=true deletes the stored rules the body does not name; a prune that would delete every rule of an app (or every server-wide rule) while there are some is refused (422 naming prune) unless allowEmpty=true. All of it happens in one transaction, or none of it. With dryRun=true nothing is written and the plan says what would be; asking for a plan needs only the viewer role, applying needs an editor. A caller scoped to apps (docs/api.md, "Per-app scopes") may name only rules of its apps, and plans and prunes only among the stored rules of its apps: the others are neither listed in deleted nor touched. The body is JSON, or YAML with Content-Type application/yaml.
//	@Tags			rules
//	@Accept			json
//	@Accept			application/yaml
//	@Produce		json
//	@Param			dryRun			query		bool			false	"only answer the plan"						default(false)
//	@Param			prune			query		bool			false	"delete the rules the body does not name"	default(false)
//	@Param			allowEmpty		query		bool			false	"let a prune delete every rule of an app, or of the server, that has some (refused without it, 422 naming prune)"	default(false)
//	@Param			rules			body		ApplyRequest	true	"the wanted rules; each needs a name"
//	@Param			X-Change-Reason	header		string			false	"why, kept in each changed rule's history"
//	@Success		200				{object}	rules.ApplyPlan
//	@Failure		400				{object}	ErrorResponse	"the body is not JSON or YAML, or bad query parameters, every one named in details"
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role unless dryRun=true; or, for a caller scoped to apps, a rule of the body, or the stored rule of its name, is of an app outside them (details rules[i].app); or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		413				{object}	ErrorResponse	"the body is over 64 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad rules, each field named as rules[i].field (the field body for a body that is no mapping)"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/apply [post]
func (h *ruleHandler) apply(c *fiber.Ctx) error {
	opts, err := applyParams(c)
	if err != nil {
		return err
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	body := c.Body()
	yamlBody := isYAML(c.Get(fiber.HeaderContentType))
	if yamlBody {
		body, err = codec.YAMLToJSON(body) // which refuses duplicate keys itself
	} else {
		err = checkJSONBody(body)
	}
	if err != nil {
		return err
	}
	var errs []engine.FieldError
	o, err := wire.Parse(body, "", &errs)
	if _, ok := errors.AsType[*wire.NotObjectError](err); ok && yamlBody {
		msg := "must be a YAML mapping: a rule file is a mapping with a rules list"
		return ValidationFailed("the body "+msg, FieldError{"body", msg})
	}
	if err != nil {
		return errNotJSONObject(err)
	}
	var items []json.RawMessage
	if v, _ := o.Value("rules"); v == nil {
		o.Fail("rules", "is required: a list of rules")
	} else if err := json.Unmarshal(v, &items); err != nil {
		o.Fail("rules", "must be a list of rules")
	}
	o.Rest(func(string) string { return "" })
	if len(errs) > 0 {
		return ValidationFailed("the body is not a valid rule file; see details", fieldErrors(errs)...)
	}
	want, err := rules.DecodeFile(items)
	if err != nil {
		if yamlBody {
			quoteHint(err, items)
		}
		return err
	}
	plan, err := h.rules.Apply(c.UserContext(), want, opts, who)
	if err != nil {
		return err
	}
	if opts.DryRun {
		if err := plan.Estimate(c.UserContext(), h.impact, want); err != nil {
			return err
		}
	}
	return writeJSON(c, http.StatusOK, plan)
}

// quoteHint tells, in each "must be a string" of err that a rule of items
// (a YAML rule file's, as JSON) earned with a number or a boolean, how
// YAML writes one: a plain 123, 0755 or true is no string there, as in
// JSON.
func quoteHint(err error, items []json.RawMessage) {
	invalid, ok := errors.AsType[*rules.ValidationError](err)
	if !ok {
		return
	}
	for i, f := range invalid.Fields {
		var index int
		var field string
		if !strings.HasSuffix(f.Message, "must be a string") {
			continue
		}
		if n, _ := fmt.Sscanf(f.Field, "rules[%d].%s", &index, &field); n != 2 || index < 0 || index >= len(items) {
			continue
		}
		var rule map[string]json.RawMessage
		if json.Unmarshal(items[index], &rule) != nil {
			continue
		}
		if v := rule[field]; len(v) > 0 && strings.ContainsRune("-0123456789tf", rune(v[0])) {
			invalid.Fields[i].Message += " (in YAML, quote it: a plain 123, 0755 or true is no string)"
		}
	}
}

func applyParams(c *fiber.Ctx) (rules.ApplyOptions, error) {
	var bad badParams
	var opts rules.ApplyOptions
	for _, p := range []struct {
		name string
		dst  *bool
	}{{"dryRun", &opts.DryRun}, {"prune", &opts.Prune}, {"allowEmpty", &opts.AllowEmpty}} {
		v, err := boolParam(c, p.name)
		bad.note(err)
		*p.dst = v != nil && *v
	}
	return opts, bad.err()
}

func isYAML(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	switch strings.TrimSpace(strings.ToLower(mediaType)) {
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
	}
	return false
}

// export writes every rule as a file that apply takes back unchanged.
//
//	@Summary		Export every rule
//	@ID				exportRules
//	@Description	In the shape apply takes, by name, so that export then apply is a no-op: each rule's fields in a fixed order (kind, name, resource, app, description, enabled, mode, expiresAt, then its kind's in the rules reference's order), those at their defaults left out, so that a file kept in a repository diffs like a hand-written one.
//	@Tags			rules
//	@Produce		json
//	@Produce		application/yaml
//	@Param			format	query		string	false	"json or yaml"	Enums(json, yaml)	default(json)
//	@Success		200		{object}	rules.RuleFile
//	@Failure		400		{object}	ErrorResponse	"an unknown format"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/export [get]
func (h *ruleHandler) export(c *fiber.Ctx) error {
	format := c.Query("format", "json")
	if format != "json" && format != "yaml" {
		return BadRequest("format must be json or yaml", FieldError{"format", "must be json or yaml"})
	}
	all, err := h.rules.All(c.UserContext())
	if err != nil {
		return err
	}
	data, err := rules.ExportFile(all, format)
	if err != nil {
		return err
	}
	if format == "json" {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	} else {
		c.Set(fiber.HeaderContentType, "application/yaml; charset=utf-8")
	}
	return c.Status(http.StatusOK).Send(data)
}

// importRules converts sentinel-golang rules, or an envoyproxy/ratelimit
// configuration, and applies them.
//
//	@Summary		Import sentinel-golang rules or an envoyproxy/ratelimit configuration
//	@ID				importRules
//	@Description	Takes sentinel-golang's rule JSON (an array of flow.Rule, which may carry Sentinel's limitApp; of circuitbreaker.Rule with kind=circuitBreaker; of hotspot rules in its data sources' shape with kind=hotspot; of system.Rule with kind=system), or one of sentinel-golang's Kubernetes custom resources of rules (sentinel-go-datasource-k8s-crd's FlowRules, CircuitBreakerRules, HotspotRules or SystemRules, apiVersion datasource.sentinel.io/..., in JSON or in YAML with Content-Type application/yaml), whose spec.rules are taken as rules of the resource's kind (a kind given must be that one, else 400 naming kind; errors name them rules[i]), and applies it like apply (no prune). An enum is sentinel-golang's number or its name, as the CRDs write it (controlBehavior Reject, strategy SlowRequestRatio, metricType QPS, valKind KindString); another name is refused (422 naming the field). Sentinel's zero values mean "unset" and take Sluice's defaults, but a hotspot rule's metricType 0 is sentinel-golang's Concurrency, and so is a missing one, unless the rule sets a field only QPS reads (durationInSec, controlBehavior, burstCount, maxQueueingTimeMs): that rule is refused (422 naming metricType); A hotspot rule's parameter is its paramKey; without one, its paramIndex N becomes the key argN (send params {"arg0": …}); a negative paramIndex cannot be mapped, and a paramIndex > 0 beside a paramKey is one sentinel-golang refuses: both are refused (422 naming it). durationInSec becomes statIntervalMs; specificItems [{valKind, valStr, threshold}] become value → threshold, each value as a check's params carry it (42, true, 1.5). Fields sentinel-golang ignores too (a behaviour's fields that the rule's behaviour does not read, as Sentinel's dashboard writes them with defaults; a concurrency hotspot rule's QPS fields; BBR on a system metric other than Load and CpuUsage) are dropped, each named in the plan's notes. A rule with a regex resource, or a Java Sentinel rule (grade, count, …), is refused with one message. A system rule's metricType 0 (Load) is refused (422 naming it): Sentinel's trigger is the machine's load average, Sluice's the load per CPU; its strategy -1 is NoAdaptive, 1 BBR, 0 unset. Names are made up in file order (<kind>-<slug of resource>, -2, …), so importing the same file twice changes nothing. With dryRun=true (a viewer may ask) nothing is written. With format=envoy the body is instead one envoyproxy/ratelimit configuration file (YAML, at most 4 MiB: domain, descriptors with key, value, rate_limit {unit, requests_per_unit, unlimited, name, replaces [{name}]}, shadow_mode, detailed_metric, value_to_metric, descriptors; kind must be left out): each descriptor with a rate_limit becomes a rule on the resource <domain>:<key>=<value>/<key>/… (an entry without a value matches any), a flow rule, or a hotspot rule counting each value apart when its path has an entry without a value (paramKey: those keys joined by /); threshold is requests_per_unit, statIntervalMs the unit (second, minute, hour, day); shadow_mode is mode shadow; unlimited is the same rule disabled; rate_limit.name is the rule name, else one made from the domain and path (with a hash when cut or when two would be the same); replaces becomes the replaces field and must name rate_limit.names of the file; detailed_metric and value_to_metric are accepted and change nothing. Refused, 422 naming the field by its path in the file (descriptors[2].descriptors[0].rate_limit.unit): week, month and year units, wildcard values (*), quota_mode, share_threshold, metadata, unknown fields, more than 10,000 descriptors or 16 levels. See docs/envoy-import.md.
//	@Tags			rules
//	@Accept			json
//	@Accept			application/yaml
//	@Produce		json
//	@Param			format	query		string				true	"the source format"					Enums(sentinel, envoy)
//	@Param			kind	query		string				false	"the kind of the rules in the file (format sentinel only)"	Enums(flow, circuitBreaker, hotspot, system)	default(flow)
//	@Param			dryRun	query		bool				false	"only answer the plan"				default(false)
//	@Param			app		query		string				false	"the app every imported rule names (the rule field app); a caller scoped to apps must give one of them"
//	@Param			rules	body		[]rules.SentinelRule	true	"sentinel-golang rules of kind (the fields of each kind described in one object), or, JSON or YAML (Content-Type application/yaml), one of its Kubernetes custom resources of rules (apiVersion datasource.sentinel.io/..., kind FlowRules, CircuitBreakerRules, HotspotRules or SystemRules, the rules in spec.rules), whose kind is the rules' (a kind given must be the same); with format=envoy, an envoyproxy/ratelimit configuration in YAML"
//	@Success		200		{object}	rules.ApplyPlan
//	@Failure		400		{object}	ErrorResponse	"not JSON (with format=envoy, not YAML), or bad query parameters, every one named in details"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403		{object}	ErrorResponse	"needs the editor role unless dryRun=true; or, for a caller scoped to apps, app (or rules[i].app, when a stored rule of the name made up is of another app) is outside them; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		413		{object}	ErrorResponse	"the body is over 64 MiB (4 MiB with format=envoy)"
//	@Failure		415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422		{object}	ErrorResponse	"bad rules, each field named as rules[i].field (the field body for JSON that is no array); with format=envoy, named by its path in the file (descriptors[i].rate_limit.unit, body for YAML that is no mapping)"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/import [post]
func (h *ruleHandler) importRules(c *fiber.Ctx) error {
	var bad badParams
	format := c.Query("format")
	if format != "sentinel" && format != "envoy" {
		bad.add("format", "must be sentinel or envoy")
	}
	kind := c.Query("kind", engine.KindFlow)
	switch {
	case format == "envoy" && c.Query("kind") != "":
		bad.add("kind", "applies to format sentinel only: an envoyproxy/ratelimit configuration makes flow and hotspot rules")
	case !slices.Contains(rules.SentinelKinds, kind):
		bad.add("kind", "must be one of "+strings.Join(rules.SentinelKinds, ", "))
	}
	dryRun, err := boolParam(c, "dryRun")
	bad.note(err)
	app, err := appParam(c)
	bad.note(err)
	if err := bad.err(); err != nil {
		return err
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	if p := principalOf(c); app != "" && !p.mayUseApp(app) {
		return outOfScope(p, "app", app)
	}
	var want []rules.Rule
	var notes []rules.PlanNote
	if format == "envoy" {
		want, err = importEnvoy(c.Body())
	} else {
		want, notes, err = importSentinel(c.Body(), kind, c.Query("kind") != "", isYAML(c.Get(fiber.HeaderContentType)))
	}
	if err != nil {
		return err
	}
	for i := range want {
		want[i].App = app
	}
	plan, err := h.rules.Apply(c.UserContext(), want, rules.ApplyOptions{DryRun: dryRun != nil && *dryRun}, who)
	if err != nil {
		return err
	}
	plan.Notes = notes
	if plan.DryRun {
		if err := plan.Estimate(c.UserContext(), h.impact, want); err != nil {
			return err
		}
	}
	return writeJSON(c, http.StatusOK, plan)
}

// importSentinel converts a sentinel-golang rule file of kind, or one of
// its Kubernetes custom resources of rules (JSON, or YAML when yamlBody),
// whose rules are of the resource's kind: kindGiven says ?kind= named one,
// which must then be the same. The notes name the fields it dropped.
func importSentinel(body []byte, kind string, kindGiven, yamlBody bool) ([]rules.Rule, []rules.PlanNote, error) {
	var err error
	if yamlBody {
		body, err = codec.YAMLToJSON(body)
	} else {
		err = checkJSONBody(body)
	}
	if err != nil {
		return nil, nil, err
	}
	if resourceKind, items, ok := rules.SentinelResource(body); ok {
		if kindGiven && kind != resourceKind {
			msg := fmt.Sprintf("is %s, but the body is a Kubernetes resource of %s rules: leave kind out", kind, resourceKind)
			return nil, nil, BadRequest("kind "+msg, FieldError{"kind", msg})
		}
		return rules.ImportSentinel(resourceKind, items)
	}
	var items []json.RawMessage
	err = json.Unmarshal(body, &items)
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return nil, nil, BadRequest("the body must be a JSON array of sentinel-golang rules: " + err.Error())
	}
	if err != nil || items == nil {
		msg := "must be a JSON array of sentinel-golang rules, or one of its Kubernetes resources of rules (kind FlowRules, CircuitBreakerRules, HotspotRules or SystemRules)"
		return nil, nil, ValidationFailed("the body "+msg, FieldError{"body", msg})
	}
	return rules.ImportSentinel(kind, items)
}

// importEnvoy converts an envoyproxy/ratelimit configuration, which is
// held to a smaller size than a rule file: it is one domain's.
func importEnvoy(body []byte) ([]rules.Rule, error) {
	if len(body) > rules.MaxEnvoyConfigBytes {
		return nil, NewError(http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the body is over the %d MiB an envoyproxy/ratelimit configuration may have", rules.MaxEnvoyConfigBytes>>20))
	}
	return rules.ImportEnvoy(body)
}

func (h *ruleHandler) answerRule(c *fiber.Ctx, status int, r *rules.Rule) error {
	setETag(c, r.Version)
	return writeJSON(c, status, rules.APIOf(r, h.rules.NowMs()))
}

// kindParam reads ?kind=, empty or a rule kind.
func kindParam(c *fiber.Ctx) (string, error) {
	kind := c.Query("kind")
	if _, known := engine.LookupKind(kind); kind == "" || known {
		return kind, nil
	}
	msg := "must be one of " + engine.KindNames()
	return "", BadRequest("kind "+msg, FieldError{"kind", msg})
}

// resourceParam reads ?resource=, empty or a name a rule's resource may
// have.
func resourceParam(c *fiber.Ctx) (string, error) {
	resource := c.Query("resource")
	if resource == "" {
		return "", nil
	}
	if problem := engine.ValidateResourceName(resource); problem != "" {
		return "", BadRequest("resource "+problem, FieldError{"resource", problem})
	}
	return resource, nil
}
