package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/store"
)

// maxApplyRules bounds the rules of one apply or import.
const maxApplyRules = 100_000

// ApplyRequest is the body of apply: the wanted rules, matched by name.
type ApplyRequest struct {
	Rules []RuleContent `json:"rules"`
}

// PlanItem names a rule a plan touches.
type PlanItem struct {
	Name     string `json:"name" example:"orders-qps"`
	Kind     string `json:"kind" example:"flow"`
	Resource string `json:"resource" example:"GET:/api/orders"`
}

// FieldChange is one field an update changes, with its JSON values before
// and after (null when the field is absent on that side).
type FieldChange struct {
	Field string          `json:"field" example:"threshold"`
	From  json.RawMessage `json:"from" swaggertype:"object"`
	To    json.RawMessage `json:"to" swaggertype:"object"`
}

// PlanUpdate is a rule an apply changes, field by field.
type PlanUpdate struct {
	PlanItem
	Changes []FieldChange `json:"changes"`
}

// ApplyPlan is what an apply does (dryRun false) or would do (dryRun true).
type ApplyPlan struct {
	DryRun  bool         `json:"dryRun"`
	Created []PlanItem   `json:"created"`
	Updated []PlanUpdate `json:"updated"`
	Deleted []PlanItem   `json:"deleted"`
	// Unchanged lists the rules of the body that are already as asked.
	Unchanged []PlanItem `json:"unchanged"`
}

// apply syncs the stored rules to the body.
//
//	@Summary		Apply a rule file (declarative sync for CI)
//	@ID				applyRules
//	@Description	Matches the body's rules to the stored ones by name: creates the new, updates the changed, and with prune=true deletes the stored rules the body does not name. All of it happens in one transaction, or none of it. With dryRun=true nothing is written and the plan says what would be; asking for a plan needs only the viewer role, applying needs an editor. The body is JSON, or YAML with Content-Type application/yaml.
//	@Tags			rules
//	@Accept			json
//	@Accept			application/yaml
//	@Produce		json
//	@Param			dryRun			query		bool			false	"only answer the plan"						default(false)
//	@Param			prune			query		bool			false	"delete the rules the body does not name"	default(false)
//	@Param			rules			body		ApplyRequest	true	"the wanted rules; each needs a name"
//	@Param			X-Change-Reason	header		string			false	"why, kept in each changed rule's history"
//	@Success		200				{object}	ApplyPlan
//	@Failure		400				{object}	ErrorResponse	"the body is not JSON or YAML, or a bad query parameter"
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"needs the editor role unless dryRun=true"
//	@Failure		413				{object}	ErrorResponse	"the body is over 64 MiB"
//	@Failure		415				{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422				{object}	ErrorResponse	"bad rules, each field named as rules[i].field"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/apply [post]
func (h *ruleHandler) apply(c *fiber.Ctx) error {
	dryRun, prune, err := applyParams(c)
	if err != nil {
		return err
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	body := c.Body()
	var scalars yamlScalars
	yamlBody := isYAML(c.Get(fiber.HeaderContentType))
	if yamlBody {
		body, scalars, err = yamlToJSON(body) // which refuses duplicate keys itself
	} else {
		err = refuseDuplicateKeys(body)
	}
	if err != nil {
		return err
	}
	var errs []FieldError
	o, err := parseObject(body, "", &errs)
	switch {
	case err != nil && yamlBody:
		return BadRequest("the body must be a YAML mapping: a rule file is a mapping with a rules list")
	case err != nil:
		return errNotJSONObject(err)
	}
	var items []json.RawMessage
	if v, _ := o.value("rules"); v == nil {
		errs = append(errs, FieldError{"rules", "is required: a list of rules"})
	} else if err := json.Unmarshal(v, &items); err != nil {
		errs = append(errs, FieldError{"rules", "must be a list of rules"})
	}
	o.rest(func(string) string { return "" })
	if len(errs) > 0 {
		return ValidationFailed("the body is not a valid rule file; see details", errs...)
	}
	rules, err := decodeApplyRules(items, scalars)
	if err != nil {
		return err
	}
	plan, err := h.sync.apply(c.UserContext(), rules, dryRun, prune, who)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, plan)
}

func applyParams(c *fiber.Ctx) (dryRun, prune bool, err error) {
	for name, dst := range map[string]*bool{"dryRun": &dryRun, "prune": &prune} {
		v, err := boolParam(c, name)
		if err != nil {
			return false, false, err
		}
		*dst = v != nil && *v
	}
	return dryRun, prune, nil
}

func isYAML(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	switch strings.TrimSpace(strings.ToLower(mediaType)) {
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
	}
	return false
}

// decodeApplyRules decodes and validates the rules of an apply body, with
// scalars if it was YAML; every bad field is named rules[i].field, and its
// message names the rule.
func decodeApplyRules(items []json.RawMessage, scalars yamlScalars) ([]rule, error) {
	named := map[string]int{}
	return decodeRuleList(items, "the rule file is not valid; nothing was applied; see details",
		func(i int, o *object, errs *[]FieldError) rule {
			o.scalars = scalars
			// Peeked, not read: decodeRule reads the name, and reports it
			// once if it is bad.
			if o.label = o.peekStr("name"); o.label == "" {
				o.label = fmt.Sprintf("#%d", i)
			}
			r := decodeRule(o, rule{}, forApply)
			if first, dup := named[r.Name]; dup && r.Name != "" {
				*errs = append(*errs, FieldError{o.path + "name", fmt.Sprintf("rule %q: the name is used by rules[%d] too", r.Name, first)})
			}
			named[r.Name] = i
			return r
		})
}

// decodeRuleList decodes the rule objects of an apply or import body with
// decode, which reads one object (its o.label names the rule in messages),
// and validates each: every bad field is named rules[i].field. failed is
// the message when any is bad.
func decodeRuleList(items []json.RawMessage, failed string, decode func(i int, o *object, errs *[]FieldError) rule) ([]rule, error) {
	if len(items) > maxApplyRules {
		msg := fmt.Sprintf("holds %d rules, more than the %d one request takes", len(items), maxApplyRules)
		return nil, ValidationFailed("too many rules: "+msg, FieldError{"rules", msg})
	}
	var errs []FieldError
	rules := make([]rule, 0, len(items))
	for i, item := range items {
		o, err := parseObject(item, fmt.Sprintf("rules[%d].", i), &errs)
		if err != nil {
			errs = append(errs, FieldError{Field: fmt.Sprintf("rules[%d]", i), Message: "must be a rule object"})
			continue
		}
		r := decode(i, o, &errs)
		validateRule(&r, o.path, o.label, &errs)
		rules = append(rules, r)
	}
	if len(errs) > 0 {
		return nil, ValidationFailed(failed, errs...)
	}
	return rules, nil
}

// apply syncs the stored rules to want in one transaction (see
// ruleHandler.apply) and returns the plan.
func (s *ruleSync) apply(ctx context.Context, want []rule, dryRun, prune bool, who actor) (ApplyPlan, error) {
	plan := ApplyPlan{DryRun: dryRun, Created: []PlanItem{}, Updated: []PlanUpdate{}, Deleted: []PlanItem{}, Unchanged: []PlanItem{}}
	err := s.write(ctx, dryRun, func(tx *ruleTx) error {
		var creates []*rule
		for i := range want {
			r := &want[i]
			item := PlanItem{Name: r.Name, Kind: r.Kind, Resource: r.Resource}
			old, exists := tx.named(r.Name)
			if !exists {
				creates = append(creates, r)
				plan.Created = append(plan.Created, item)
				continue
			}
			if old.Kind != r.Kind {
				msg := fmt.Sprintf("rule %q is of kind %s; a rule's kind cannot change (delete it, or use another name)", r.Name, old.Kind)
				return ValidationFailed(msg, FieldError{fmt.Sprintf("rules[%d].kind", i), msg})
			}
			changes, err := contentChanges(old.content(), r.content())
			if err != nil {
				return err
			}
			if len(changes) == 0 {
				plan.Unchanged = append(plan.Unchanged, item)
				continue
			}
			r.ID, r.Version, r.CreatedAt = old.ID, old.Version, old.CreatedAt
			if err := updateRule(tx, r, store.ActionUpdate, who); err != nil {
				return err
			}
			plan.Updated = append(plan.Updated, PlanUpdate{PlanItem: item, Changes: changes})
		}
		if err := createRules(tx, creates, who); err != nil {
			return err
		}
		if !prune {
			return nil
		}
		wanted := make(map[string]bool, len(want))
		for _, r := range want {
			wanted[r.Name] = true
		}
		var unwanted []rule
		for _, r := range tx.stored {
			if !wanted[r.Name] {
				unwanted = append(unwanted, r)
			}
		}
		slices.SortFunc(unwanted, func(a, b rule) int { return strings.Compare(a.Name, b.Name) })
		for _, old := range unwanted {
			if err := deleteRule(tx, &old, who); err != nil {
				return err
			}
			plan.Deleted = append(plan.Deleted, PlanItem{Name: old.Name, Kind: old.Kind, Resource: old.Resource})
		}
		return nil
	})
	return plan, err
}

// contentChanges lists the fields in which two rules differ, by field
// name, the name itself aside (rules are matched by it).
func contentChanges(from, to RuleContent) ([]FieldChange, error) {
	fromJSON, err := json.Marshal(from)
	if err != nil {
		return nil, err
	}
	toJSON, err := json.Marshal(to)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(fromJSON, toJSON) {
		return nil, nil
	}
	var fromFields, toFields map[string]json.RawMessage
	if err := errors.Join(json.Unmarshal(fromJSON, &fromFields), json.Unmarshal(toJSON, &toFields)); err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(fromFields))
	for name := range toFields {
		if _, ok := fromFields[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var changes []FieldChange
	for _, name := range names {
		a, b := fromFields[name], toFields[name]
		if name == "name" || bytes.Equal(a, b) {
			continue
		}
		changes = append(changes, FieldChange{Field: name, From: orNull(a), To: orNull(b)})
	}
	return changes, nil
}

func orNull(v json.RawMessage) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	return v
}

// RuleFile is what export writes: every rule, in the shape apply takes.
type RuleFile struct {
	Rules []RuleContent `json:"rules"`
}

// export writes every rule as a file that apply takes back unchanged.
//
//	@Summary		Export every rule
//	@ID				exportRules
//	@Description	In the shape apply takes, by name, so that export then apply is a no-op.
//	@Tags			rules
//	@Produce		json
//	@Produce		application/yaml
//	@Param			format	query		string	false	"json or yaml"	Enums(json, yaml)	default(json)
//	@Success		200		{object}	RuleFile
//	@Failure		400		{object}	ErrorResponse	"an unknown format"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/export [get]
func (h *ruleHandler) export(c *fiber.Ctx) error {
	format := c.Query("format", "json")
	if format != "json" && format != "yaml" {
		return BadRequest("format must be json or yaml", FieldError{"format", "must be json or yaml"})
	}
	rows, err := h.store.AllRules(c.UserContext())
	if err != nil {
		return err
	}
	file := RuleFile{Rules: make([]RuleContent, 0, len(rows))}
	for _, row := range rows {
		r, err := ruleFromStore(row)
		if err != nil {
			return err
		}
		file.Rules = append(file.Rules, r.content())
	}
	slices.SortFunc(file.Rules, func(a, b RuleContent) int { return strings.Compare(a.Name, b.Name) })
	if format == "json" {
		return writeJSON(c, http.StatusOK, file)
	}
	data, err := yaml.Marshal(file)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "application/yaml; charset=utf-8")
	return c.Status(http.StatusOK).Send(data)
}

// importRules converts sentinel-golang rules and applies them.
//
//	@Summary		Import sentinel-golang rules
//	@ID				importRules
//	@Description	Takes sentinel-golang's rule JSON (an array of flow.Rule, or of circuitbreaker.Rule with kind=circuitBreaker) and applies it like apply (no prune). Sentinel's zero values mean "unset" and take Sluice's defaults; fields Sentinel ignores for a rule's behaviour are dropped. Names are made up in file order (flow-<slug of resource>, -2, …), so importing the same file twice changes nothing. With dryRun=true (a viewer may ask) nothing is written.
//	@Tags			rules
//	@Accept			json
//	@Produce		json
//	@Param			format	query		string				true	"the source format"					Enums(sentinel)
//	@Param			kind	query		string				false	"the kind of the rules in the file"	Enums(flow, circuitBreaker)	default(flow)
//	@Param			dryRun	query		bool				false	"only answer the plan"				default(false)
//	@Param			rules	body		[]SentinelFlowRule	true	"sentinel-golang flow rules; with kind=circuitBreaker, circuitbreaker.Rule objects (id, resource, strategy 0 SlowRequestRatio / 1 ErrorRatio / 2 ErrorCount, retryTimeoutMs, minRequestAmount, statIntervalMs, statSlidingWindowBucketCount, maxAllowedRtMs, threshold, probeNum)"
//	@Success		200		{object}	ApplyPlan
//	@Failure		400		{object}	ErrorResponse	"not a JSON array, or a bad query parameter"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403		{object}	ErrorResponse	"needs the editor role unless dryRun=true"
//	@Failure		413		{object}	ErrorResponse	"the body is over 64 MiB"
//	@Failure		415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422		{object}	ErrorResponse	"bad rules, each field named as rules[i].field"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/import [post]
func (h *ruleHandler) importRules(c *fiber.Ctx) error {
	if format := c.Query("format"); format != "sentinel" {
		return BadRequest("format must be sentinel", FieldError{"format", "must be sentinel"})
	}
	convert := convertSentinelFlowRules
	switch c.Query("kind", kindFlow) {
	case kindFlow:
	case kindBreaker:
		convert = convertSentinelBreakerRules
	default:
		return BadRequest("kind must be flow or circuitBreaker", FieldError{"kind", "must be flow or circuitBreaker"})
	}
	dryRun, err := boolParam(c, "dryRun")
	if err != nil {
		return err
	}
	who, err := changeActor(c)
	if err != nil {
		return err
	}
	var items []json.RawMessage
	if err := refuseDuplicateKeys(c.Body()); err != nil {
		return err
	}
	if err := json.Unmarshal(c.Body(), &items); err != nil || items == nil {
		return BadRequest("the body must be a JSON array of sentinel-golang flow rules")
	}
	rules, err := convert(items)
	if err != nil {
		return err
	}
	plan, err := h.sync.apply(c.UserContext(), rules, dryRun != nil && *dryRun, false, who)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, plan)
}
