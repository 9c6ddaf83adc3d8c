package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Rule kinds, as the REST API names them in a rule's "kind".
const (
	KindFlow           = "flow"
	KindCircuitBreaker = "circuitBreaker"
	KindHotspot        = "hotspot"
	KindAuthority      = "authority"
	KindSystem         = "system"
)

// envelopeFields are the fields every rule of the REST API has besides its
// kind's (FlowRuleFields and the others). Name, resource and mode are
// the engine rule's own; the rest tell the server's bookkeeping (id,
// version, app…) and change nothing in what the rule does.
var envelopeFields = map[string]bool{
	"id": true, "name": true, "kind": true, "app": true, "resource": true,
	"enabled": true, "mode": true, "description": true, "expiresAt": true,
	"expired": true, "version": true, "createdAt": true, "updatedAt": true,
}

// kindFields are the field tables of the kinds DecodeRules reads.
var kindFields = map[string]Fields{
	KindFlow:           FlowRuleFields,
	KindCircuitBreaker: BreakerRuleFields,
	KindHotspot:        HotspotRuleFields,
	KindAuthority:      AuthorityRuleFields,
	KindSystem:         SystemRuleFields,
}

// DecodeRules reads rules in the REST API's JSON shape (the items of
// GET /rules, the rules of GET /rules/snapshot) into the engine rules they
// load as: every rule of the set, disabled ones left out, and every
// resource a rule is on, once, in the order of its first rule. Loaded with
// LoadResourceRules, together with the resources that hold rules now, the
// set replaces them all; it replaces the system rules too (ReplaceSystem),
// which have no resource.
//
// Each rule is checked as the engine would load it. A field the rule's
// kind does not have is refused rather than ignored, since it may change
// what the rule does; so is a kind the engine does not enforce. The error
// is a *ValidationError naming every bad field as "rules[i].field".
func DecodeRules(items []json.RawMessage) (ResourceRules, error) {
	set := ResourceRules{ReplaceSystem: true}
	var errs fieldErrors
	onResource := map[string]bool{}
	for i, item := range items {
		resource, ok := decodeRule(item, fmt.Sprintf("rules[%d]", i), &set, &errs)
		if ok && resource != "" && !onResource[resource] {
			onResource[resource] = true
			set.Resources = append(set.Resources, resource)
		}
	}
	if len(errs) > 0 {
		return ResourceRules{}, &ValidationError{Fields: errs}
	}
	return set, nil
}

// apiEnvelope is what DecodeRules reads of a rule besides its engine rule.
type apiEnvelope struct {
	Kind      string  `json:"kind"`
	Enabled   *bool   `json:"enabled"`
	ExpiresAt *string `json:"expiresAt"`
}

// decodeRule adds the rule item to set, unless it is disabled, and returns
// its resource ("" for a system rule) and whether it was added. Its bad
// fields are added to errs, named from path.
func decodeRule(item json.RawMessage, path string, set *ResourceRules, errs *fieldErrors) (string, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
		errs.add(path, "must be a JSON object")
		return "", false
	}
	var env apiEnvelope
	if err := json.Unmarshal(item, &env); err != nil {
		errs.add(fieldPath(path, typeErrorField(err)), "has the wrong JSON type")
		return "", false
	}
	table, known := kindFields[env.Kind]
	if !known {
		errs.add(path+".kind", fmt.Sprintf("is %q, not one of %s, %s, %s, %s, %s", env.Kind, KindFlow, KindCircuitBreaker, KindHotspot, KindAuthority, KindSystem))
		return "", false
	}
	before := len(*errs)
	for name := range fields {
		if _, own := table.Lookup(name); !own && !envelopeFields[name] {
			errs.add(path+"."+name, "is not a field of kind "+env.Kind)
		}
	}
	if raw, ok := fields["resource"]; ok && env.Kind == KindSystem && string(raw) != "null" && string(raw) != `""` {
		errs.add(path+".resource", "is not a field of kind system: its rules guard every inbound call")
	}
	var expiresAtMs int64
	if env.ExpiresAt != nil && *env.ExpiresAt != "" {
		at, err := time.Parse(time.RFC3339, *env.ExpiresAt)
		if err != nil {
			errs.add(path+".expiresAt", "must be an RFC 3339 time")
		}
		expiresAtMs = at.UnixMilli()
	}
	if len(*errs) > before || env.Enabled != nil && !*env.Enabled {
		return "", false
	}
	switch env.Kind {
	case KindFlow:
		return decodeKindRule(item, path, expiresAtMs, table, &set.Flow, errs)
	case KindCircuitBreaker:
		return decodeKindRule(item, path, expiresAtMs, table, &set.CircuitBreakers, errs)
	case KindHotspot:
		return decodeKindRule(item, path, expiresAtMs, table, &set.Hotspot, errs)
	case KindSystem:
		return decodeKindRule(item, path, expiresAtMs, table, &set.System, errs)
	default:
		return decodeKindRule(item, path, expiresAtMs, table, &set.Authority, errs)
	}
}

// decodableRule is an engine rule DecodeRules reads: its JSON names are
// the API's, but for expiresAtMs, which the API gives as expiresAt.
type decodableRule[R any] interface {
	validatable[R]
	resource() string
	withExpiresAtMs(ms int64) R
}

// decodeKindRule decodes item as a rule of its kind, whose fields are
// table, and appends it to rules if it is valid.
func decodeKindRule[R decodableRule[R]](item json.RawMessage, path string, expiresAtMs int64, table Fields, rules *[]R, errs *fieldErrors) (string, bool) {
	var rule R
	if err := json.Unmarshal(item, &rule); err != nil {
		name := typeErrorField(err)
		message := "has the wrong JSON type"
		if f, ok := table.Lookup(name); ok {
			message = "must be of type " + string(f.Type)
		}
		errs.add(fieldPath(path, name), message)
		return "", false
	}
	rule = rule.withExpiresAtMs(expiresAtMs)
	invalid := rule.WithDefaults().Validate()
	for _, fe := range invalid {
		if fe.Field == "expiresAtMs" {
			fe.Field = "expiresAt"
		}
		errs.add(path+"."+fe.Field, fe.Message)
	}
	if len(invalid) > 0 {
		return "", false
	}
	*rules = append(*rules, rule)
	return rule.resource(), true
}

// fieldPath is the path of field name in the rule at path, or the rule's
// own path if name is "".
func fieldPath(path, name string) string {
	if name == "" {
		return path
	}
	return path + "." + name
}

// typeErrorField names the field a JSON decoding error is about, "" if
// it is about no field in particular.
func typeErrorField(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return typeErr.Field
	}
	return ""
}

func (r FlowRule) resource() string           { return r.Resource }
func (r CircuitBreakerRule) resource() string { return r.Resource }
func (r HotspotRule) resource() string        { return r.Resource }
func (r AuthorityRule) resource() string      { return r.Resource }
func (r SystemRule) resource() string         { return "" }

func (r FlowRule) withExpiresAtMs(ms int64) FlowRule { r.ExpiresAtMs = ms; return r }
func (r CircuitBreakerRule) withExpiresAtMs(ms int64) CircuitBreakerRule {
	r.ExpiresAtMs = ms
	return r
}
func (r HotspotRule) withExpiresAtMs(ms int64) HotspotRule     { r.ExpiresAtMs = ms; return r }
func (r AuthorityRule) withExpiresAtMs(ms int64) AuthorityRule { r.ExpiresAtMs = ms; return r }
func (r SystemRule) withExpiresAtMs(ms int64) SystemRule       { r.ExpiresAtMs = ms; return r }
