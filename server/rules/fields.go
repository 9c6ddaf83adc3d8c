package rules

import (
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/engine"
)

// Kind is a rule kind as clients list it, with the engine's field table
// of its own fields.
type Kind struct {
	// Kind is the kind's name in rules ("flow").
	Kind string
	// Label names the kind for people; Title heads its fields in a form.
	Label, Title string
	// Help says in a few words what a rule of the kind does.
	Help   string
	Fields engine.Fields
	// NoResource says that a rule of the kind is on no resource: it
	// guards its whole process.
	NoResource bool
}

// Kinds are the rule kinds, in the order clients offer them.
var Kinds = []Kind{
	{Kind: KindFlow, Label: "Flow", Title: "Flow rule", Help: "cap requests per second or calls in flight", Fields: engine.FlowRuleFields},
	{Kind: KindBreaker, Label: "Circuit breaker", Title: "Circuit breaker", Help: "stop calls to a failing resource", Fields: engine.BreakerRuleFields},
	{Kind: KindHotspot, Label: "Hotspot", Title: "Hotspot rule", Help: "limit each value of a parameter apart: per user, per key, per IP", Fields: engine.HotspotRuleFields},
	{Kind: KindAuthority, Label: "Authority", Title: "Authority rule", Help: "allow or deny callers by their origin", Fields: engine.AuthorityRuleFields},
	{Kind: KindSystem, Label: "System", Title: "System rule", Help: "protect the whole process: CPU, load, response time, calls in flight", Fields: engine.SystemRuleFields, NoResource: true},
}

// knownKinds lists the kinds a rule may have, for error messages.
var knownKinds = func() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Kind
	}
	return strings.Join(names, ", ")
}()

// EnvelopeFields are the fields every rule has besides its kind, in the
// order clients list them; the engine checks the name, resource and mode,
// and validateRule the description's length.
var EnvelopeFields = engine.Fields{
	{Name: "name", Type: engine.FieldString, Label: "Name", Example: "orders-qps",
		Help: "Lower-case letters, digits, \".\", \"_\" and \"-\". Left empty on create, one is made up from the kind and the resource."},
	{Name: "resource", Type: engine.FieldString, Label: "Resource", Required: true, Example: "GET:/api/orders", MaxLength: engine.MaxResourceNameLen,
		Help: "The name the traffic is counted under, e.g. GET:/api/orders."},
	{Name: "description", Type: engine.FieldString, Label: "Description", Example: "Black Friday cap", MaxLength: 1024, Multiline: true,
		Help: "Optional; at most 1024 characters."},
	{Name: "app", Type: engine.FieldString, Label: "App", Example: "checkout", MaxLength: maxAppLen,
		Help: "Optional: only the instances of this app run the rule, and the server's own engine does not. Left empty, every engine runs it. Lower-case letters, digits, \".\", \"_\" and \"-\"."},
	{Name: "expiresAt", Type: engine.FieldString, Label: "Expires at", Example: "2026-12-01T00:00:00Z",
		Help: "Optional: an RFC 3339 time at which the rule stops applying (it stays stored), for rules that must not outlive an incident."},
	{Name: "enabled", Type: engine.FieldBoolean, Label: "Enabled (a disabled rule is kept but not enforced)", Default: true, Example: true},
	{Name: "mode", Type: engine.FieldString, Label: "Mode", Default: string(engine.ModeEnforce), Example: string(engine.ModeEnforce),
		Options: []engine.Option{
			{Value: string(engine.ModeEnforce), Label: "Enforce: block over the limit"},
			{Value: string(engine.ModeShadow), Label: "Shadow: only count what would be blocked"},
		}},
}

// maxAppLen is the longest an app's name may be.
const maxAppLen = 64

// AppPattern is an app's name (docs/api.md, the rule field app), as rules and
// the instances that run them name it.
var AppPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)
