package wire

import "github.com/sluicehq/sluice/engine"

// Field is a row of a kind's field table (engine.Field) as GET
// /rules/fields answers it, for clients that build rule forms.
type Field struct {
	Name        string           `json:"name"`
	Type        engine.FieldType `json:"type"`
	Label       string           `json:"label"`
	Help        string           `json:"help,omitempty"`
	Required    bool             `json:"required,omitempty"`
	Default     any              `json:"default,omitempty"`
	Example     any              `json:"example,omitempty"`
	Min         *float64         `json:"min,omitempty" format:"double"`
	Max         *float64         `json:"max,omitempty" format:"double"`
	MaxLength   int              `json:"maxLength,omitempty"`
	Multiline   bool             `json:"multiline,omitempty"`
	Options     []Option         `json:"options,omitempty"`
	AppliesWhen *Condition       `json:"appliesWhen,omitempty"`
}

// Option is one value of a field with a fixed set of values.
type Option struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// Condition is a field's value that another field applies with.
type Condition struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

// FieldsOf is a field table as GET /rules/fields answers it.
func FieldsOf(table engine.Fields) []Field {
	out := make([]Field, len(table))
	for i, f := range table {
		out[i] = Field{Name: f.Name, Type: f.Type, Label: f.Label, Help: f.Help, Required: f.Required,
			Default: f.Default, Example: f.Example, Min: f.Min, Max: f.Max, MaxLength: f.MaxLength,
			Multiline: f.Multiline, AppliesWhen: (*Condition)(f.AppliesWhen)}
		for _, o := range f.Options {
			out[i].Options = append(out[i].Options, Option(o))
		}
	}
	return out
}
