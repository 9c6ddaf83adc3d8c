package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// envelopeFields are the fields every rule of the REST API has besides its
// kind's. Name, resource and mode are the engine rule's own; the rest tell
// the server's bookkeeping (id, version, app…) and change nothing in what
// the rule does.
var envelopeFields = map[string]bool{
	"id": true, "name": true, "kind": true, "app": true, "resource": true,
	"enabled": true, "mode": true, "description": true, "expiresAt": true,
	"expired": true, "version": true, "createdAt": true, "updatedAt": true,
}

// DecodeRules reads rules in the REST API's JSON shape (the items of
// GET /rules, the rules of GET /rules/snapshot) into the engine rules they
// load as: every rule of the set, disabled ones left out, and every
// resource a rule is on, once, in the order of its first rule. Loaded with
// engine.LoadResourceRules, together with the resources that hold rules now, the
// set replaces them all; it replaces the system rules too (ReplaceSystem),
// which have no resource.
//
// Each rule is checked as the engine would load it. A field the rule's
// kind does not have is refused rather than ignored, since it may change
// what the rule does; so is a kind the engine does not enforce. The error
// is a *ValidationError naming every bad field as "rules[i].field".
func DecodeRules(items []json.RawMessage) (engine.ResourceRules, error) {
	set := engine.ResourceRules{ReplaceSystem: true}
	var errs []engine.FieldError
	onResource := map[string]bool{}
	for i, item := range items {
		resource, ok := decodeRule(item, fmt.Sprintf("rules[%d]", i), &set, &errs)
		if ok && resource != "" && !onResource[resource] {
			onResource[resource] = true
			set.Resources = append(set.Resources, resource)
		}
	}
	if len(errs) > 0 {
		return engine.ResourceRules{}, &engine.ValidationError{Fields: errs}
	}
	return set, nil
}

// apiEnvelope is what DecodeRules reads of a rule besides its kind's
// fields.
type apiEnvelope struct {
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Resource  *string `json:"resource"`
	Mode      string  `json:"mode"`
	Enabled   *bool   `json:"enabled"`
	ExpiresAt *string `json:"expiresAt"`
}

// decodeRule adds the rule item to set, unless it is disabled, and returns
// its resource ("" for a system rule) and whether it was added. Its bad
// fields are added to errs, named from path.
func decodeRule(item json.RawMessage, path string, set *engine.ResourceRules, errs *[]engine.FieldError) (string, bool) {
	bad := func(field, message string) { *errs = append(*errs, engine.FieldError{Field: field, Message: message}) }
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
		bad(path, "must be a JSON object")
		return "", false
	}
	var env apiEnvelope
	if err := json.Unmarshal(item, &env); err != nil {
		bad(fieldPath(path, typeErrorField(err)), "has the wrong JSON type")
		return "", false
	}
	k, known := engine.LookupKind(env.Kind)
	if !known {
		bad(path+".kind", fmt.Sprintf("is %q, not one of %s", env.Kind, engine.KindNames()))
		return "", false
	}
	before := len(*errs)
	for name := range fields {
		if _, own := k.Fields.Lookup(name); !own && !envelopeFields[name] {
			bad(path+"."+name, "is not a field of kind "+k.Name)
		}
	}
	if k.NoResource && env.Resource != nil && *env.Resource != "" {
		bad(path+".resource", "is not a field of kind "+k.Name+": its rules guard every inbound call")
	}
	rule := k.New()
	if env.ExpiresAt != nil && *env.ExpiresAt != "" {
		at, err := time.Parse(time.RFC3339, *env.ExpiresAt)
		if err != nil {
			bad(path+".expiresAt", "must be an RFC 3339 time")
		}
		k.Value(rule, "expiresAtMs").SetInt(at.UnixMilli())
	}
	if len(*errs) > before || env.Enabled != nil && !*env.Enabled {
		return "", false
	}
	k.Value(rule, "name").SetString(env.Name)
	k.Value(rule, "mode").SetString(env.Mode)
	if !k.NoResource && env.Resource != nil {
		k.Value(rule, "resource").SetString(*env.Resource)
	}
	for _, f := range k.Fields {
		if raw, ok := fields[f.Name]; ok {
			if err := decodeField(k.Value(rule, f.Name), f, raw); err != nil {
				bad(path+"."+f.Name, "must be of type "+string(f.Type))
			}
		}
	}
	if len(*errs) > before {
		return "", false
	}
	for _, fe := range k.Validate(rule) {
		if fe.Field == "expiresAtMs" {
			fe.Field = "expiresAt"
		}
		bad(path+"."+fe.Field, fe.Message)
	}
	if len(*errs) > before {
		return "", false
	}
	k.Add(set, rule)
	return k.Resource(rule), true
}

// decodeField reads raw, the JSON value of f, into dst; null leaves dst as
// it is.
func decodeField(dst reflect.Value, f engine.Field, raw json.RawMessage) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	v := reflect.New(dst.Type())
	if err := json.Unmarshal(raw, v.Interface()); err != nil {
		return err
	}
	dst.Set(v.Elem())
	return nil
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
