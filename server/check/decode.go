package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
)

// Limits of the check API's bodies.
const (
	maxCheckCount  = 1_000_000
	maxBatch       = 1000
	maxRtMs        = 86_400_000 // a day
	maxCheckParams = 32
	maxParamLen    = 256
)

// checkQuery is one decoded check: count calls to resource, from origin
// ("" for none), with params sorted by key (nil for none).
type checkQuery struct {
	resource    string
	count       int64
	origin      string
	prioritized bool
	params      []checkParam
}

// checkParam is one of a check's params.
type checkParam struct {
	key, value string
}

// sortParams orders params by key, as both decoders give them.
func sortParams(params []checkParam) {
	slices.SortFunc(params, func(a, b checkParam) int { return strings.Compare(a.key, b.key) })
}

// The check API answers many small bodies, so each is decoded at most
// twice: a scanner takes the usual shape ({"resource": "orders",
// "count": 3, "origin": "app-a", "params": {"user": "42"},
// "prioritized": true}, plain strings, integers and booleans, in any
// order) without building
// a map of raw fields; anything else (escapes, nulls, 1e3, unknown or
// repeated fields, bad JSON) goes to the field-by-field decoder of the
// rules API, which names every bad field. The scanner only takes bodies
// that decoder reads the same way, so which one ran never shows.

// decodeCheck decodes the body of POST /check, resource names through
// names (nil copies each).
func decodeCheck(body []byte, names *nameCache) (checkQuery, error) {
	s := jsonScanner{Scanner: codec.NewScanner(body), names: names}
	if q, ok := s.check(); ok && s.End() {
		if errs := checkProblems(q, ""); len(errs) > 0 {
			return checkQuery{}, invalid("the check is not valid; see details", errs...)
		}
		return q, nil
	}
	return decodeCheckFields(body)
}

// decodeCheckFields is decodeCheck by the full decoder.
func decodeCheckFields(body []byte) (checkQuery, error) {
	var errs []engine.FieldError
	o, err := codec.ParseBody(body, &errs)
	if err != nil {
		return checkQuery{}, &BodyError{Err: err}
	}
	q := decodeCheckObject(o)
	if len(errs) > 0 {
		return checkQuery{}, invalid("the check is not valid; see details", errs...)
	}
	return q, nil
}

// decodeBatch decodes the body of POST /check/batch, like decodeCheck.
func decodeBatch(body []byte, names *nameCache, scratch []checkQuery) ([]checkQuery, error) {
	if queries, ok := scanBatch(body, names, scratch); ok {
		if len(queries) == 0 || len(queries) > maxBatch {
			return nil, batchSizeError(len(queries))
		}
		var errs []engine.FieldError
		for i, q := range queries {
			if problems := checkProblems(q, ""); len(problems) > 0 {
				errs = append(errs, checkProblems(q, fmt.Sprintf("checks[%d].", i))...)
			}
		}
		if len(errs) > 0 {
			return nil, invalid("the batch is not valid; nothing was checked; see details", errs...)
		}
		return queries, nil
	}
	return decodeBatchFields(body)
}

// decodeBatchFields is decodeBatch by the full decoder.
func decodeBatchFields(body []byte) ([]checkQuery, error) {
	var errs []engine.FieldError
	o, err := codec.ParseBody(body, &errs)
	if err != nil {
		return nil, &BodyError{Err: err}
	}
	var items []json.RawMessage
	if v, _ := o.Value("checks"); v == nil {
		o.Fail("checks", "is required: a list of checks")
	} else if err := json.Unmarshal(v, &items); err != nil {
		o.Fail("checks", "must be a list of checks")
	}
	o.Rest(func(string) string { return "" })
	if len(errs) > 0 {
		return nil, invalid("the batch is not valid; see details", errs...)
	}
	if len(items) == 0 || len(items) > maxBatch {
		return nil, batchSizeError(len(items))
	}
	queries := make([]checkQuery, len(items))
	for i, item := range items {
		path := fmt.Sprintf("checks[%d].", i)
		o, err := wire.Parse(item, path, &errs)
		if err != nil {
			errs = append(errs, engine.FieldError{Field: fmt.Sprintf("checks[%d]", i), Message: "must be a check object"})
			continue
		}
		queries[i] = decodeCheckObject(o)
	}
	if len(errs) > 0 {
		return nil, invalid("the batch is not valid; nothing was checked; see details", errs...)
	}
	return queries, nil
}

func batchSizeError(n int) error {
	msg := fmt.Sprintf("must hold 1 to %d checks, not %d", maxBatch, n)
	return invalid("checks "+msg, field("checks", msg))
}

// decodeCheckObject reads a check field by field, adding every bad field
// to o's errors.
func decodeCheckObject(o *wire.Object) checkQuery {
	q := checkQuery{count: 1}
	before := len(*o.Errs)
	o.Str("resource", &q.resource)
	if len(*o.Errs) == before {
		if msg := engine.ValidateResourceName(q.resource); msg != "" {
			o.Fail("resource", msg)
		}
	}
	var count int64
	before = len(*o.Errs)
	if o.Integer("count", &count) && o.Has("count") && len(*o.Errs) == before {
		q.count = count
		if msg := countProblem(count); msg != "" {
			o.Fail("count", msg)
		}
	}
	before = len(*o.Errs)
	if o.Str("origin", &q.origin) && o.Has("origin") && len(*o.Errs) == before {
		if msg := originProblem(q.origin); msg != "" {
			o.Fail("origin", msg)
		}
	}
	o.Bool("prioritized", &q.prioritized, false)
	q.params = decodeParams(o)
	o.Rest(func(string) string { return "" })
	return q
}

// decodeParams reads a check's params, an object of at most
// maxCheckParams strings, adding every bad one to o's errors as
// params.<key>.
func decodeParams(o *wire.Object) []checkParam {
	v, _ := o.Value("params")
	if v == nil {
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil || raw == nil {
		o.Fail("params", "must be an object of parameter: string value")
		return nil
	}
	if len(raw) > maxCheckParams {
		o.Fail("params", fmt.Sprintf("must have at most %d keys, not %d", maxCheckParams, len(raw)))
		return nil
	}
	var params []checkParam
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		var value string
		if err := json.Unmarshal(raw[key], &value); err != nil || string(raw[key]) == "null" {
			o.Fail("params."+key, "must be a string")
			continue
		}
		if msg := paramProblem(value); msg != "" {
			o.Fail("params."+key, msg)
			continue
		}
		params = append(params, checkParam{key, value})
	}
	return params
}

// checkProblems lists the bad values of a scanned check; path prefixes
// the field names.
func checkProblems(q checkQuery, path string) []engine.FieldError {
	var errs []engine.FieldError
	if msg := engine.ValidateResourceName(q.resource); msg != "" {
		errs = append(errs, field(path+"resource", msg))
	}
	if msg := countProblem(q.count); msg != "" {
		errs = append(errs, field(path+"count", msg))
	}
	if q.origin != "" {
		if msg := originProblem(q.origin); msg != "" {
			errs = append(errs, field(path+"origin", msg))
		}
	}
	for _, p := range q.params {
		if msg := paramProblem(p.value); msg != "" {
			errs = append(errs, field(path+"params."+p.key, msg))
		}
	}
	return errs
}

// originProblem says why origin is not a check's origin, or "".
func originProblem(origin string) string {
	if n := utf8.RuneCountInString(origin); n == 0 || n > engine.MaxOriginLen {
		return fmt.Sprintf("must be 1 to %d characters", engine.MaxOriginLen)
	}
	return ""
}

// paramProblem says why value is not a param's value, or "".
func paramProblem(value string) string {
	if len(value) > maxParamLen && utf8.RuneCountInString(value) > maxParamLen {
		return fmt.Sprintf("must be at most %d characters", maxParamLen)
	}
	return ""
}

func countProblem(n int64) string {
	if n < 1 || n > maxCheckCount {
		return fmt.Sprintf("must be between 1 and %d", maxCheckCount)
	}
	return ""
}

// jsonScanner reads the usual shapes of check bodies with codec's
// Scanner; any method that answers false has met something it leaves to
// the full decoder.
type jsonScanner struct {
	codec.Scanner
	names *nameCache
}

// params reads an object of at most maxCheckParams plain strings, each
// key once, sorted by key.
func (s *jsonScanner) params() ([]checkParam, bool) {
	if !s.Byte('{') {
		return nil, false
	}
	if s.Byte('}') {
		return nil, true
	}
	params := make([]checkParam, 0, 4)
	for {
		key, ok := s.Str()
		if !ok || !s.Byte(':') || len(params) == maxCheckParams {
			return nil, false
		}
		value, ok := s.Str()
		if !ok {
			return nil, false
		}
		for _, p := range params {
			if p.key == string(key) {
				return nil, false
			}
		}
		params = append(params, checkParam{s.names.intern(key), string(value)})
		if s.Byte('}') {
			sortParams(params)
			return params, true
		}
		if !s.Byte(',') {
			return nil, false
		}
	}
}

// check reads one check object.
func (s *jsonScanner) check() (checkQuery, bool) {
	q := checkQuery{count: 1}
	if !s.Byte('{') {
		return q, false
	}
	var haveResource, haveCount, haveOrigin, havePrioritized, haveParams bool
	for {
		key, ok := s.Str()
		if !ok || !s.Byte(':') {
			return q, false
		}
		switch {
		case string(key) == "resource" && !haveResource:
			var name []byte
			name, ok = s.Str()
			q.resource = s.names.intern(name)
			haveResource = true
		case string(key) == "count" && !haveCount:
			q.count, ok = s.Integer()
			haveCount = true
		case string(key) == "origin" && !haveOrigin:
			var origin []byte
			origin, ok = s.Str()
			q.origin = s.names.intern(origin)
			haveOrigin = ok && len(origin) > 0 // "" is refused by the full decoder
			ok = haveOrigin
		case string(key) == "prioritized" && !havePrioritized:
			q.prioritized, ok = s.Boolean()
			havePrioritized = true
		case string(key) == "params" && !haveParams:
			q.params, ok = s.params()
			haveParams = true
		default:
			return q, false
		}
		if !ok {
			return q, false
		}
		if s.Byte('}') {
			return q, haveResource
		}
		if !s.Byte(',') {
			return q, false
		}
	}
}

// scanBatch reads {"checks": [check, ...]}, into scratch when it has room.
func scanBatch(body []byte, names *nameCache, scratch []checkQuery) ([]checkQuery, bool) {
	s := jsonScanner{Scanner: codec.NewScanner(body), names: names}
	if !s.Byte('{') {
		return nil, false
	}
	if key, ok := s.Str(); !ok || string(key) != "checks" || !s.Byte(':') || !s.Byte('[') {
		return nil, false
	}
	// Each check is an object: the body's braces bound how many there
	// are, so that the slice is made once.
	queries := scratch[:0]
	if n := min(bytes.Count(body, []byte{'{'}), maxBatch+1); cap(queries) < n {
		queries = make([]checkQuery, 0, n)
	}
	if !s.Byte(']') {
		for {
			if len(queries) == maxBatch+1 {
				return nil, false
			}
			q, ok := s.check()
			if !ok {
				return nil, false
			}
			queries = append(queries, q)
			if s.Byte(']') {
				break
			}
			if !s.Byte(',') {
				return nil, false
			}
		}
	}
	if !s.Byte('}') || !s.End() {
		return nil, false
	}
	return queries, true
}

// maxCachedNames bounds a nameCache: clients choose the names.
const maxCachedNames = 4096

// nameCache hands out one string per resource name, so that decoding a
// check copies no name it met before. It keeps the first maxCachedNames
// names; others are copied each time. The map is copied on write.
type nameCache struct {
	read atomic.Pointer[map[string]string]
	mu   sync.Mutex
}

// intern returns b as a string that outlives the body.
func (c *nameCache) intern(b []byte) string {
	if c == nil {
		return string(b)
	}
	if m := c.read.Load(); m != nil {
		if s, ok := (*m)[string(b)]; ok {
			return s
		}
	}
	s := string(b)
	if len(s) > engine.MaxResourceNameLen*utf8.UTFMax {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[string]string
	if m := c.read.Load(); m != nil {
		old = *m
	}
	if len(old) >= maxCachedNames {
		return s
	}
	next := make(map[string]string, len(old)+1)
	maps.Copy(next, old)
	next[s] = s
	c.read.Store(&next)
	return s
}

// completeQuery is a decoded complete.
type completeQuery struct {
	resource string
	count    int64
	hasCount bool
	rtMs     int64
	hasRt    bool
	failed   bool
	entryID  string
}

// errCallFailed is recorded for calls that complete reports as failed.
var errCallFailed = errors.New("the client reported the call as failed")

// decodeComplete decodes the body of POST /complete.
func decodeComplete(body []byte) (completeQuery, error) {
	var errs []engine.FieldError
	o, err := codec.ParseBody(body, &errs)
	if err != nil {
		return completeQuery{}, &BodyError{Err: err}
	}
	q := completeQuery{count: 1}
	valid := func(field string, decode func() bool) bool {
		before := len(errs)
		return decode() && o.Has(field) && len(errs) == before
	}
	hasEntry := valid("entryId", func() bool { return o.Str("entryId", &q.entryID) })
	if hasEntry && q.entryID == "" {
		o.Fail("entryId", "must not be empty")
	}
	switch {
	case valid("resource", func() bool { return o.Str("resource", &q.resource) }):
		if msg := engine.ValidateResourceName(q.resource); msg != "" {
			o.Fail("resource", msg)
		}
	case !hasEntry && !o.Has("resource"):
		o.Fail("resource", "is required without entryId")
	}
	if valid("count", func() bool { return o.Integer("count", &q.count) }) {
		q.hasCount = true
		if msg := countProblem(q.count); msg != "" {
			o.Fail("count", msg)
		}
	} else {
		q.count = 1
	}
	if valid("rtMs", func() bool { return o.Integer("rtMs", &q.rtMs) }) {
		q.hasRt = true
		if q.rtMs < 0 || q.rtMs > maxRtMs {
			o.Fail("rtMs", fmt.Sprintf("must be between 0 and %d", maxRtMs))
		}
	} else if !hasEntry && !o.Has("rtMs") {
		o.Fail("rtMs", "is required without entryId: the server cannot time the calls")
	}
	o.Bool("error", &q.failed, false)
	o.Rest(func(string) string { return "" })
	if len(errs) > 0 {
		return completeQuery{}, invalid("the outcome is not valid; see details", errs...)
	}
	return q, nil
}
