// Package codec holds the server's hand-written JSON and YAML codecs. Its
// decoders are strict: Object reads a JSON object field by field, so that
// every bad field of a request body (unknown, of the wrong JSON type, a
// fraction where a whole number belongs, a key given twice) gets its own
// error named by its path; CheckBody refuses text no decoder should take;
// YAMLToJSON turns a YAML rule file into the JSON those decoders read,
// with its aliases bounded; Scanner reads the plainest tokens for a fast
// decoder of one known shape, which leaves the rest to Object. Its encoders (AppendString, AppendFloat,
// AppendTime) write values exactly as encoding/json does, without
// reflection, for the answers the server writes most often.
package codec
