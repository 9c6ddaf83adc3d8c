package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
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
	engine *engine.Engine
}

func bindHotValues(api apiRoutes, h *hotValuesHandler) {
	api.get("/resources/:name/hot-values", viewers, h.get)
}

// get answers the hottest values of each hotspot rule of a resource.
//
//	@Summary		Hottest values of a resource's hotspot rules
//	@ID				getResourceHotValues
//	@Description	For each hotspot rule in force on the resource, the values of its paramKey passed and blocked most over the last minute (the current 10 s slice and the five before: 50 to 60 s) by the server's own engine (the check API's traffic; instances do not report values), from a bounded sketch per rule: approximate says whether the counts are estimates. A resource the server's engine does not track is 404; one without a hotspot rule answers "rules": [].
//	@Tags			resources
//	@Produce		json
//	@Param			name	path		string	true	"resource name, URL-escaped (GET%3A%2Fapi%2Forders)"
//	@Param			limit	query		int		false	"values per ranking, 1 to 100"	default(10)	minimum(1)	maximum(100)
//	@Success		200		{object}	HotValuesAnswer
//	@Failure		400		{object}	ErrorResponse	"a bad query parameter, named in details"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404		{object}	ErrorResponse	"the server's engine does not track the resource"
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
	if r == nil {
		return NotFound(fmt.Sprintf("the engine does not track a resource %q", name))
	}
	hot := r.HotValues(limit)
	answer := HotValuesAnswer{Resource: name, Rules: make([]RuleHotValues, len(hot))}
	for i, rule := range hot {
		answer.Rules[i] = RuleHotValues{Rule: rule.Rule, ParamKey: rule.ParamKey, Approximate: rule.Approximate,
			ByPass: hotValues(rule.ByPass), ByBlock: hotValues(rule.ByBlock)}
	}
	return writeJSON(c, http.StatusOK, answer)
}

// hotValues returns the engine's ranking as the API's.
func hotValues(values []engine.HotValue) []HotValue {
	out := make([]HotValue, len(values))
	for i, v := range values {
		out[i] = HotValue{Value: v.Value, Pass: v.Pass, Block: v.Block}
	}
	return out
}
