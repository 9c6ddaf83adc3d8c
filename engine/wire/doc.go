// Package wire owns the JSON of rules. It reads a JSON object field by
// field, naming every bad field by its path (Object); reads a rule, the
// envelope every rule has and its kind's fields, from a request, a rule
// file or the snapshot an instance loads, with one decoder (DecodeRule,
// ValidateRule, DecodeRules); and writes a kind's engine rule as the
// server stores it (EncodeSpec, DecodeSpec). Every field is read and
// written from its kind's table (engine.Kind), so that the engine's rule
// structs carry no JSON of their own and a new field is one table row. It
// uses the standard library only, like the engine.
package wire
