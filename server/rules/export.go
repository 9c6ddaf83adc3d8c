package rules

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/engine"
)

// exportOrder is where the fields every rule has go in an exported rule:
// kind, name and resource first, as a hand-written file has them; the
// kind's fields follow in their table's order.
var exportOrder = []string{"kind", "name", "resource", "app", "description", "enabled", "mode", "expiresAt"}

// envelopeDefaults are the values of the fields every rule has that
// export leaves out, as apply fills them in.
var envelopeDefaults = map[string]string{"enabled": "true", "mode": `"enforce"`, "description": `""`}

// exportedField is one field of an exported rule, its value as JSON.
type exportedField struct {
	key   string
	value json.RawMessage
}

// exportedRule is a rule as export writes it: the fields that differ from
// their defaults, in exportOrder and then the kind's table order, so that
// a file exported and kept in a repository diffs like a hand-written one.
// Apply fills the defaults back in: export then apply changes nothing.
type exportedRule []exportedField

// exportOf returns r as export writes it.
func exportOf(r *Rule) (exportedRule, error) {
	raw, err := json.Marshal(ContentOf(r))
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	var out exportedRule
	take := func(key string, def *string) {
		v, ok := fields[key]
		if !ok || def != nil && bytes.Equal(v, []byte(*def)) {
			return
		}
		out = append(out, exportedField{key, v})
	}
	for _, key := range exportOrder {
		if def, ok := envelopeDefaults[key]; ok {
			take(key, &def)
		} else {
			take(key, nil)
		}
	}
	if k, ok := engine.LookupKind(r.Kind); ok {
		for _, f := range k.Fields {
			if f.Default == nil {
				take(f.Name, nil)
				continue
			}
			def, err := json.Marshal(f.Default)
			if err != nil {
				return nil, fmt.Errorf("the default of %s: %w", f.Name, err)
			}
			s := string(def)
			take(f.Name, &s)
		}
	}
	return out, nil
}

// MarshalJSON writes the fields in order.
func (e exportedRule) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MarshalYAML writes the fields in order, each value as YAML writes it
// (quoting the strings that would read as something else).
func (e exportedRule) MarshalYAML() (any, error) {
	node := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range e {
		var v any
		if err := json.Unmarshal(f.value, &v); err != nil {
			return nil, err
		}
		value := &yaml.Node{}
		if err := value.Encode(v); err != nil {
			return nil, err
		}
		node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.key}, value)
	}
	return node, nil
}

// ExportFile writes rules as a rule file apply takes, in format "json" or
// "yaml": each rule's fields in a fixed order (kind, name, resource, …,
// then its kind's), those at their defaults left out.
func ExportFile(all []Rule, format string) ([]byte, error) {
	file := struct {
		Rules []exportedRule `json:"rules" yaml:"rules"`
	}{Rules: make([]exportedRule, len(all))}
	for i := range all {
		r, err := exportOf(&all[i])
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", all[i].Name, err)
		}
		file.Rules[i] = r
	}
	if format == "yaml" {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(file); err != nil {
			return nil, err
		}
		return b.Bytes(), enc.Close()
	}
	return json.Marshal(file)
}
