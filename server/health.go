package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/store"
)

// healthPingTimeout bounds the wait for the database connection, so that a
// health probe answers 503 instead of hanging behind a stuck database. A
// write lock that another process holds is waited for as a write would
// wait: SQLite's busy timeout (5 s), which the context cannot cut short.
const healthPingTimeout = 2 * time.Second

// HealthResponse tells whether the server and its database are up.
type HealthResponse struct {
	// Status is "ok" when the server can serve, else "unavailable".
	Status string `json:"status" example:"ok" enums:"ok,unavailable"`
	// Version is the server's build version.
	Version string `json:"version" example:"1.4.0"`
	// DB is "ok" when the database answered and would take a write, else
	// "unreachable".
	DB string `json:"db" example:"ok" enums:"ok,unreachable"`
}

type healthHandler struct {
	store   *store.Store
	version string
	logger  *slog.Logger
}

func bindHealth(api fiber.Router, st *store.Store, version string, logger *slog.Logger) {
	h := &healthHandler{store: st, version: version, logger: logger}
	api.Get("/health", h.get)
}

// get answers 200 when the database answers and would take a write (the
// store's Ping), else 503 with the same shape, so that probes and people
// read one body: a read-only or locked database fails every login and rule
// write, so the server cannot serve.
//
//	@Summary		Health of the server and its database
//	@ID				getHealth
//	@Description	Public (no credentials). 503, with the same body, when the database does not answer or would not take a write (read-only, locked by another process, a SQLite file removed or replaced while the server runs, or one the server may no longer write, such as a file made immutable, even though the connection that opened it before still takes transactions into the WAL).
//	@Tags			health
//	@Produce		json
//	@Success		200	{object}	HealthResponse
//	@Failure		503	{object}	HealthResponse
//	@Failure		500	{object}	ErrorResponse
//	@Security
//	@Router			/api/v1/health [get]
func (h *healthHandler) get(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), healthPingTimeout)
	defer cancel()

	answer := HealthResponse{Status: "ok", Version: h.version, DB: "ok"}
	status := http.StatusOK
	if err := h.store.Ping(ctx); err != nil {
		h.logger.WarnContext(ctx, "health: the database does not answer or would not take a write", "error", err)
		answer.Status, answer.DB = "unavailable", "unreachable"
		status = http.StatusServiceUnavailable
	}
	return c.Status(status).JSON(answer, fiber.MIMEApplicationJSONCharsetUTF8)
}
