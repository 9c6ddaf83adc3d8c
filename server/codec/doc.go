// Package codec holds the server's hand-written JSON and YAML codecs. Its
// decoders are strict: ParseBody reads a request body into an
// engine/wire Object, which names every bad field (unknown, of the wrong
// JSON type, a fraction where a whole number belongs) by its path, after
// CheckBody has refused text no decoder should take and a key given twice;
// YAMLToJSON turns a YAML rule file into the JSON those decoders read,
// with its aliases bounded; Scanner reads the plainest tokens for a fast
// decoder of one known shape, which leaves the rest to Object. Its encoders (AppendString, AppendFloat,
// AppendTime) write values exactly as encoding/json does, without
// reflection, for the answers the server writes most often.
package codec
