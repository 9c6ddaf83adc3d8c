package server

import (
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/impact"
)

// estimate answers what the rule of the body would have blocked over the
// last day and week, writing nothing.
//
//	@Summary		Estimate a rule's impact
//	@ID				estimateRuleImpact
//	@Description	Takes a flow or hotspot rule as POST /api/v1/rules does (nothing is stored) and answers, for the last 24 h and 7 d of its resource's minute history, the minutes in which it would have blocked calls and roughly how many: a low and a high bound per minute and in total, from each minute's calls, its busiest second and the engines that saw them. It is an estimate, with notes on what the history cannot show for this rule; docs/impact.md says how it is made. A dry run of apply or import carries the same estimate for each created or changed flow and hotspot rule.
//	@Tags			rules
//	@Accept			json
//	@Produce		json
//	@Param			rule	body		rules.Content	true	"the rule, as it would be created; a flow or hotspot rule"
//	@Success		200		{object}	impact.Estimate
//	@Failure		400		{object}	ErrorResponse	"the body is not JSON, or not UTF-8, or has a key twice"
//	@Failure		401		{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403		{object}	ErrorResponse	"a console session's request without its X-CSRF-Token; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422		{object}	ErrorResponse	"bad fields, each named in details; or a rule of a kind that is not estimated (detail kind)"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header			429		{integer}	Retry-After		"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/impact [post]
func (h *ruleHandler) estimate(c *fiber.Ctx) error {
	r, err := newRuleBody(c)
	if err != nil {
		return err
	}
	if !impact.Estimable(&r) {
		msg := "must be flow or hotspot: only their thresholds are estimated"
		return ValidationFailed("kind "+msg, FieldError{"kind", msg})
	}
	est, err := h.impact.Estimate(c.UserContext(), &r)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, est)
}
