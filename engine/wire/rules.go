package wire

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/engine"
)

// DecodeRules reads rules in the REST API's JSON shape (the items of
// GET /rules, the rules of GET /rules/snapshot) into the engine rules they
// load as: every rule of the set, disabled ones left out, and every
// resource a rule is on, once, in the order of its first rule. Loaded with
// engine.LoadResourceRules, together with the resources that hold rules now, the
// set replaces them all; it replaces the system rules too (ReplaceSystem),
// which have no resource.
//
// Each rule is read by DecodeRule, as the server reads a rule file, and
// checked as the engine would load it. A field the rule's kind does not
// have is refused rather than ignored, since it may change what the rule
// does; so is a kind the engine does not enforce. The error is a
// *engine.ValidationError naming every bad field as "rules[i].field".
func DecodeRules(items []json.RawMessage) (engine.ResourceRules, error) {
	set := engine.ResourceRules{ReplaceSystem: true}
	var errs []engine.FieldError
	onResource := map[string]bool{}
	for i, item := range items {
		path := fmt.Sprintf("rules[%d]", i)
		o, err := Parse(item, path+".", &errs)
		if err != nil {
			errs = append(errs, engine.FieldError{Field: path, Message: "must be a JSON object"})
			continue
		}
		before := len(errs)
		r := DecodeRule(o, Rule{}, ForCreate)
		ValidateRule(&r, path+".", "", &errs)
		if len(errs) > before || !r.Enabled {
			continue
		}
		r.Enforce(&set)
		if resource := r.Resource; resource != "" && !onResource[resource] {
			onResource[resource] = true
			set.Resources = append(set.Resources, resource)
		}
	}
	if len(errs) > 0 {
		return engine.ResourceRules{}, &engine.ValidationError{Fields: errs}
	}
	return set, nil
}
