package server

import (
	"cmp"
	"net/http"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/server/check"
)

// DefaultEntryLease is how long the check API holds an entry (one a
// concurrency rule counts, or a half-open breaker's probe) before it gives
// up on the client's complete.
const DefaultEntryLease = check.DefaultEntryLease

// CheckRequest asks whether count calls to resource may go ahead.
type CheckRequest struct {
	// Resource is 1 to 256 characters, no control characters.
	Resource string `json:"resource" example:"orders"`
	// Count is how many calls the check is for.
	Count int64 `json:"count" example:"1" minimum:"1" maximum:"1000000" default:"1" validate:"optional"`
	// Origin names the caller, 1 to 256 characters: authority rules allow
	// or deny it, and flow rules with a limitApp count it apart.
	Origin string `json:"origin,omitempty" example:"app-a" minLength:"1" maxLength:"256"`
	// Params are the call's parameters, at most 32, each value a string
	// of at most 256 characters: hotspot rules limit each value of their
	// paramKey apart.
	Params map[string]string `json:"params,omitempty" example:"user:42"`
	// Prioritized lets the call, when a reject qps rule's window is full,
	// take quota from the coming window: it is answered allowed with
	// waitMs (at most 500).
	Prioritized bool `json:"prioritized,omitempty" example:"false"`
}

// CheckResult is the engine's decision on one check. A blocked call is a
// normal answer, not an HTTP error.
type CheckResult struct {
	// Allowed is whether the calls may go ahead.
	Allowed bool `json:"allowed" example:"true"`
	// WaitMs, when allowed, is how long the caller must wait before the
	// calls (a throttling rule spaces them); the server does not wait.
	WaitMs int64 `json:"waitMs" example:"0"`
	// Reason, when blocked, is the kind of rule that blocked.
	Reason string `json:"reason,omitempty" enums:"flow,concurrency,circuitBreaker,hotspot,authority,adaptive" example:"flow"`
	// Rule, when blocked, is the name of the rule that blocked.
	Rule string `json:"rule,omitempty" example:"orders-qps"`
	// EntryID, when a concurrency rule counts the resource's calls in
	// flight or a half-open circuit breaker lets the calls through as its
	// probe, names the allowed calls: send it back with complete to end
	// them, or they end as errors when their lease runs out. A probe's
	// complete may leave it out: the first outcome reported for the
	// resource is the probe's.
	EntryID string `json:"entryId,omitempty" example:"9f3c2a1b7d4e-1k"`
	// Limit is the threshold of the limit the call came nearest to (the
	// enforced window rule, flow or hotspot, with the fewest calls left;
	// a hotspot rule's for the call's value), per intervalMs. Limit,
	// intervalMs, remaining and resetMs are left out when no such rule
	// applies. A call blocked by an adaptive concurrency rule (reason
	// adaptive) has the calls in flight the rule allowed as its limit,
	// and no window's figures.
	Limit *int64 `json:"limit,omitempty" example:"100"`
	// IntervalMs is the rule's window.
	IntervalMs *int64 `json:"intervalMs,omitempty" example:"1000"`
	// Remaining is how many more calls fit in the window now, after this
	// one (of a cluster rule, at least that many: what this replica holds
	// of the shared count).
	Remaining *int64 `json:"remaining,omitempty" example:"42"`
	// ResetMs is how long until the window has room for more: when
	// allowed, until the oldest call it counts leaves it (0 when it counts
	// none); when blocked, until a call of this count fits, which is what
	// a Retry-After would say.
	ResetMs *int64 `json:"resetMs,omitempty" example:"350"`
}

// CheckBatchRequest holds checks decided one after the other.
type CheckBatchRequest struct {
	// Checks are 1 to 1000 checks.
	Checks []CheckRequest `json:"checks"`
}

// CheckBatchResponse holds the decisions of a batch, in its order.
type CheckBatchResponse struct {
	Results []CheckResult `json:"results"`
}

// CompleteRequest reports how allowed calls ended.
type CompleteRequest struct {
	// Resource of the calls; required without entryId, and the entry's
	// resource with it.
	Resource string `json:"resource" example:"orders" validate:"optional"`
	// Count is how many calls; with entryId it is the entry's count.
	Count int64 `json:"count" example:"1" minimum:"1" maximum:"1000000" default:"1" validate:"optional"`
	// RtMs is each call's response time; required without entryId (with
	// one, the time since the check is taken when it is left out).
	RtMs int64 `json:"rtMs" example:"42" minimum:"0" maximum:"86400000" validate:"optional"`
	// Error says whether the calls failed: they count as complete and as
	// errors.
	Error bool `json:"error" example:"false" validate:"optional"`
	// EntryID is the entryId the check answered. Required when a
	// concurrency rule counted the calls; a breaker's probe may leave it
	// out.
	EntryID string `json:"entryId" example:"9f3c2a1b7d4e-1k" validate:"optional"`
}

// checkHandler is the HTTP layer of package check, which decodes the
// bodies, decides and encodes the answers.
type checkHandler struct {
	api *check.API
}

// requestBody is the body of a check API request, read in place rather
// than through c.Body, which under Immutable copies it and every header's
// name: package check copies what it keeps, and serveTraffic has refused
// compressed bodies, which c.Body would inflate.
func requestBody(c *fiber.Ctx) []byte { return c.Request().Body() }

// batchAnswers are the buffers batch encodes its answers in before they
// are copied into the response: a hundred results are 5 KiB.
var batchAnswers = sync.Pool{New: func() any { return new([]byte) }}

// checkRole is the least role that may ask for decisions: the check API's
// routes and the rate limit service's ShouldRateLimit alike.
const checkRole = roleEditor

func bindCheck(api apiRoutes, h *checkHandler) {
	need := role(checkRole)
	api.post("/check", need, h.check)
	api.post("/check/batch", need, h.batch)
	api.post("/complete", need, h.complete)
}

// check decides one check.
//
//	@Summary		Check whether calls may go ahead
//	@ID				check
//	@Description	Asks the engine for count calls to resource, from origin if given (authority rules, flow rules' limitApp), with params (hotspot rules limit each value of their paramKey apart), prioritized if asked (a full reject qps window lends from the next one, answered as waitMs). A blocked call answers 200 with allowed false, the reason and the rule. With a throttling rule, waitMs is how long the caller must wait first; the server does not wait. A resource no rule names is allowed. When a concurrency rule counts the resource's calls in flight, or a half-open circuit breaker takes the calls as its probe, the answer carries an entryId that complete must send back; a probe's complete may leave it out. When an enforced window rule (flow or hotspot, reject, qps) applies to the call, the answer tells of the one with the fewest calls left: limit per intervalMs, remaining and resetMs; with headers=draft or headers=x-ratelimit, the HTTP answer tells the same in rate-limit headers.
//	@Tags			check
//	@Accept			json
//	@Produce		json
//	@Param			check	body		CheckRequest	true	"what to check"
//	@Param			headers	query		string			false	"rate-limit headers on the answer: draft (RateLimit-Policy and RateLimit of draft-ietf-httpapi-ratelimit-headers-11, the policy named after the rule) or x-ratelimit (X-RateLimit-Limit, -Remaining and -Reset as Envoy writes them); off or absent for none"	Enums(off, draft, x-ratelimit)
//	@Success		200		{object}	CheckResult
//	@Header			200		{string}	RateLimit-Policy		"with headers=draft and a window rule: the policy (the rule's name, quoted), its limit q per window of w seconds"
//	@Header			200		{string}	RateLimit				"with headers=draft and a window rule: the policy, the calls r that still fit and the seconds t until the window has room"
//	@Header			200		{string}	X-RateLimit-Limit		"with headers=x-ratelimit and a window rule: the limit and its window, as 100, 100;w=60"
//	@Header			200		{integer}	X-RateLimit-Remaining	"with headers=x-ratelimit and a window rule: the calls that still fit"
//	@Header			200		{integer}	X-RateLimit-Reset		"with headers=x-ratelimit and a window rule: the seconds until the window has room"
//	@Failure		400		{object}	ErrorResponse	"the body is not a JSON object, or headers is not off, draft or x-ratelimit (details name headers)"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403		{object}	ErrorResponse	"needs the editor role; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422		{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/check [post]
func (h *checkHandler) check(c *fiber.Ctx) error {
	style := middleware.HeadersOff
	if v := c.Query("headers"); v != "" {
		var err error
		if style, err = middleware.ParseRateLimitHeaders(v); err != nil {
			const msg = "must be off, draft or x-ratelimit"
			return BadRequest("headers "+msg, FieldError{"headers", msg})
		}
	}
	var buf [192]byte
	answer, st, err := h.api.Check(buf[:0], requestBody(c))
	if err != nil {
		return err
	}
	var headers [3]middleware.Header
	policy := cmp.Or(st.Rule, middleware.DefaultPolicy)
	for _, f := range style.AppendHeaders(headers[:0], st, policy) {
		c.Set(f.Name, f.Value)
	}
	c.Response().SetBody(answer)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
	return nil
}

// batch decides checks one after the other.
//
//	@Summary		Check many calls at once
//	@ID				checkBatch
//	@Description	Decides each check as check does, one after the other, and answers the results in the same order (each with its limit, intervalMs, remaining and resetMs when known; no rate-limit headers, which tell of one call). Nothing is checked when any check is invalid.
//	@Tags			check
//	@Accept			json
//	@Produce		json
//	@Param			checks	body		CheckBatchRequest	true	"1 to 1000 checks"
//	@Success		200		{object}	CheckBatchResponse
//	@Failure		400		{object}	ErrorResponse	"the body is not a JSON object"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403		{object}	ErrorResponse	"needs the editor role; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422		{object}	ErrorResponse	"bad checks, each field named as checks[i].field, or not 1 to 1000 checks"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/check/batch [post]
func (h *checkHandler) batch(c *fiber.Ctx) error {
	buf := batchAnswers.Get().(*[]byte)
	defer batchAnswers.Put(buf)
	answer, err := h.api.Batch((*buf)[:0], requestBody(c))
	if err != nil {
		return err
	}
	*buf = answer
	// Copied into the response's own pooled buffer.
	c.Response().SetBody(answer)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
	return nil
}

// complete records how allowed calls ended.
//
//	@Summary		Report how allowed calls ended
//	@ID				complete
//	@Description	Feeds the complete, error and response time figures (and circuit breakers). An errored call counts as complete and as an error. With entryId, ends the entry the check held: 404 if there is no such entry, 409 if it was completed already or its lease ran out (it was then counted as an error). Without entryId: 422 naming entryId while entries of the resource that a concurrency rule counted are held (the check answered ids that are owed back, even if the rule was removed since); otherwise, when the check held half-open circuit breakers' probes of the resource, the outcome is the oldest one's and ends it (its own entryId then answers 409), so that a client that ignores ids still closes or re-opens the breaker.
//	@Tags			check
//	@Accept			json
//	@Param			outcome	body	CompleteRequest	true	"how the calls ended"
//	@Success		204
//	@Failure		400	{object}	ErrorResponse	"the body is not a JSON object"
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403	{object}	ErrorResponse	"needs the editor role; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404	{object}	ErrorResponse	"no entry has this entryId"
//	@Failure		409	{object}	ErrorResponse	"the entry was completed already, its lease ran out, or a complete without entryId ended it as a probe"
//	@Failure		413	{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415	{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422	{object}	ErrorResponse	"bad fields, each named in details; entryId left out where a concurrency rule's entries are held"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/complete [post]
func (h *checkHandler) complete(c *fiber.Ctx) error {
	if err := h.api.Complete(requestBody(c)); err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}
