package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/rules"
)

// maxSnapshotWait is the longest a snapshot request may be held (docs/api.md).
const maxSnapshotWait = 60 * time.Second

// RuleSnapshot is the rule set an engine of an app must run.
type RuleSnapshot struct {
	// Revision grows with every rule change, of any rule; it is also the
	// answer's ETag.
	Revision int64 `json:"revision" example:"42"`
	// Rules are the enabled, unexpired rules without an app and those of
	// the app asked for, by id, as GET /rules shows them.
	Rules []rules.APIRule `json:"rules"`
}

// snapshotHandler answers the rule snapshot that instances long-poll.
type snapshotHandler struct {
	rules *rules.Service
	// closing is closed when the server shuts down: held requests are
	// answered at once.
	closing <-chan struct{}
}

// bindSnapshot binds the snapshot route; before /rules/:id, which would
// take "snapshot" for an id.
func bindSnapshot(api apiRoutes, h *snapshotHandler) {
	api.get("/rules/snapshot", instancesOr(viewers), h.get)
}

// get answers the rule set an engine of app must run, or 304 while the
// revision the caller has is still the current one.
//
//	@Summary		Rule snapshot for instances
//	@ID				getRuleSnapshot
//	@Description	The rules an engine of app must run: the enabled rules without an app and those of app (without app, only the former), that have not expired (a rule that expires later carries its expiresAt, which the engine honours), by id, in the shape GET /rules lists them, with the revision of the rule set, also sent as ETag: "N". The revision grows with every rule change, of any rule. With If-None-Match naming the current revision the answer is 304; with wait too, it is held until the revision moves (then 200 with the new set) or wait ends (then 304), so that an instance long-polls. Server shutdown answers held requests 304 at once. Tokens of role instance may read it; so may viewers and above. An instance token scoped to apps must name one of them in app (403 naming app otherwise, or without app).
//	@Tags			instances
//	@Produce		json
//	@Param			app				query		string	false	"the instances' app: ^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$"
//	@Param			wait			query		string	false	"how long to hold the request while If-None-Match names the current revision: a Go duration (30s, 1m, 500ms) or whole seconds (30); at most 60s; default 0, answer at once"
//	@Param			If-None-Match	header		string	false	"the revision the caller has, the ETag it was given (quoted, bare or weak)"
//	@Success		200				{object}	RuleSnapshot
//	@Success		304				"the revision named in If-None-Match is still the current one"
//	@Header			200,304			{string}	ETag	"the revision, quoted"
//	@Failure		400				{object}	ErrorResponse	"bad query parameters (app, wait), every one named in details"
//	@Failure		401				{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403				{object}	ErrorResponse	"neither an instance token nor a viewer or above; or an instance token scoped to apps that app is not one of"
//	@Failure		429				{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/rules/snapshot [get]
func (h *snapshotHandler) get(c *fiber.Ctx) error {
	var bad badParams
	app, err := appParam(c)
	bad.note(err)
	wait, err := waitParam(c)
	bad.note(err)
	if err := bad.err(); err != nil {
		return err
	}
	// Only an instance token's scope holds its reads: a scoped viewer or
	// editor reads every rule through GET /rules anyway.
	if p := principalOf(c); p.role == roleInstance && !p.mayUseApp(app) {
		return outOfScope(p, "app", app)
	}
	has := ifNoneMatch(c.Get(fiber.HeaderIfNoneMatch))
	ctx := c.UserContext()
	var timeout <-chan time.Time
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		rev, changed, err := h.rules.Watch(ctx)
		if err != nil {
			return err
		}
		if !has(rev) {
			snap, err := h.rules.Snapshot(ctx, app)
			if err != nil {
				return err
			}
			out := RuleSnapshot{Revision: snap.Revision, Rules: make([]rules.APIRule, len(snap.Rules))}
			now := h.rules.NowMs()
			for i := range snap.Rules {
				out.Rules[i] = rules.APIOf(&snap.Rules[i], now)
			}
			setETag(c, snap.Revision)
			return writeJSON(c, http.StatusOK, out)
		}
		notModified := func() error {
			setETag(c, rev)
			return c.SendStatus(http.StatusNotModified)
		}
		if timeout == nil {
			return notModified()
		}
		select {
		case <-changed:
		case <-timeout:
			return notModified()
		case <-h.closing:
			return notModified()
		}
	}
}

// waitParam reads ?wait=: a Go duration or whole seconds, 0 to
// maxSnapshotWait.
func waitParam(c *fiber.Ctx) (time.Duration, error) {
	v := c.Query("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if secs, serr := strconv.ParseInt(v, 10, 64); serr == nil {
		d, err = time.Duration(min(max(secs, -1), int64(maxSnapshotWait/time.Second)+1))*time.Second, nil
	}
	if err != nil || d < 0 || d > maxSnapshotWait {
		msg := "must be a Go duration (30s) or whole seconds (30), from 0 to 60s"
		return 0, BadRequest("wait "+msg, FieldError{"wait", msg})
	}
	return d, nil
}

// ifNoneMatch parses an If-None-Match header into a test of whether it
// names a revision: "42", 42 and W/"42" name 42, * names any; an absent
// header names none.
func ifNoneMatch(header string) func(rev int64) bool {
	header = strings.TrimSpace(header)
	if header == "" {
		return func(int64) bool { return false }
	}
	named := map[string]bool{}
	for _, tag := range strings.Split(header, ",") {
		named[strings.Trim(strings.TrimPrefix(strings.TrimSpace(tag), "W/"), `"`)] = true
	}
	return func(rev int64) bool { return named["*"] || named[strconv.FormatInt(rev, 10)] }
}
