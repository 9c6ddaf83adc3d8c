package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/descriptor"
)

// Bounds of one envoyproxy/ratelimit configuration (ImportEnvoy): a real
// one is a few hundred nodes a few levels deep, and Envoy's rate limit
// actions rarely send more than a handful of entries per descriptor.
const (
	// MaxEnvoyConfigBytes bounds the YAML file; the caller of ImportEnvoy
	// refuses a larger one.
	MaxEnvoyConfigBytes = 4 << 20
	// MaxEnvoyNodes bounds the descriptor nodes of the file, with or
	// without a rate_limit.
	MaxEnvoyNodes = 10_000
	// MaxEnvoyDepth bounds how deep descriptors nest: the entries of a
	// descriptor path.
	MaxEnvoyDepth = 16
)

// envoyUnitMs are the statIntervalMs of envoyproxy/ratelimit's units that
// Sluice's windows hold; week, month and year are longer than its day.
var envoyUnitMs = map[string]int64{"second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}

// envoyNode is a descriptor node of the file that has a rate_limit: the
// rule it becomes, and where its fields were read, to name them in errors.
type envoyNode struct {
	path  string // "descriptors[2].descriptors[0]."
	rule  Rule
	named bool // the rule's name is its rate_limit.name
	// replaces are rate_limit.replaces[].name, in order.
	replaces []string
}

// envoyImport is one file being read.
type envoyImport struct {
	domain string
	errs   []engine.FieldError
	nodes  []envoyNode
	// count is the nodes read so far, up to one past MaxEnvoyNodes.
	count int
}

// ImportEnvoy turns an envoyproxy/ratelimit configuration file (YAML: a
// domain and its descriptors) into rules that Apply takes: each node with
// a rate_limit becomes a flow rule on descriptor.Resource(domain, path),
// or a hotspot rule on descriptor.ParamKey(path) when the path has
// entries without a value (docs/envoy-import.md). What Sluice cannot
// express is refused, every field named by its path in the file
// (descriptors[2].descriptors[0].rate_limit.unit); nothing is dropped. A
// body that is no YAML is a *codec.YAMLError.
func ImportEnvoy(body []byte) ([]Rule, error) {
	data, err := codec.YAMLToJSON(body)
	if err != nil {
		return nil, err
	}
	var imp envoyImport
	root, err := wire.Parse(data, "", &imp.errs)
	if err != nil {
		msg := "must be a YAML mapping with a domain and its descriptors"
		return nil, invalid("the body "+msg, engine.FieldError{Field: "body", Message: msg})
	}
	if envoyText(root, "domain", &imp.domain) && imp.domain == "" {
		root.Fail("domain", "is required")
	}
	descriptors := envoyList(root, "descriptors")
	root.Rest(func(string) string { return "" })
	if len(imp.errs) == 0 {
		imp.walk(descriptors, "descriptors", nil)
	}
	if len(imp.errs) == 0 {
		imp.name()
		imp.link()
	}
	rules := make([]Rule, 0, len(imp.nodes))
	if len(imp.errs) == 0 {
		for _, n := range imp.nodes {
			rules = append(rules, imp.validate(n))
		}
	}
	if len(imp.errs) > 0 {
		return nil, invalid("the envoyproxy/ratelimit configuration cannot be imported; nothing was applied; see details", imp.errs...)
	}
	return rules, nil
}

// envoyList reads the field name of o as a list of JSON values; absent
// or null is empty.
func envoyList(o *wire.Object, name string) []json.RawMessage {
	var items []json.RawMessage
	if v, _ := o.Value(name); v != nil && json.Unmarshal(v, &items) != nil {
		o.Fail(name, "must be a list")
	}
	return items
}

// walk reads the descriptor nodes items, at field (descriptors, or a
// node's path and descriptors), below the entries parent.
func (imp *envoyImport) walk(items []json.RawMessage, field string, parent []descriptor.Entry) {
	if len(items) > 0 && len(parent) == MaxEnvoyDepth {
		imp.errs = append(imp.errs, engine.FieldError{Field: field,
			Message: fmt.Sprintf("nests descriptors deeper than %d levels", MaxEnvoyDepth)})
		return
	}
	first := map[descriptor.Entry]int{}
	for i, item := range items {
		if imp.count == MaxEnvoyNodes {
			imp.count++ // reported once, where the bound is passed
			imp.errs = append(imp.errs, engine.FieldError{Field: field,
				Message: fmt.Sprintf("the file has more than %d descriptors", MaxEnvoyNodes)})
		}
		if imp.count > MaxEnvoyNodes {
			return
		}
		imp.count++
		path := fmt.Sprintf("%s[%d]", field, i)
		o, err := wire.Parse(item, path+".", &imp.errs)
		if err != nil {
			imp.errs = append(imp.errs, engine.FieldError{Field: path, Message: "must be a descriptor: a mapping with a key"})
			continue
		}
		var e descriptor.Entry
		keyRead := envoyText(o, "key", &e.Key)
		envoyText(o, "value", &e.Value)
		switch {
		case keyRead && e.Key == "":
			o.Fail("key", "is required")
		case strings.Contains(e.Value, "*"):
			o.Fail("value", "holds *, a wildcard of newer envoyproxy/ratelimit versions that Sluice's rate limit service does not match: "+
				"leave the value out to limit each value apart, or list the values")
		default:
			if j, dup := first[e]; dup && e.Key != "" {
				o.Fail(keyOrValue(e), fmt.Sprintf("is that of %s[%d] too: envoyproxy/ratelimit refuses a descriptor twice", field, j))
			} else {
				first[e] = i
			}
		}
		node := envoyNode{path: o.Path}
		limited := imp.rateLimit(o, &node)
		imp.flags(o, o.Has("rate_limit"), &node)
		children := envoyList(o, "descriptors")
		o.Rest(func(string) string { return "" })
		entries := append(append([]descriptor.Entry(nil), parent...), e)
		if limited {
			node.rule.Resource = descriptor.Resource(imp.domain, entries)
			imp.setSpec(&node, entries)
			imp.nodes = append(imp.nodes, node)
		}
		imp.walk(children, o.Path+"descriptors", entries)
	}
}

// envoyText reads a text field (a key, a value, a name), which must be a
// string: a plain YAML 123 or true is none (YAML 1.2), though
// envoyproxy/ratelimit's YAML 1.1 reader takes its text, and reading 0123
// as 123 would change it. It reports whether the field was no other type.
func envoyText(o *wire.Object, name string, dst *string) bool {
	if v, _ := o.Value(name); len(v) > 0 && v[0] != '"' {
		o.Fail(name, "must be a string: in YAML, quote it ('0123', 'true'), as a plain 0123 or true is a number or a boolean")
		return false
	}
	o.Str(name, dst)
	return true
}

func keyOrValue(e descriptor.Entry) string {
	if e.Wildcard() {
		return "key"
	}
	return "value"
}

// envoyLimit is a rate_limit block as read.
type envoyLimit struct {
	unit            string
	requestsPerUnit int64
	unlimited       bool
}

// rateLimit reads the node's rate_limit into node.rule (its envelope,
// name, threshold and interval in a flow rule spec for setSpec to place)
// and reports whether the node has one.
func (imp *envoyImport) rateLimit(o *wire.Object, node *envoyNode) bool {
	v, _ := o.Value("rate_limit")
	if v == nil {
		return false
	}
	rl, err := wire.Parse(v, o.Path+"rate_limit.", &imp.errs)
	if err != nil {
		o.Fail("rate_limit", "must be a mapping: {unit, requests_per_unit}")
		return false
	}
	var l envoyLimit
	r := &node.rule
	r.Enabled, r.Mode = true, string(engine.ModeEnforce)
	hasUnit := rl.Has("unit")
	unitRead := envoyText(rl, "unit", &l.unit)
	hasCount := rl.Integer("requests_per_unit", &l.requestsPerUnit)
	rl.Bool("unlimited", &l.unlimited, false)
	node.named = rl.Has("name") // null is no name, as in envoyproxy/ratelimit
	if envoyText(rl, "name", &r.Name) && node.named && !engine.RuleNamePattern.MatchString(r.Name) {
		rl.Fail("name", "must be a Sluice rule name, which it becomes: 1-128 characters of a-z, 0-9, '.', '_' or '-', starting and ending with a letter or digit")
	}
	for i, item := range envoyList(rl, "replaces") {
		path := fmt.Sprintf("replaces[%d]", i)
		ro, err := wire.Parse(item, rl.Path+path+".", &imp.errs)
		if err != nil {
			rl.Fail(path, "must be a mapping: {name}")
			continue
		}
		var name string
		nameRead := envoyText(ro, "name", &name)
		ro.Rest(func(string) string { return "" })
		if nameRead && name == "" {
			ro.Fail("name", "is required: envoyproxy/ratelimit refuses an empty replaces entry")
		}
		node.replaces = append(node.replaces, name)
	}
	rl.Rest(func(string) string { return "" })

	ms := int64(engine.DefaultStatIntervalMs)
	switch {
	case !unitRead:
	case l.unlimited && hasUnit:
		rl.Fail("unit", "must be left out beside unlimited: true, as envoyproxy/ratelimit requires")
	case l.unlimited:
		r.Enabled = false
	case !hasUnit:
		rl.Fail("unit", "is required: second, minute, hour or day")
	default:
		var known bool
		if ms, known = envoyUnitMs[strings.ToLower(l.unit)]; !known {
			rl.Fail("unit", fmt.Sprintf("is %q; Sluice's windows are second, minute, hour or day (week, month and year are longer than its longest window)", l.unit))
		}
	}
	switch {
	case !hasCount && !l.unlimited:
		rl.Fail("requests_per_unit", "is required (envoyproxy/ratelimit reads a missing one as 0, which refuses every request: write 0 if that is meant)")
	case l.requestsPerUnit < 0 || l.requestsPerUnit > math.MaxUint32:
		rl.Fail("requests_per_unit", fmt.Sprintf("must be between 0 and %d", uint32(math.MaxUint32)))
	}
	r.Spec = engine.FlowRule{Threshold: float64(l.requestsPerUnit), StatIntervalMs: ms}
	return true
}

// flags reads the node's flags: shadow_mode, detailed_metric and
// value_to_metric (metrics only, which Sluice always keeps per resource
// and per hot value), and refuses those Sluice cannot express.
func (imp *envoyImport) flags(o *wire.Object, limited bool, node *envoyNode) {
	var shadow, quota, share, metric bool
	o.Bool("shadow_mode", &shadow, false)
	o.Bool("detailed_metric", &metric, false)
	o.Bool("value_to_metric", &metric, false)
	o.Bool("quota_mode", &quota, false)
	o.Bool("share_threshold", &share, false)
	switch {
	case shadow && !limited:
		o.Fail("shadow_mode", "applies only to a descriptor with a rate_limit (envoyproxy/ratelimit ignores it here): remove it")
	case shadow:
		node.rule.Mode = string(engine.ModeShadow)
	}
	if quota {
		o.Fail("quota_mode", "cannot be imported: Sluice's rate limit service has no quota mode")
	}
	if share {
		o.Fail("share_threshold", "cannot be imported: it shares one count between the values a wildcard matches, and Sluice does not import wildcard values")
	}
	if v, _ := o.Value("metadata"); v != nil {
		o.Fail("metadata", "cannot be imported: Sluice's rate limit service answers no descriptor metadata")
	}
}

// setSpec makes node's rule, read by rateLimit as a flow rule spec, a
// hotspot rule when entries has a wildcard: one count per value.
func (imp *envoyImport) setSpec(node *envoyNode, entries []descriptor.Entry) {
	flow := node.rule.Spec.(engine.FlowRule)
	flow.Replaces = strings.Join(node.replaces, ",")
	node.rule.Description = "Imported from envoyproxy/ratelimit, domain " + imp.domain
	if key := descriptor.ParamKey(entries); key != "" {
		node.rule.Kind = engine.KindHotspot
		node.rule.Spec = engine.HotspotRule{ParamKey: key, Metric: engine.MetricQPS, Threshold: flow.Threshold,
			StatIntervalMs: flow.StatIntervalMs, Replaces: flow.Replaces}
		return
	}
	node.rule.Kind = engine.KindFlow
	node.rule.Spec = flow
}

// maxGeneratedStem leaves room in a rule name for "-" and a hash.
const maxGeneratedStem = maxRuleNameLen - 1 - envoyHashLen

const envoyHashLen = 8

// name gives each rule its rate_limit.name, refusing one used twice, or a
// name made from its resource (envoyStem), with a hash of the resource
// appended when the stem was cut or is another rule's too.
func (imp *envoyImport) name() {
	explicit := map[string]int{}
	stems := map[string]int{}
	for i, n := range imp.nodes {
		if !n.named {
			stems[envoyStem(n.rule.Resource)]++
			continue
		}
		if j, dup := explicit[n.rule.Name]; dup {
			imp.errs = append(imp.errs, engine.FieldError{Field: n.path + "rate_limit.name",
				Message: fmt.Sprintf("is the name of %srate_limit too: it names one rule", imp.nodes[j].path)})
			continue
		}
		explicit[n.rule.Name] = i
	}
	for i := range imp.nodes {
		n := &imp.nodes[i]
		if n.named {
			continue
		}
		stem := envoyStem(n.rule.Resource)
		_, taken := explicit[stem]
		if len(stem) <= maxRuleNameLen && stems[stem] == 1 && !taken {
			n.rule.Name = stem
			continue
		}
		sum := sha256.Sum256([]byte(n.rule.Resource))
		stem = strings.TrimRight(stem[:min(len(stem), maxGeneratedStem)], "._-")
		n.rule.Name = stem + "-" + hex.EncodeToString(sum[:])[:envoyHashLen]
	}
}

// envoyStem is the name made from a resource: lower case, each run of
// characters a rule name cannot have one "-", without the ".", "_" and "-"
// a name cannot start or end with.
func envoyStem(resource string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(resource) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' && !dash {
			b.WriteRune(c)
			dash = c == '-'
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	if stem := strings.Trim(b.String(), "._-"); stem != "" {
		return stem
	}
	return "envoy"
}

// link checks that every replaces entry names a rate_limit.name of the
// file, as the rule named so is what it replaces.
func (imp *envoyImport) link() {
	names := map[string]bool{}
	for _, n := range imp.nodes {
		if n.named {
			names[n.rule.Name] = true
		}
	}
	for _, n := range imp.nodes {
		for i, name := range n.replaces {
			field := fmt.Sprintf("%srate_limit.replaces[%d].name", n.path, i)
			switch {
			case n.named && name == n.rule.Name:
				imp.errs = append(imp.errs, engine.FieldError{Field: field, Message: "names this rate_limit itself, which envoyproxy/ratelimit refuses"})
			case !names[name]:
				imp.errs = append(imp.errs, engine.FieldError{Field: field,
					Message: fmt.Sprintf("is %q, which is the rate_limit.name of no descriptor of this file", name)})
			}
		}
	}
}

// envoyFields names, in the file, the fields of the rules ImportEnvoy
// makes.
var envoyFields = map[string]string{
	"name":           "rate_limit.name",
	"threshold":      "rate_limit.requests_per_unit",
	"statIntervalMs": "rate_limit.unit",
	"replaces":       "rate_limit.replaces",
	"resource":       "key",
	"paramKey":       "key",
}

// validate validates node's rule as an apply body's, naming what is wrong
// by the node's fields, and returns it with its defaults.
func (imp *envoyImport) validate(n envoyNode) Rule {
	var errs []engine.FieldError
	wire.ValidateRule(&n.rule, "", n.rule.Name, &errs)
	for _, e := range errs {
		field, ok := envoyFields[e.Field]
		if !ok {
			field = "rate_limit"
		}
		if field == "key" {
			e.Message += " (made from the domain and the keys and values down to here)"
		}
		imp.errs = append(imp.errs, engine.FieldError{Field: n.path + field, Message: e.Message})
	}
	return n.rule
}
