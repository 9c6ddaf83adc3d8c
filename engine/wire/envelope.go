package wire

import (
	"regexp"

	"github.com/sluicehq/sluice/engine"
)

// EnvelopeFields are the fields every rule has besides its kind, in the
// order clients list them; the engine checks the name, resource and mode,
// and the server the description's length and the app's pattern.
var EnvelopeFields = engine.Fields{
	{Name: "name", Type: engine.FieldString, Label: "Name", Example: "orders-qps",
		Help: "Lower-case letters, digits, \".\", \"_\" and \"-\". Left empty on create, one is made up from the kind and the resource."},
	{Name: "resource", Type: engine.FieldString, Label: "Resource", Required: true, Example: "GET:/api/orders", MaxLength: engine.MaxResourceNameLen,
		Help: "The name the traffic is counted under, e.g. GET:/api/orders."},
	{Name: "description", Type: engine.FieldString, Label: "Description", Example: "Black Friday cap", MaxLength: 1024, Multiline: true,
		Help: "Optional; at most 1024 characters."},
	{Name: "app", Type: engine.FieldString, Label: "App", Example: "checkout", MaxLength: MaxAppLen,
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

// MaxAppLen is the longest an app's name may be.
const MaxAppLen = 64

// AppPattern is an app's name (docs/api.md, the rule field app), as rules and
// the instances that run them name it.
var AppPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)
