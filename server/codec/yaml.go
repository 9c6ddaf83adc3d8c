package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"go.yaml.in/yaml/v3"
)

// MaxYAMLExpansion bounds what a YAML body's anchors and aliases may
// expand to, as a multiple of the body's size (docs/api.md, "Bodies"): a
// 300 KB body of nested aliases would otherwise expand to gigabytes.
const MaxYAMLExpansion = 4

// YAMLToJSON converts a YAML body to the JSON the rule file decoders read.
// The body must hold one document, with no key twice in one mapping, and
// its aliases must expand to at most MaxYAMLExpansion times the body's
// size; that is decided on the parsed tree, in which an alias is one node,
// before anything is expanded. Scalars follow YAML 1.2's core schema, so
// "on", "yes" and "y" are strings, and 123 and true are no strings, as in
// JSON. Merge keys ("<<: *defaults") are merged; the mapping's own keys
// win. A body it cannot convert is a *YAMLError.
func YAMLToJSON(body []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &YAMLError{Message: "the body is empty: a rule file is a YAML mapping with a rules list"}
		}
		return nil, &YAMLError{Message: "the body is not YAML: " + err.Error()}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, &YAMLError{Message: "the body holds more than one YAML document: send one rule file per request"}
	}
	c := yamlConverter{sizes: map[*yaml.Node]int{}}
	budget := MaxYAMLExpansion * len(body)
	size, err := c.size(&doc, budget)
	if err != nil {
		return nil, err
	}
	if size > budget {
		return nil, &YAMLError{Message: fmt.Sprintf("the YAML's aliases expand to more than %d times the body's size", MaxYAMLExpansion)}
	}
	var buf bytes.Buffer
	buf.Grow(size)
	if err := c.write(&buf, &doc, ""); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// yamlConverter writes a YAML node tree as JSON.
type yamlConverter struct {
	// sizes remembers the expanded size of each anchored node, so that
	// sizing many aliases of one anchor costs one walk of it; -1 marks an
	// anchor being sized, so that an alias inside its own anchor is found.
	sizes map[*yaml.Node]int
}

// size is about the number of bytes n expands to as JSON, aliases
// expanded; it stops counting once past budget.
func (c *yamlConverter) size(n *yaml.Node, budget int) (int, error) {
	if n.Kind == yaml.AliasNode {
		return c.size(n.Alias, budget)
	}
	if n.Anchor != "" {
		switch s, ok := c.sizes[n]; {
		case ok && s < 0:
			return 0, &YAMLError{Message: fmt.Sprintf("the YAML anchor %q holds an alias of itself", n.Anchor)}
		case ok:
			return s, nil
		}
		c.sizes[n] = -1
	}
	total := len(n.Value) + 2
	for _, child := range n.Content {
		s, err := c.size(child, budget)
		if err != nil {
			return 0, err
		}
		total += s + 1
		if total > budget {
			break
		}
	}
	if n.Anchor != "" {
		c.sizes[n] = total
	}
	return total, nil
}

// write writes n as JSON; path names n in errors ("rules[3].threshold").
func (c *yamlConverter) write(buf *bytes.Buffer, n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return c.write(buf, n.Content[0], path)
	case yaml.AliasNode:
		return c.write(buf, n.Alias, path)
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := c.write(buf, item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		pairs, err := c.pairs(n, path)
		if err != nil {
			return err
		}
		buf.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(AppendString(buf.AvailableBuffer(), p.key))
			buf.WriteByte(':')
			if err := c.write(buf, p.value, joinPath(path, p.key)); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	}
	return c.writeScalar(buf, n, path)
}

type yamlPair struct {
	key   string
	value *yaml.Node
}

// pairs lists a mapping's keys and values, merge keys resolved: its own
// keys first, then those of the mappings it merges that it does not have,
// the first merged mapping winning. A key twice in the mapping itself is
// an error.
func (c *yamlConverter) pairs(n *yaml.Node, path string) ([]yamlPair, error) {
	var own, merged []yamlPair
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return nil, yamlError("a YAML key must be a plain value", orRoot(path), "has a key that is a list or a mapping")
		}
		if k.ShortTag() == "!!merge" {
			from, err := c.merged(v, path)
			if err != nil {
				return nil, err
			}
			merged = append(merged, from...)
			continue
		}
		if seen[k.Value] {
			field := joinPath(path, k.Value)
			return nil, yamlError(fmt.Sprintf("the key %q appears twice in one mapping", k.Value), field, "appears twice in one mapping")
		}
		seen[k.Value] = true
		own = append(own, yamlPair{k.Value, v})
	}
	for _, p := range merged {
		if !seen[p.key] {
			seen[p.key] = true
			own = append(own, p)
		}
	}
	return own, nil
}

// merged lists the pairs a merge key's value brings: a mapping, or a list
// of mappings, the first winning.
func (c *yamlConverter) merged(v *yaml.Node, path string) ([]yamlPair, error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		return c.pairs(v, path)
	case yaml.SequenceNode:
		var all []yamlPair
		for _, item := range v.Content {
			if item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			if item.Kind != yaml.MappingNode {
				break
			}
			pairs, err := c.pairs(item, path)
			if err != nil {
				return nil, err
			}
			all = append(all, pairs...)
		}
		if len(all) > 0 || len(v.Content) == 0 {
			return all, nil
		}
	}
	return nil, yamlError("a YAML merge key (<<) must name a mapping or a list of mappings", joinPath(path, "<<"), "must be a mapping or a list of mappings")
}

// writeScalar writes a scalar by its YAML 1.2 core schema type. An
// infinite number or NaN is written as its text, a string: a string field
// takes it as written, and a number field refuses it, as any string.
func (c *yamlConverter) writeScalar(buf *bytes.Buffer, n *yaml.Node, path string) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
		return nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return yamlError("the body is not YAML: "+err.Error(), orRoot(path), err.Error())
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			break
		}
		data, err := json.Marshal(v)
		if err != nil {
			return yamlError("the value cannot be written as JSON", orRoot(path), err.Error())
		}
		buf.Write(data)
		return nil
	}
	buf.Write(AppendString(buf.AvailableBuffer(), n.Value))
	return nil
}

// YAMLError is a YAML body that cannot be read as JSON: not YAML, more
// than one document, a key twice in one mapping, aliases that expand too
// far. The HTTP layer answers it 400.
type YAMLError struct {
	// Message is a sentence for a person.
	Message string
	// Field, when set, is the path of the node at fault ("rules[3].name",
	// "body" for the document itself).
	Field string
	// Problem says what is wrong at Field.
	Problem string
}

func (e *YAMLError) Error() string { return e.Message }

// yamlError is a YAMLError about the node at field.
func yamlError(message, field, problem string) *YAMLError {
	return &YAMLError{Message: message, Field: field, Problem: problem}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "body"
	}
	return path
}
