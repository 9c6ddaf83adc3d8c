// Package strictjson decodes a JSON object field by field, so that every
// bad field of a request body (unknown, of the wrong JSON type, a fraction
// where a whole number belongs, a key given twice) gets its own error named
// by its path, instead of the first one stopping the decoder. The rule
// domain and the check API read their bodies with it.
package strictjson
