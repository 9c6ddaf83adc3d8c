package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/store"
)

// User is a console user as the API shows it; the password never leaves
// the server.
type User struct {
	ID       int64  `json:"id" example:"3"`
	Username string `json:"username" example:"alice"`
	Role     string `json:"role" enums:"admin,editor,viewer" example:"editor"`
	// Apps is the user's scope (docs/api.md, "Per-app scopes"); absent when
	// the user has none.
	Apps      []string  `json:"apps,omitempty" example:"checkout,payments"`
	CreatedAt time.Time `json:"createdAt" format:"date-time"`
	UpdatedAt time.Time `json:"updatedAt" format:"date-time"`
}

func userOf(u store.User) User {
	return User{ID: u.ID, Username: u.Username, Role: u.Role, Apps: u.Apps, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// LoginRequest logs a user in.
type LoginRequest struct {
	Username string `json:"username" example:"alice"`
	Password string `json:"password" example:"correct horse battery staple"`
}

// LoginResponse is the user who logged in and the token their console
// sends back in X-CSRF-Token with every write.
type LoginResponse struct {
	User      User   `json:"user"`
	CSRFToken string `json:"csrfToken" example:"mJ0n3s2kq8Zb0l8l6w3Yb2s1"`
}

// Me is the caller: a user (through a console session) or an API token.
type Me struct {
	// Type is "user" or "token".
	Type string `json:"type" enums:"user,token" example:"user"`
	// Name is the username or the token's name.
	Name string `json:"name" example:"alice"`
	Role string `json:"role" enums:"admin,editor,viewer" example:"editor"`
	// Apps is the caller's scope (docs/api.md, "Per-app scopes"); absent when
	// it has none.
	Apps  []string  `json:"apps,omitempty" example:"checkout,payments"`
	User  *User     `json:"user,omitempty"`
	Token *APIToken `json:"token,omitempty"`
	// CSRFToken is the session's token for X-CSRF-Token (sessions only).
	CSRFToken string `json:"csrfToken,omitempty"`
}

// PasswordChange changes the caller's own password.
type PasswordChange struct {
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
}

type accountHandler struct {
	auth *auth
}

// bindLogin binds the routes of logging in and out. They are never guarded
// by the engine: no rule can lock anyone out of logging in.
func bindLogin(api fiber.Router, h *accountHandler) {
	api.Post("/auth/login", h.login)
	apiRoutes{router: api}.post("/auth/logout", viewers, h.logout)
}

func bindAccount(api apiRoutes, h *accountHandler) {
	api.get("/me", viewers, h.me)
	api.patch("/me/password", viewers, h.changePassword)
}

// login checks a username and password and starts a console session.
//
//	@Summary		Log in to the console
//	@ID				login
//	@Description	Public. The username matches in any case (ed is ED). Sets the session cookie (HttpOnly, SameSite=Strict). Repeated failures for a username (in any case) or from an address are answered 429 with Retry-After for a while, even for the right password.
//	@Tags			auth
//	@Accept			json
//	@Produce		json
//	@Param			credentials	body		LoginRequest	true	"username and password"
//	@Success		200			{object}	LoginResponse
//	@Failure		400			{object}	ErrorResponse	"the body is not a JSON object"
//	@Failure		401			{object}	ErrorResponse	"wrong username or password"
//	@Failure		413			{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415			{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422			{object}	ErrorResponse	"a missing or unknown field"
//	@Failure		429			{object}	ErrorResponse	"too many failures; see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security
//	@Router			/api/v1/auth/login [post]
func (h *accountHandler) login(c *fiber.Ctx) error {
	var bodyErrs []engine.FieldError
	o, err := codec.ParseBody(c.Body(), &bodyErrs)
	if err != nil {
		return errNotJSONObject(err)
	}
	var req LoginRequest
	o.Str("username", &req.Username)
	o.Str("password", &req.Password)
	o.Rest(func(string) string { return "" })
	errs := fieldErrors(bodyErrs)
	if req.Username == "" {
		errs = append(errs, FieldError{"username", "is required"})
	}
	if req.Password == "" {
		errs = append(errs, FieldError{"password", "is required"})
	}
	if len(errs) > 0 {
		return ValidationFailed("the login is not valid; see details", errs...)
	}
	a := h.auth
	nowMs, client := a.cfg.now().UnixMilli(), c.IP()
	if wait := a.logins.begin(nowMs, req.Username, client); wait > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt((wait+999)/1000, 10))
		return NewError(http.StatusTooManyRequests, "too many failed logins; try again later")
	}
	user, err := a.store.UserByName(c.UserContext(), req.Username)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Spend the time a hash check takes, so that timing does not tell
		// which usernames exist.
		_ = bcrypt.CompareHashAndPassword(a.dummyHash(), []byte(req.Password))
	case err != nil:
		a.logins.abandon(req.Username, client)
		return err
	}
	if err != nil || bcrypt.CompareHashAndPassword([]byte(user.PasswordHash), []byte(req.Password)) != nil {
		a.logins.fail(nowMs, req.Username, client)
		c.Set(fiber.HeaderWWWAuthenticate, bearerChallenge)
		return NewError(http.StatusUnauthorized, "wrong username or password")
	}
	a.logins.succeed(req.Username, client)
	sess, err := a.newSession(c, user)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, LoginResponse{User: userOf(user), CSRFToken: sess.CSRFToken})
}

// logout ends the caller's console session.
//
//	@Summary		Log out
//	@ID				logout
//	@Description	Ends the session and clears its cookie. A cookie-authenticated call needs X-CSRF-Token.
//	@Tags			auth
//	@Success		204
//	@Failure		401	{object}	ErrorResponse
//	@Failure		403	{object}	ErrorResponse	"X-CSRF-Token is missing or wrong; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		413	{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415	{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Security		BearerAuth
//	@Router			/api/v1/auth/logout [post]
func (h *accountHandler) logout(c *fiber.Ctx) error {
	if p := principalOf(c); p.session != nil {
		if err := h.auth.store.DeleteSession(c.UserContext(), p.session.IDHash); err != nil {
			return err
		}
	}
	h.auth.clearCookie(c)
	return c.SendStatus(http.StatusNoContent)
}

// me answers who the caller is.
//
//	@Summary	The caller
//	@ID			getMe
//	@Tags		auth
//	@Produce	json
//	@Success	200	{object}	Me
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/me [get]
func (h *accountHandler) me(c *fiber.Ctx) error {
	p := principalOf(c)
	me := Me{Role: p.role, Apps: p.apps()}
	if p.token != nil {
		t := tokenOf(*p.token)
		me.Type, me.Name, me.Token = "token", p.token.Name, &t
	} else {
		u := userOf(*p.user)
		me.Type, me.Name, me.User, me.CSRFToken = "user", p.user.Username, &u, p.session.CSRFToken
	}
	return writeJSON(c, http.StatusOK, me)
}

// changePassword changes the caller's own password and ends all their
// sessions, this one included. Its check of the current password counts
// with the logins' (loginLimiter): else a stolen session could guess the
// password without limit.
//
//	@Summary		Change one's own password
//	@ID				changePassword
//	@Description	A wrong current password counts as a failed login for the user: after repeated failures, this and logging in are answered 429 with Retry-After for a while, even with the right password.
//	@Tags			auth
//	@Accept			json
//	@Param			change	body	PasswordChange	true	"the current and the new password"
//	@Success		204
//	@Failure		400	{object}	ErrorResponse
//	@Failure		401	{object}	ErrorResponse
//	@Failure		403	{object}	ErrorResponse	"an API token has no password; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		413	{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415	{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422	{object}	ErrorResponse	"the current password is wrong, or the new one too weak"
//	@Failure		429	{object}	ErrorResponse	"too many wrong passwords, or a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/me/password [patch]
func (h *accountHandler) changePassword(c *fiber.Ctx) error {
	p := principalOf(c)
	if p.user == nil {
		return NewError(http.StatusForbidden, "an API token has no password")
	}
	var bodyErrs []engine.FieldError
	o, err := codec.ParseBody(c.Body(), &bodyErrs)
	if err != nil {
		return errNotJSONObject(err)
	}
	var req PasswordChange
	o.Str("currentPassword", &req.CurrentPassword)
	o.Str("newPassword", &req.NewPassword)
	o.Rest(func(string) string { return "" })
	errs := fieldErrors(bodyErrs)
	a := h.auth
	nowMs, client := a.cfg.now().UnixMilli(), c.IP()
	if wait := a.logins.begin(nowMs, p.user.Username, client); wait > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt((wait+999)/1000, 10))
		return NewError(http.StatusTooManyRequests, "too many wrong passwords; try again later")
	}
	if bcrypt.CompareHashAndPassword([]byte(p.user.PasswordHash), []byte(req.CurrentPassword)) != nil {
		a.logins.fail(nowMs, p.user.Username, client)
		errs = append(errs, FieldError{"currentPassword", "is wrong"})
	} else {
		a.logins.succeed(p.user.Username, client)
	}
	errs = append(errs, checkPassword("newPassword", req.NewPassword)...)
	if len(errs) > 0 {
		return ValidationFailed("the password was not changed; see details", errs...)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(req.NewPassword), h.auth.cfg.bcryptCost)
	if err != nil {
		return err
	}
	if _, err := h.auth.store.UpdateUser(c.UserContext(), p.user.ID, p.user.Role, string(hash), nil); err != nil {
		return err
	}
	h.auth.clearCookie(c)
	return c.SendStatus(http.StatusNoContent)
}

// Password rules: bcrypt reads at most 72 bytes.
const (
	minPasswordLen = 10
	maxPasswordLen = 72
)

// PasswordProblem says what is wrong with password as a user's password,
// or "" when nothing is: the API's rule, for the command line, which sets a
// password in the database directly when nobody can log in.
func PasswordProblem(password string) string {
	if errs := checkPassword("password", password); len(errs) > 0 {
		return errs[0].Message
	}
	return ""
}

func checkPassword(field, password string) []FieldError {
	if len(password) < minPasswordLen || len(password) > maxPasswordLen {
		return []FieldError{{field, fmt.Sprintf("must be %d to %d bytes long", minPasswordLen, maxPasswordLen)}}
	}
	return nil
}
