package server

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/metrics"
)

// Bounds of ?limit= of the hot values.
const (
	defaultHotLimit = 10
	maxHotLimit     = 100
)

// HotValuesAnswer is a resource's hotspot rules, each with its hottest
// values over the last minute.
type HotValuesAnswer struct {
	Resource string `json:"resource" example:"GET:/api/orders"`
	// Rules has one entry per hotspot rule in force on the resource, in
	// load order; empty if it has none.
	Rules []RuleHotValues `json:"rules"`
}

// RuleHotValues is one hotspot rule's hottest values over the last
// minute (50 to 60 s, sliding by 10 s).
type RuleHotValues struct {
	Rule     string `json:"rule" example:"orders-per-user"`
	ParamKey string `json:"paramKey" example:"user"`
	// Approximate is false when every count is exact; true when they are
	// estimates (a busy rule is sampled, and a value past the sketch's 64
	// counters per 10 s takes the least counted one's place): each count
	// is then off by at most the rule's calls in the minute / 64, plus the
	// sampling error.
	Approximate bool `json:"approximate" example:"false"`
	// ByPass is the values passed most, most first (ties by value);
	// ByBlock those blocked most (for a shadow rule, that it would have
	// blocked).
	ByPass  []HotValue `json:"byPass"`
	ByBlock []HotValue `json:"byBlock"`
}

// HotValue is one value's passes and blocks by its rule over the last
// minute; a count the rule's other ranking does not hold is 0.
type HotValue struct {
	Value string `json:"value" example:"42"`
	Pass  int64  `json:"pass" example:"120"`
	Block int64  `json:"block" example:"37"`
}

type hotValuesHandler struct {
	engine  *engine.Engine
	metrics *metrics.Pipeline
}

func bindHotValues(api apiRoutes, h *hotValuesHandler) {
	api.get("/resources/:name/hot-values", viewers, h.get)
}

// get answers the hottest values of each hotspot rule of a resource.
//
//	@Summary		Hottest values of a resource's hotspot rules
//	@ID				getResourceHotValues
//	@Description	For each hotspot rule in force on the resource, the values of its paramKey passed and blocked most over the last minute (the current 10 s slice and the five before: 50 to 60 s) summed over the server's own engine (the check API's traffic) and every instance that reported within 3 s (each its top 20 values a ranking), rule by rule by name: the server's rules first in load order, then those only instances run, by name. Each engine counts in a bounded sketch per rule: approximate says whether the counts are estimates, which they also are when an instance's ranking was full (a value it left out may be missing from the sum). A resource that neither the server's engine nor a reporting instance tracks is 404; one without a hotspot rule answers "rules": [].
//	@Tags			resources
//	@Produce		json
//	@Param			name	path		string	true	"resource name, URL-escaped (GET%3A%2Fapi%2Forders)"
//	@Param			limit	query		int		false	"values per ranking, 1 to 100"	default(10)	minimum(1)	maximum(100)
//	@Success		200		{object}	HotValuesAnswer
//	@Failure		400		{object}	ErrorResponse	"a bad query parameter, named in details"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404		{object}	ErrorResponse	"neither the server's engine nor a reporting instance tracks the resource"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/resources/{name}/hot-values [get]
func (h *hotValuesHandler) get(c *fiber.Ctx) error {
	name, err := url.PathUnescape(c.Params("name"))
	if err != nil {
		return BadRequest("name must be a URL-escaped resource name", FieldError{"name", "must be URL-escaped"})
	}
	limit := defaultHotLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxHotLimit {
			msg := fmt.Sprintf("must be a whole number from 1 to %d", maxHotLimit)
			return BadRequest("limit "+msg, FieldError{"limit", msg})
		}
		limit = n
	}
	r := h.engine.Lookup(name)
	reported := h.metrics.ReportedHot(name)
	if r == nil && len(reported) == 0 {
		return NotFound(fmt.Sprintf("neither the engine nor a reporting instance tracks a resource %q", name))
	}
	// The server's own ranking goes as deep as the instances' do, so
	// that a value hot across the fleet but not on the server still sums.
	own := r.HotValues(max(limit, wire.MaxReportHotValues))
	return writeJSON(c, http.StatusOK, HotValuesAnswer{Resource: name, Rules: sumHotValues(own, reported, limit)})
}

// sumHotValues sums, rule by rule (by name), the hot values of the
// server's engine and of each instance, and ranks each rule's sums by
// passes and by blocks, at most limit each, ties by value. The server's
// rules come first, in load order, then those only instances run, by
// name. A sum is approximate when a part is, or when an instance's
// ranking was full: a value it left out may be missing from the sum.
func sumHotValues(own []engine.HotValues, reported [][]engine.HotValues, limit int) []RuleHotValues {
	type sums struct {
		paramKey    string
		approximate bool
		values      map[string]*HotValue
	}
	byRule := map[string]*sums{}
	var order []string
	add := func(rule engine.HotValues, full bool) {
		s := byRule[rule.Rule]
		if s == nil {
			s = &sums{paramKey: rule.ParamKey, values: map[string]*HotValue{}}
			byRule[rule.Rule] = s
			order = append(order, rule.Rule)
		}
		s.approximate = s.approximate || rule.Approximate || full
		// A value ranked both ways carries the same counts in both; one
		// ranked one way only shows 0 for the other.
		mine := map[string]HotValue{}
		for _, v := range append(slices.Clone(rule.ByPass), rule.ByBlock...) {
			m := mine[v.Value]
			mine[v.Value] = HotValue{Value: v.Value, Pass: max(m.Pass, v.Pass), Block: max(m.Block, v.Block)}
		}
		for value, v := range mine {
			sum := s.values[value]
			if sum == nil {
				sum = &HotValue{Value: value}
				s.values[value] = sum
			}
			sum.Pass += v.Pass
			sum.Block += v.Block
		}
	}
	for _, rule := range own {
		add(rule, false)
	}
	ownRules := len(order)
	for _, hot := range reported {
		for _, rule := range hot {
			add(rule, len(rule.ByPass) == wire.MaxReportHotValues || len(rule.ByBlock) == wire.MaxReportHotValues)
		}
	}
	slices.Sort(order[ownRules:])
	out := make([]RuleHotValues, len(order))
	for i, name := range order {
		s := byRule[name]
		all := slices.Collect(maps.Values(s.values))
		out[i] = RuleHotValues{Rule: name, ParamKey: s.paramKey, Approximate: s.approximate,
			ByPass:  topHotValues(all, limit, func(v *HotValue) int64 { return v.Pass }),
			ByBlock: topHotValues(all, limit, func(v *HotValue) int64 { return v.Block })}
	}
	return out
}

// topHotValues is the limit values of all with the most of count, most
// first, ties by value; those with none are left out.
func topHotValues(all []*HotValue, limit int, count func(*HotValue) int64) []HotValue {
	out := []HotValue{}
	for _, v := range all {
		if count(v) > 0 {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(a, b HotValue) int {
		return cmp.Or(cmp.Compare(count(&b), count(&a)), strings.Compare(a.Value, b.Value))
	})
	return out[:min(len(out), limit)]
}
