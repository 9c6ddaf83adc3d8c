package server

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
)

// BreakerList is every loaded circuit breaker's state.
type BreakerList struct {
	Items []Breaker `json:"items"`
}

// Breaker is one circuit breaker's state and its window's figures.
type Breaker struct {
	Rule     string `json:"rule" example:"pay-errors"`
	Resource string `json:"resource" example:"POST:/api/pay"`
	Strategy string `json:"strategy" enums:"slowRequestRatio,errorRatio,errorCount" example:"errorRatio"`
	State    string `json:"state" enums:"closed,open,halfOpen" example:"open"`
	// Since is when the breaker entered its state.
	Since  time.Time     `json:"since"`
	Window BreakerWindow `json:"window"`
}

// BreakerWindow counts the calls completed in a breaker's window
// (statIntervalMs).
type BreakerWindow struct {
	Total  int64 `json:"total" example:"40"`
	Errors int64 `json:"errors" example:"22"`
	// Slow counts calls slower than maxAllowedRtMs (slowRequestRatio only).
	Slow int64 `json:"slow" example:"0"`
}

type breakerHandler struct {
	engine *engine.Engine
}

func bindBreakers(api apiRoutes, h *breakerHandler) {
	api.get("/breakers", viewers, h.list)
}

// list answers the state of every enabled circuit breaker rule.
//
//	@Summary	Circuit breaker states
//	@ID			listBreakers
//	@Tags		breakers
//	@Produce	json
//	@Success	200	{object}	BreakerList
//	@Failure	401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Security	BearerAuth
//	@Router		/api/v1/breakers [get]
func (h *breakerHandler) list(c *fiber.Ctx) error {
	statuses := h.engine.Breakers()
	items := make([]Breaker, len(statuses))
	for i, s := range statuses {
		items[i] = Breaker{
			Rule: s.Rule, Resource: s.Resource, Strategy: string(s.Strategy), State: string(s.State),
			Since:  time.UnixMilli(s.SinceMs).UTC(),
			Window: BreakerWindow{Total: s.Total, Errors: s.Errors, Slow: s.Slow},
		}
	}
	return writeJSON(c, http.StatusOK, BreakerList{Items: items})
}
