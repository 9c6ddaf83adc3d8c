package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/store"
)

// RuleList is one page of rules.
type RuleList struct {
	Items    []Rule `json:"items"`
	Total    int64  `json:"total" example:"1"`
	Page     int    `json:"page" example:"1"`
	PageSize int    `json:"pageSize" example:"50"`
}

// RuleRevision is one version of a rule as it was written.
type RuleRevision struct {
	Version int64 `json:"version" example:"2"`
	// Action is what made this version.
	Action    string    `json:"action" enums:"create,update,delete,rollback" example:"update"`
	Rule      Rule      `json:"rule"`
	Actor     string    `json:"actor" example:"ci-deploy"`
	Reason    string    `json:"reason" example:"raise the cap for the sale"`
	CreatedAt time.Time `json:"createdAt"`
}

// RevisionList is one page of a rule's revisions, newest first.
type RevisionList struct {
	Items    []RuleRevision `json:"items"`
	Total    int64          `json:"total" example:"3"`
	Page     int            `json:"page" example:"1"`
	PageSize int            `json:"pageSize" example:"50"`
}

type ruleHandler struct {
	store *store.Store
	sync  *ruleSync
}

func bindRules(api apiRoutes, h *ruleHandler) {
	api.get("/rules", viewers, h.list)
	api.post("/rules", editors, h.create)
	api.get("/rules/export", viewers, h.export)
	api.postRuleFile("/rules/apply", editorsOrPlans, h.apply)
	api.postRuleFile("/rules/import", editorsOrPlans, h.importRules)
	api.get("/rules/:id", viewers, h.get)
	api.put("/rules/:id", editors, h.replace)
	api.patch("/rules/:id", editors, h.patch)
	api.delete("/rules/:id", editors, h.delete)
	api.get("/rules/:id/revisions", viewers, h.revisions)
	api.post("/rules/:id/rollback", editors, h.rollback)
}

// list answers one page of the rules the filters select, by id.
//
//	@Summary	List rules
//	@ID			listRules
//	@Tags		rules
//	@Produce	json
//	@Param		kind		query		string	false	"only this kind"	Enums(flow)
//	@Param		resource	query		string	false	"only rules of this resource (exact name)"
//	@Param		enabled		query		bool	false	"only enabled (true) or disabled (false) rules"
//	@Param		q			query		string	false	"case-insensitive substring of the name, resource or description"
//	@Param		page		query		int		false	"page, from 1"				default(1)	minimum(1)
//	@Param		pageSize	query		int		false	"rules per page, 1 to 500"	default(50)	minimum(1)	maximum(500)
//	@Success	200			{object}	RuleList
//	@Failure	400			{object}	ErrorResponse	"a bad query parameter, named in details"
//	@Failure	401			{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security	BearerAuth
//	@Router		/api/v1/rules [get]
func (h *ruleHandler) list(c *fiber.Ctx) error {
	page, err := pageParams(c)
	if err != nil {
		return err
	}
	enabled, err := boolParam(c, "enabled")
	if err != nil {
		return err
	}
	filter := store.RuleFilter{Kind: c.Query("kind"), Resource: c.Query("resource"), Enabled: enabled, Query: c.Query("q")}
	rows, total, err := h.store.ListRules(c.UserContext(), filter, page)
	if err != nil {
		return err
	}
	items := make([]Rule, 0, len(rows))
	for _, row := range rows {
		r, err := ruleFromStore(row)
		if err != nil {
			return err
		}
		items = append(items, r.api())
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
//	@Success	200	{object}	Rule
//	@Header		200	{string}	ETag			"the rule's version, quoted"
//	@Failure	400	{object}	ErrorResponse	"id is not a positive whole number"
//	@Failure	401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	404	{object}	ErrorResponse	"no such rule"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security	BearerAuth
//	@Router		/api/v1/rules/{id} [get]
func (h *ruleHandler) get(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	row, err := h.store.GetRule(c.UserContext(), id)
	if err != nil {
		return ruleMissing(id, err)
	}
	r, err := ruleFromStore(row)
	if err != nil {
		return err
	}
	return answerRule(c, http.StatusOK, &r)
}

// create stores a new rule and loads it into the engine.
//
//	@Summary		Create a rule
//	@ID				createRule
//	@Description	Without a name, one is made up: <kind>-<slug of resource>, with -2, -3, … if taken.
//	@Tags			rules
//	@Accept			json
//	@Produce		json
//	@Param			rule			body		RuleContent	true	"the rule; fields that do not apply to its kind or behaviour are rejected"
//	@Param			X-Change-Reason	header		string		false	"why, kept in the rule's history"
//	@Success		201				{object}	Rule
//	@Header			201				{string}	Location		"the new rule's URL"
//	@Header			201				{string}	ETag			"the rule's version, quoted"
//	@Failure		400				{object}	ErrorResponse	"the body is not a JSON object"
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role"
//	@Failure		409				{object}	ErrorResponse	"the name is taken"
//	@Failure		413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security		BearerAuth
//	@Router			/api/v1/rules [post]
func (h *ruleHandler) create(c *fiber.Ctx) error {
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	var errs []FieldError
	o, err := parseBody(c.Body(), &errs)
	if err != nil {
		return errNotJSONObject(err)
	}
	r := decodeRule(o, rule{}, forCreate)
	validateRule(&r, "", "", &errs)
	if len(errs) > 0 {
		return invalidRule(errs)
	}
	err = h.sync.write(c.UserContext(), false, func(tx *ruleTx) error {
		return createRule(tx, &r, who)
	})
	if err != nil {
		return err
	}
	c.Location(fmt.Sprintf("%s/%d", c.Path(), r.ID))
	return answerRule(c, http.StatusCreated, &r)
}

// createRule stores r, naming it first if it has no name.
func createRule(tx *ruleTx, r *rule, who actor) error {
	if r.Name == "" {
		name, err := uniqueName(r.Kind, r.Resource, func(name string) (bool, error) {
			_, err := tx.RuleByName(name)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return err
		}
		r.Name = name
	}
	row, err := r.toStore()
	if err != nil {
		return err
	}
	if err := tx.CreateRule(&row); err != nil {
		return nameTaken(r.Name, err)
	}
	r.ID, r.Version, r.CreatedAt, r.UpdatedAt = row.ID, row.Version, row.CreatedAt, row.UpdatedAt
	tx.saved(r)
	return revise(tx, r, store.ActionCreate, who)
}

// createRules creates named rules, as createRule does each, in batches:
// an apply of 100,000 rules is two hundred statements, not two hundred
// thousand.
func createRules(tx *ruleTx, rules []*rule, who actor) error {
	if len(rules) == 0 {
		return nil
	}
	rows := make([]store.Rule, len(rules))
	for i, r := range rules {
		row, err := r.toStore()
		if err != nil {
			return err
		}
		rows[i] = row
	}
	if err := tx.CreateRules(rows); err != nil {
		return err
	}
	revs := make([]store.RuleRevision, len(rules))
	for i, r := range rules {
		row := rows[i]
		r.ID, r.Version, r.CreatedAt, r.UpdatedAt = row.ID, row.Version, row.CreatedAt, row.UpdatedAt
		tx.saved(r)
		rev, err := revision(r, store.ActionCreate, who)
		if err != nil {
			return err
		}
		revs[i] = rev
	}
	return tx.AddRevisions(revs)
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
//	@Param			rule			body		RuleContent	true	"the whole rule"
//	@Param			If-Match		header		string		false	"the version the change is based on, e.g. \"3\""
//	@Param			X-Change-Reason	header		string		false	"why, kept in the rule's history"
//	@Success		200				{object}	Rule
//	@Failure		400				{object}	ErrorResponse
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role"
//	@Failure		404				{object}	ErrorResponse	"no such rule"
//	@Failure		409				{object}	ErrorResponse	"the new name is taken"
//	@Failure		412				{object}	ErrorResponse	"If-Match names another version"
//	@Failure		413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/{id} [put]
func (h *ruleHandler) replace(c *fiber.Ctx) error { return h.update(c, forReplace) }

// patch changes the fields the body names.
//
//	@Summary		Update some fields of a rule
//	@ID				patchRule
//	@Description	Fields present replace the stored ones (null resets a field to its default); absent fields are kept. The result is validated as a whole.
//	@Tags			rules
//	@Accept			json
//	@Produce		json
//	@Param			id				path		int			true	"rule id"
//	@Param			rule			body		RuleContent	true	"the fields to change, e.g. {\"enabled\": false}"
//	@Param			If-Match		header		string		false	"the version the change is based on, e.g. \"3\""
//	@Param			X-Change-Reason	header		string		false	"why, kept in the rule's history"
//	@Success		200				{object}	Rule
//	@Failure		400				{object}	ErrorResponse
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role"
//	@Failure		404				{object}	ErrorResponse	"no such rule"
//	@Failure		409				{object}	ErrorResponse	"the new name is taken"
//	@Failure		412				{object}	ErrorResponse	"If-Match names another version"
//	@Failure		413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/{id} [patch]
func (h *ruleHandler) patch(c *fiber.Ctx) error { return h.update(c, forPatch) }

func (h *ruleHandler) update(c *fiber.Ctx, mode decodeMode) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	var errs []FieldError
	o, err := parseBody(c.Body(), &errs)
	if err != nil {
		return errNotJSONObject(err)
	}
	match := ifMatchHeader(c)
	var r rule
	err = h.sync.write(c.UserContext(), false, func(tx *ruleTx) error {
		current, err := currentRule(tx, id, match)
		if err != nil {
			return err
		}
		r = decodeRule(o, current, mode)
		validateRule(&r, "", "", &errs)
		if len(errs) > 0 {
			return invalidRule(errs)
		}
		return updateRule(tx, &r, store.ActionUpdate, who)
	})
	if err != nil {
		return err
	}
	return answerRule(c, http.StatusOK, &r)
}

// currentRule reads rule id for a write based on the version match names.
func currentRule(tx *ruleTx, id int64, match ifMatch) (rule, error) {
	row, err := tx.GetRule(id)
	if err != nil {
		return rule{}, ruleMissing(id, err)
	}
	if err := match.check(fmt.Sprintf("rule %d", id), row.Version); err != nil {
		return rule{}, err
	}
	return ruleFromStore(row)
}

// updateRule writes r, read at r.Version, as the next version.
func updateRule(tx *ruleTx, r *rule, action string, who actor) error {
	row, err := r.toStore()
	if err != nil {
		return err
	}
	if err := tx.UpdateRule(&row); err != nil {
		return nameTaken(r.Name, err)
	}
	r.Version, r.UpdatedAt = row.Version, row.UpdatedAt
	tx.saved(r)
	return revise(tx, r, action, who)
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
//	@Failure	403	{object}	ErrorResponse	"needs the editor role"
//	@Failure	404	{object}	ErrorResponse	"no such rule"
//	@Failure	412	{object}	ErrorResponse	"If-Match names another version"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
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
	match := ifMatchHeader(c)
	err = h.sync.write(c.UserContext(), false, func(tx *ruleTx) error {
		r, err := currentRule(tx, id, match)
		if err != nil {
			return err
		}
		return deleteRule(tx, &r, who)
	})
	if err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

// deleteRule removes r and records its last content as a delete revision.
func deleteRule(tx *ruleTx, r *rule, who actor) error {
	if err := tx.DeleteRule(r.ID, r.Version); err != nil {
		return err
	}
	tx.deleted(r.ID)
	r.Version++
	return revise(tx, r, store.ActionDelete, who)
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
//	@Failure	404			{object}	ErrorResponse	"no rule ever had this id"
//	@Failure	429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
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
	revs, total, err := h.store.ListRevisions(c.UserContext(), id, page)
	if err != nil {
		return ruleMissing(id, err)
	}
	items := make([]RuleRevision, 0, len(revs))
	for _, rev := range revs {
		item := RuleRevision{
			Version: rev.Version, Action: rev.Action, Actor: rev.Actor, Reason: rev.Reason,
			CreatedAt: rev.CreatedAt.UTC(),
		}
		if err := json.Unmarshal([]byte(rev.Content), &item.Rule); err != nil {
			return fmt.Errorf("rule %d revision %d: %w", id, rev.Version, err)
		}
		items = append(items, item)
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
//	@Success	200				{object}	Rule
//	@Failure	400				{object}	ErrorResponse	"toVersion is missing or not a positive whole number"
//	@Failure	401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403				{object}	ErrorResponse	"needs the editor role"
//	@Failure	404				{object}	ErrorResponse	"no such rule, or no such version"
//	@Failure	409				{object}	ErrorResponse	"the old name is taken by another rule now"
//	@Failure	412				{object}	ErrorResponse	"If-Match names another version"
//	@Failure	413				{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure	415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure	429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
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
	match := ifMatchHeader(c)
	var r rule
	err = h.sync.write(c.UserContext(), false, func(tx *ruleTx) error {
		current, err := currentRule(tx, id, match)
		if err != nil {
			return err
		}
		rev, err := tx.GetRevision(id, to)
		if err != nil {
			return fmt.Errorf("rule %d has no version %d: %w", id, to, err)
		}
		var errs []FieldError
		o, err := parseObject([]byte(rev.Content), "", &errs)
		if err != nil {
			return fmt.Errorf("rule %d version %d: %w", id, to, err)
		}
		r = decodeRule(o, current, forReplace)
		validateRule(&r, "", "", &errs)
		if len(errs) > 0 {
			return ValidationFailed(fmt.Sprintf("version %d is not a valid rule any more", to), errs...)
		}
		return updateRule(tx, &r, store.ActionRollback, who)
	})
	if err != nil {
		return err
	}
	return answerRule(c, http.StatusOK, &r)
}

func answerRule(c *fiber.Ctx, status int, r *rule) error {
	setETag(c, r.Version)
	return writeJSON(c, status, r.api())
}

func invalidRule(errs []FieldError) error {
	return ValidationFailed("the rule is not valid; see details", errs...)
}

// ruleMissing words a store.ErrNotFound for rule id.
func ruleMissing(id int64, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no rule has id %d: %w", id, err)
	}
	return err
}

// nameTaken words a store.ErrConflict for a rule name.
func nameTaken(name string, err error) error {
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("a rule named %q exists already: %w", name, err)
	}
	return err
}
