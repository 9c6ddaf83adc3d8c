package engine

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Rule kinds, as the REST API names them in a rule's "kind".
const (
	KindFlow           = "flow"
	KindCircuitBreaker = "circuitBreaker"
	KindHotspot        = "hotspot"
	KindAuthority      = "authority"
	KindSystem         = "system"
	// KindAdaptiveConcurrency is an adaptive concurrency rule.
	KindAdaptiveConcurrency = "adaptiveConcurrency"
)

// Kind is one rule kind, described once: its name, its field table, and
// only what no table row can say (its cross-field checks, the defaults
// that depend on more than one field, where its rules go in a
// ResourceRules). A field's type, range, options, default, whether it is
// required and when it applies are checked from its row, for every kind
// alike; the REST API's decoder, the rule files, the snapshot instances
// load, the Swagger schema, the console's form and the rules reference
// all read the same table.
//
// A kind's rules are the engine's rule structs (FlowRule and the others):
// each row's Name is the JSON name of a struct field whose Go name is the
// same with its first letter upper-cased (maxQueueingTimeMs is
// MaxQueueingTimeMs), which the registry checks when the program starts.
type Kind struct {
	// Name is the kind's name in a rule's "kind" ("flow").
	Name string
	// Label names the kind for people; Title heads its fields in a form.
	Label, Title string
	// Help says in a few words what a rule of the kind does.
	Help string
	// Fields are the kind's own fields, besides the name, resource and
	// mode every rule has, in the order people read them.
	Fields Fields
	// NoResource says that a rule of the kind is on no resource: it
	// guards every inbound call of its process.
	NoResource bool
	// Doc says more of the kind for the rules reference (docs/rules.md),
	// in Markdown, where its help and its fields' do not say enough.
	Doc string
	// Summary says what a rule of the kind does in a few words, as a
	// template the console fills in: {field} is a field's value ({field|per}
	// an interval in milliseconds as "second", "2 seconds" or "500 ms"; a
	// list or an object, its first items), [field=a,b:text] is text where
	// the field holds one of the values, and [field!=a,b:text] where it
	// holds none of them; a field left out holds its default, an empty list
	// or object "". SummaryRefs lists what a template names.
	Summary string

	// list names the field of ResourceRules that holds the kind's rules,
	// as the errors of a load name it ("flow", "circuitBreakers").
	list string
	// book is the kind's index in the rule book (the names loaded, the
	// kinds a change replaces); a kind on no resource has none.
	book ruleKind

	typ   reflect.Type
	index map[string][]int
	// rows are Fields as the checks walk them, in the same order.
	rows []row
	// envelope holds the struct indexes of name, resource (nil for a kind
	// without one), mode and expiresAtMs.
	envelope struct{ name, resource, mode, expiresAtMs []int }
	defaults func(rule reflect.Value)
	check    func(rule reflect.Value, errs *fieldErrors)
	add      func(set *ResourceRules, rule reflect.Value)
	// eachRule calls fn with the index, name and resource of every rule of
	// the kind in set, in order.
	eachRule func(set *ResourceRules, fn func(i int, name, resource string))
	// nameAt is the name of rule i of the kind in set; false if set has
	// no such rule.
	nameAt func(set *ResourceRules, i int) (string, bool)
	// load validates the kind's rules in set as a set, adding their
	// errors to errs, and returns what stages them, with their defaults,
	// in a change once the whole load is valid.
	load func(set *ResourceRules, clustered bool, errs *fieldErrors) (stage func(c *ruleChange))
}

// setOf says where a kind's rules of type R go in a load of many kinds,
// and what a set of them must hold besides each rule's own checks.
type setOf[R any] struct {
	// list is the field of ResourceRules that holds them, as its errors
	// name it ("flow").
	list  string
	rules func(set *ResourceRules) *[]R
	// book is the kind's index in the rule book; ignored for a kind on
	// no resource.
	book ruleKind
	// staged is where a change holds a resource's new rules of the kind,
	// or the system rules, which are on no resource.
	staged func(c *ruleChange, resource string) *[]R
	// check, if not nil, returns the check of one set of the kind's rules,
	// fields named "prefix[i].field", run on each rule in order with its
	// defaults; clustered says whether the engine has a cluster count.
	check func(prefix string, clustered bool) func(i int, rule R, errs *fieldErrors)
}

// row is a field of a kind's table, resolved once for the checks: where it
// is in the rule struct, its default as a value of its type, and the row
// it applies with.
type row struct {
	index []int
	// def is the default, valid for a scalar field that has one.
	def reflect.Value
	// when is the index of the row whose value the field applies with,
	// -1 for a field that always applies; value is that value.
	when  int
	value string
}

// kindOf builds a kind whose rules are of type R. defaults, if not nil,
// completes what the table's defaults cannot (after them); check, if not
// nil, adds the kind's cross-field checks (before the table's, which it
// may count on only for the values of options); set says where its rules
// go in a load of many kinds and what a set of them must hold.
func kindOf[R any](k Kind, defaults func(*R), check func(*R, *fieldErrors), set setOf[R]) *Kind {
	k.typ = reflect.TypeFor[R]()
	k.index = map[string][]int{}
	for _, name := range append([]string{"name", "resource", "mode", "expiresAtMs"}, fieldNames(k.Fields)...) {
		if name == "resource" && k.NoResource {
			continue
		}
		sf, ok := k.typ.FieldByName(strings.ToUpper(name[:1]) + name[1:])
		if !ok {
			panic(fmt.Sprintf("engine: kind %s has no struct field for %s", k.Name, name))
		}
		k.index[name] = sf.Index
	}
	k.envelope.name, k.envelope.mode, k.envelope.expiresAtMs = k.index["name"], k.index["mode"], k.index["expiresAtMs"]
	k.envelope.resource = k.index["resource"]
	k.rows = make([]row, len(k.Fields))
	for i, f := range k.Fields {
		r := row{index: k.index[f.Name], when: -1}
		t := k.typ.FieldByIndex(r.index).Type
		if f.Default != nil && (t.Kind() == reflect.String || t.Kind() == reflect.Int64 || t.Kind() == reflect.Float64) {
			r.def = reflect.ValueOf(f.Default).Convert(t)
		}
		if c := f.AppliesWhen; c != nil {
			r.when, r.value = slices.IndexFunc(k.Fields, func(o Field) bool { return o.Name == c.Field }), c.Value
			if r.when < 0 {
				panic(fmt.Sprintf("engine: kind %s: %s applies with %s, no field of the kind", k.Name, f.Name, c.Field))
			}
		}
		k.rows[i] = r
	}
	if defaults != nil {
		k.defaults = func(v reflect.Value) { defaults(v.Addr().Interface().(*R)) }
	}
	if check != nil {
		k.check = func(v reflect.Value, errs *fieldErrors) { check(v.Addr().Interface().(*R), errs) }
	}
	kind := &k
	k.list, k.book = set.list, set.book
	k.add = func(rules *ResourceRules, v reflect.Value) {
		list := set.rules(rules)
		*list = append(*list, v.Interface().(R))
	}
	k.eachRule = func(rules *ResourceRules, fn func(i int, name, resource string)) {
		for i, rule := range *set.rules(rules) {
			v := reflect.ValueOf(rule)
			resource := ""
			if !kind.NoResource {
				resource = v.FieldByIndex(kind.envelope.resource).String()
			}
			fn(i, v.FieldByIndex(kind.envelope.name).String(), resource)
		}
	}
	k.nameAt = func(rules *ResourceRules, i int) (string, bool) {
		list := *set.rules(rules)
		if i < 0 || i >= len(list) {
			return "", false
		}
		return reflect.ValueOf(list[i]).FieldByIndex(kind.envelope.name).String(), true
	}
	k.load = func(rules *ResourceRules, clustered bool, errs *fieldErrors) func(c *ruleChange) {
		var check func(int, R, *fieldErrors)
		if set.check != nil {
			check = set.check(set.list, clustered)
		}
		loaded, err := validateSet(kind, set.list, *set.rules(rules), check)
		errs.merge(err)
		return func(c *ruleChange) {
			for _, rule := range loaded {
				resource := ""
				if !kind.NoResource {
					resource = reflect.ValueOf(rule).FieldByIndex(kind.envelope.resource).String()
				}
				staged := set.staged(c, resource)
				*staged = append(*staged, rule)
			}
		}
	}
	return kind
}

func fieldNames(fs Fields) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

// Kinds are the rule kinds, in the order clients offer them.
var Kinds = []*Kind{FlowKind, CircuitBreakerKind, HotspotKind, AuthorityKind, SystemKind, AdaptiveConcurrencyKind}

// LookupKind returns the kind called name.
func LookupKind(name string) (*Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return nil, false
}

// KindNames lists the kinds' names, in order, for messages: "flow,
// circuitBreaker, …".
func KindNames() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// summaryRef matches a field a summary template names: {field}, {field|…},
// [field=…] or [field!=…].
var summaryRef = regexp.MustCompile(`\{([A-Za-z]+)(?:\|[a-z]+)?\}|\[([A-Za-z]+)!?=([^:\]]*):`)

// SummaryRefs lists the fields k's summary template names, each with the
// values it compares the field with (none for a value shown), in order.
func (k *Kind) SummaryRefs() []Condition {
	var refs []Condition
	for _, m := range summaryRef.FindAllStringSubmatch(k.Summary, -1) {
		if m[1] != "" {
			refs = append(refs, Condition{Field: m[1]})
			continue
		}
		for v := range strings.SplitSeq(m[3], ",") {
			refs = append(refs, Condition{Field: m[2], Value: v})
		}
	}
	return refs
}

// New returns a pointer to a new, zero rule of the kind (a *FlowRule for
// flow).
func (k *Kind) New() any { return reflect.New(k.typ).Interface() }

// rule is the struct rule points at, a pointer to one of k's rules.
func (k *Kind) rule(rule any) reflect.Value {
	v := reflect.ValueOf(rule)
	if v.Kind() != reflect.Pointer || v.Elem().Type() != k.typ {
		panic(fmt.Sprintf("engine: a %s rule is a *%s, not %T", k.Name, k.typ.Name(), rule))
	}
	return v.Elem()
}

// Value is the field called name of rule, a pointer to one of k's rules,
// settable: one of the kind's fields, or name, resource, mode or
// expiresAtMs.
func (k *Kind) Value(rule any, name string) reflect.Value {
	return k.value(k.rule(rule), name)
}

func (k *Kind) value(v reflect.Value, name string) reflect.Value {
	index, ok := k.index[name]
	if !ok {
		panic("engine: kind " + k.Name + " has no field " + name)
	}
	return v.FieldByIndex(index)
}

// WithDefaults gives every unset field of rule, a pointer to one of k's
// rules, that applies to it its default. Fields that do not apply
// (statIntervalMs of a concurrency rule, warmUpColdFactor without warm-up)
// stay unset.
func (k *Kind) WithDefaults(rule any) { k.withDefaults(k.rule(rule)) }

func (k *Kind) withDefaults(v reflect.Value) {
	if mode := v.FieldByIndex(k.envelope.mode); mode.String() == "" {
		mode.SetString(string(ModeEnforce))
	}
	for i := range k.rows {
		r := &k.rows[i]
		if !r.def.IsValid() {
			continue
		}
		if field := v.FieldByIndex(r.index); field.IsZero() && k.applies(v, i) {
			field.Set(r.def)
		}
	}
	if k.defaults != nil {
		k.defaults(v)
	}
}

// Applies reports whether field f of k applies to rule, a pointer to one
// of k's rules with its defaults: whether the fields it depends on, each
// applying, hold the values it needs.
func (k *Kind) Applies(rule any, f Field) bool {
	return k.applies(k.rule(rule), slices.IndexFunc(k.Fields, func(o Field) bool { return o.Name == f.Name }))
}

// applies reports whether the field of row i applies to the rule v.
func (k *Kind) applies(v reflect.Value, i int) bool {
	for r := &k.rows[i]; r.when >= 0; r = &k.rows[r.when] {
		if v.FieldByIndex(k.rows[r.when].index).String() != r.value {
			return false
		}
	}
	return true
}

// Validate checks rule, a pointer to one of k's rules, as WithDefaults
// would complete it (rule itself is left as it is) and returns one
// FieldError for every bad field, named as in JSON; nil when it is valid.
func (k *Kind) Validate(rule any) []FieldError {
	v := reflect.New(k.typ).Elem()
	v.Set(k.rule(rule))
	return k.validate(v)
}

// validateOwn is Validate of rule, a pointer to a rule of k the caller
// owns (a copy), which it completes with its defaults.
func (k *Kind) validateOwn(rule any) []FieldError { return k.validate(k.rule(rule)) }

// validate is Validate of v, a rule of k it completes with its defaults.
func (k *Kind) validate(v reflect.Value) []FieldError {
	k.withDefaults(v)
	var errs fieldErrors
	if k.check != nil {
		k.check(v, &errs)
	}
	k.checkEnvelope(v, &errs)
	for i := range k.rows {
		k.checkField(v, i, &errs)
	}
	return errs.firstPerField()
}

// checkEnvelope checks the name, resource, mode and expiry every rule has.
func (k *Kind) checkEnvelope(v reflect.Value, errs *fieldErrors) {
	if name := v.FieldByIndex(k.envelope.name).String(); name != "" && !RuleNamePattern.MatchString(name) {
		errs.add("name", fmt.Sprintf("must be 1-%d characters of a-z, 0-9, '.', '_' or '-', starting and ending with a letter or digit", maxRuleNameLen))
	}
	if !k.NoResource {
		errs.check("resource", ValidateResourceName(v.FieldByIndex(k.envelope.resource).String()))
	}
	switch Mode(v.FieldByIndex(k.envelope.mode).String()) {
	case ModeEnforce, ModeShadow:
	default:
		errs.add("mode", "must be one of enforce, shadow")
	}
	if v.FieldByIndex(k.envelope.expiresAtMs).Int() < 0 {
		errs.add("expiresAtMs", "must be >= 0 (0: never)")
	}
}

// checkField checks the value in v of the field of row i against its
// row: whether it applies, is required, is one of its options, within its
// range and length.
func (k *Kind) checkField(v reflect.Value, i int, errs *fieldErrors) {
	f, r := &k.Fields[i], &k.rows[i]
	field := v.FieldByIndex(r.index)
	if !k.applies(v, i) {
		// A behaviour the kind gives its default where it does not apply
		// (as Sentinel's flow rules carry theirs) may hold it; anything
		// else would be silently ignored. Where the field it depends on
		// holds the value it needs but does not apply itself, that field's
		// error says so.
		if field.IsZero() || v.FieldByIndex(k.rows[r.when].index).String() == r.value || k.defaultsTo(v, r, field) {
			return
		}
		message := f.appliesOnly()
		if f.Options != nil {
			message = field.String() + " " + message
		}
		errs.add(f.Name, message)
		return
	}
	missing := func() string {
		if f.AppliesWhen != nil {
			return "is required with " + f.AppliesWhen.Value
		}
		return "is required"
	}
	switch field.Kind() {
	case reflect.String:
		s := field.String()
		switch {
		case s == "" && f.Required && f.Options != nil:
			errs.add(f.Name, missing()+": one of "+strings.Join(f.OptionValues(), ", "))
		case s == "" && f.Required:
			errs.add(f.Name, missing())
		case s == "":
		case f.Options != nil && !slices.ContainsFunc(f.Options, func(o Option) bool { return o.Value == s }):
			errs.add(f.Name, f.mustBeOneOf())
		case f.MaxLength > 0 && len(s) > f.MaxLength && utf8.RuneCountInString(s) > f.MaxLength:
			errs.add(f.Name, fmt.Sprintf("must be at most %d characters", f.MaxLength))
		}
	case reflect.Int64, reflect.Float64:
		n := float64(0)
		if field.Kind() == reflect.Int64 {
			n = float64(field.Int())
		} else {
			n = field.Float()
		}
		switch {
		case math.IsNaN(n) || math.IsInf(n, 0):
			errs.add(f.Name, "must be a finite number")
		case n == 0 && f.Required && (f.AppliesWhen != nil || f.Min != nil && *f.Min > 0):
			errs.add(f.Name, missing())
		case f.Min != nil && n < *f.Min && (f.Max == nil || f.Type == FieldNumber):
			errs.add(f.Name, "must be >= "+formatBound(*f.Min))
		case f.Max != nil && n > *f.Max && (f.Min == nil || f.Type == FieldNumber):
			errs.add(f.Name, "must be at most "+formatBound(*f.Max))
		case f.outside(n):
			errs.add(f.Name, f.between())
		}
	case reflect.Slice, reflect.Map:
		if field.Len() == 0 && f.Required {
			errs.add(f.Name, missing())
		}
	}
}

// defaultsTo reports whether the kind's defaults give field, the value in
// the rule v of the field of row r, the value it holds.
func (k *Kind) defaultsTo(v reflect.Value, r *row, field reflect.Value) bool {
	unset := reflect.New(k.typ).Elem()
	unset.Set(v)
	unset.FieldByIndex(r.index).SetZero()
	k.withDefaults(unset)
	return unset.FieldByIndex(r.index).Equal(field)
}

// Add appends rule, a pointer to one of k's rules, to the rules of its
// kind in set.
func (k *Kind) Add(set *ResourceRules, rule any) { k.add(set, k.rule(rule)) }

// firstPerField keeps the first error of each field: the kind's own
// check, which runs first, says more of a field than its row's range
// would, and two messages of one field would only repeat each other.
func (e fieldErrors) firstPerField() []FieldError {
	if len(e) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(e))
	kept := e[:0:0]
	for _, fe := range e {
		if !seen[fe.Field] {
			seen[fe.Field] = true
			kept = append(kept, fe)
		}
	}
	return kept
}

// validateSet validates rules, of kind k, as a set: each rule, unique
// names, and whatever check adds. It returns the rules with their
// defaults, or the error that names every bad field as "prefix[i].field".
func validateSet[R any](k *Kind, prefix string, rules []R, check func(i int, rule R, errs *fieldErrors)) ([]R, error) {
	loaded := slices.Clone(rules)
	var errs fieldErrors
	names := make(map[string]int, len(rules))
	for i := range loaded {
		v := reflect.ValueOf(&loaded[i]).Elem()
		for _, fe := range k.validate(v) {
			errs.add(fmt.Sprintf("%s[%d].%s", prefix, i, fe.Field), fe.Message)
		}
		if name := v.FieldByIndex(k.envelope.name).String(); name != "" {
			if first, taken := names[name]; taken {
				errs.add(fmt.Sprintf("%s[%d].name", prefix, i), fmt.Sprintf("%q is already the name of %s[%d]", name, prefix, first))
			} else {
				names[name] = i
			}
		}
		if check != nil {
			check(i, loaded[i], &errs)
		}
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Fields: errs}
	}
	return loaded, nil
}
