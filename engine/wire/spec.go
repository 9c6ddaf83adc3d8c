package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/sluicehq/sluice/engine"
)

// specExpiresAtMs is the field of a stored spec besides its kind's table:
// when the rule expires (the API's expiresAt, in Unix milliseconds).
const specExpiresAtMs = "expiresAtMs"

// EncodeSpec writes rule, a pointer to one of k's engine rules, as the
// server stores it: a JSON object of its kind's fields and expiresAtMs,
// each that holds a value other than its type's zero, in table order. The
// rule's name, resource and mode are not written: the server keeps them
// beside the spec.
func EncodeSpec(k *engine.Kind, rule any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	write := func(name string, v reflect.Value) error {
		if v.IsZero() {
			return nil
		}
		value, err := json.Marshal(v.Interface())
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
		return nil
	}
	for _, f := range k.Fields {
		if err := write(f.Name, k.Value(rule, f.Name)); err != nil {
			return nil, err
		}
	}
	if err := write(specExpiresAtMs, k.Value(rule, specExpiresAtMs)); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeSpec reads a spec EncodeSpec wrote, or an older one, into rule, a
// pointer to one of k's engine rules. Keys the kind has no field for are
// skipped: a spec stored by an older version may hold them (its name,
// resource and mode, always empty).
func DecodeSpec(k *engine.Kind, data []byte, rule any) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	for _, f := range k.Fields {
		if raw, ok := fields[f.Name]; ok {
			if err := decodeField(k.Value(rule, f.Name), raw); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
	}
	if raw, ok := fields[specExpiresAtMs]; ok {
		if err := decodeField(k.Value(rule, specExpiresAtMs), raw); err != nil {
			return fmt.Errorf("%s: %w", specExpiresAtMs, err)
		}
	}
	return nil
}

// decodeField reads raw, a stored JSON value, into dst; null leaves dst as
// it is.
func decodeField(dst reflect.Value, raw json.RawMessage) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	v := reflect.New(dst.Type())
	if err := json.Unmarshal(raw, v.Interface()); err != nil {
		return err
	}
	dst.Set(v.Elem())
	return nil
}
