// Package wire owns the JSON of rules: the REST API's rule objects as the
// snapshot instances load them (DecodeRules), and a kind's engine rule as
// the server stores it (EncodeSpec, DecodeSpec). It reads and writes every
// field from its kind's table (engine.Kind), so that the engine's rule
// structs carry no JSON of their own and a new field is one table row. It
// uses the standard library only, like the engine.
package wire
