package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/store"
)

// APIToken is an API token as lists show it: never its secret.
type APIToken struct {
	ID         int64      `json:"id" example:"7"`
	Name       string     `json:"name" example:"ci-deploy"`
	Role       string     `json:"role" enums:"admin,editor,viewer,instance" example:"editor"`
	ExpiresAt  *time.Time `json:"expiresAt" format:"date-time" extensions:"x-nullable"`
	LastUsedAt *time.Time `json:"lastUsedAt" format:"date-time" extensions:"x-nullable"`
	CreatedBy  string     `json:"createdBy" example:"alice"`
	// Apps is the token's scope (docs/api.md, "Per-app scopes"); absent when it
	// has none.
	Apps      []string  `json:"apps,omitempty" example:"checkout"`
	CreatedAt time.Time `json:"createdAt" format:"date-time"`
}

func tokenOf(t store.APIToken) APIToken {
	return APIToken{
		ID: t.ID, Name: t.Name, Role: t.Role, ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt,
		CreatedBy: t.CreatedBy, Apps: t.Apps, CreatedAt: t.CreatedAt,
	}
}

// NewAPIToken is a token just created, with its secret: shown this once.
type NewAPIToken struct {
	ID        int64      `json:"id" example:"7"`
	Name      string     `json:"name" example:"ci-deploy"`
	Role      string     `json:"role" example:"editor"`
	Token     string     `json:"token" example:"slc_3q2-7wEvz6xYcH1o0hQk0oOq3Ysm6mC0i2qWb1Q4l7k"`
	ExpiresAt *time.Time `json:"expiresAt" format:"date-time" extensions:"x-nullable"`
	// Apps is the token's scope; absent when it has none.
	Apps      []string  `json:"apps,omitempty" example:"checkout"`
	CreatedAt time.Time `json:"createdAt" format:"date-time"`
}

// TokenRequest creates an API token.
type TokenRequest struct {
	// Name follows the username rule: 1-64 letters, digits, '.', '_', '@'
	// or '-', starting with a letter or digit.
	Name string `json:"name" example:"ci-deploy"`
	// Role instance may only read the rule snapshot, post instance
	// reports and ask the rate limit service: the token an app process
	// that embeds the engine, or a gateway, is given.
	Role string `json:"role" enums:"admin,editor,viewer,instance" example:"editor"`
	// ExpiresAt is optional: without it the token does not expire.
	ExpiresAt *time.Time `json:"expiresAt" format:"date-time" extensions:"x-nullable" validate:"optional"`
	// Apps is optional: 1 to 64 app names, none twice, not for role admin.
	// A scoped editor writes only the rules of these apps, a scoped
	// instance token reads and reports only for them (docs/api.md, "Per-app
	// scopes"). Absent or null: no scope.
	Apps []string `json:"apps" example:"checkout" extensions:"x-nullable" validate:"optional"`
}

// TokenList is one page of API tokens.
type TokenList struct {
	Items    []APIToken `json:"items"`
	Total    int64      `json:"total"`
	Page     int        `json:"page"`
	PageSize int        `json:"pageSize"`
}

type tokenHandler struct {
	auth *auth
}

func bindTokens(api apiRoutes, h *tokenHandler) {
	api.get("/tokens", admins, h.list)
	api.post("/tokens", admins, h.create)
	api.delete("/tokens/:id", admins, h.delete)
}

// list answers the API tokens, without their secrets.
//
//	@Summary	List API tokens
//	@ID			listTokens
//	@Tags		tokens
//	@Produce	json
//	@Param		page		query		int	false	"page, from 1"				default(1)
//	@Param		pageSize	query		int	false	"tokens per page, 1 to 500"	default(50)
//	@Success	200			{object}	TokenList
//	@Failure	400			{object}	ErrorResponse
//	@Failure	401			{object}	ErrorResponse
//	@Failure	403			{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/tokens [get]
func (h *tokenHandler) list(c *fiber.Ctx) error {
	page, err := pageParams(c)
	if err != nil {
		return err
	}
	all, err := h.auth.store.AllTokens(c.UserContext())
	if err != nil {
		return err
	}
	items := []APIToken{}
	for i := (page.Number - 1) * page.Size; i < len(all) && len(items) < page.Size; i++ {
		items = append(items, tokenOf(all[i]))
	}
	return writeJSON(c, http.StatusOK, TokenList{Items: items, Total: int64(len(all)), Page: page.Number, PageSize: page.Size})
}

// create makes an API token and answers its secret, this once.
//
//	@Summary	Create an API token
//	@ID			createToken
//	@Tags		tokens
//	@Accept		json
//	@Produce	json
//	@Param		token	body		TokenRequest	true	"name, role, optional expiry and optional apps"
//	@Success	201		{object}	NewAPIToken
//	@Failure	400		{object}	ErrorResponse
//	@Failure	401		{object}	ErrorResponse
//	@Failure	403		{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	409		{object}	ErrorResponse	"the name is taken"
//	@Failure	413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure	415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure	422		{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure	429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/tokens [post]
func (h *tokenHandler) create(c *fiber.Ctx) error {
	var bodyErrs []engine.FieldError
	o, err := codec.ParseBody(c.Body(), &bodyErrs)
	if err != nil {
		return errNotJSONObject(err)
	}
	var name, role, expires string
	o.Str("name", &name)
	o.Str("role", &role)
	o.Str("expiresAt", &expires)
	var appErrs []FieldError
	apps, _ := readApps(o, &appErrs)
	o.Rest(func(string) string { return "" })
	errs := append(fieldErrors(bodyErrs), appErrs...)
	if !usernamePattern.MatchString(name) {
		errs = append(errs, FieldError{"name", "must be 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit"})
	}
	if roleRank[role] == 0 && role != roleInstance {
		errs = append(errs, FieldError{"role", "must be one of admin, editor, viewer, instance"})
	}
	checkScopeRole(role, apps, &errs)
	now := h.auth.cfg.now()
	t := store.APIToken{Name: name, Role: role, CreatedBy: principalOf(c).actorName(), Apps: apps, CreatedAt: now}
	if expires != "" {
		at, err := time.Parse(time.RFC3339, expires)
		switch {
		case err != nil:
			errs = append(errs, FieldError{"expiresAt", "must be an RFC 3339 time"})
		case !at.After(now):
			errs = append(errs, FieldError{"expiresAt", "must be in the future"})
		default:
			at = at.UTC()
			t.ExpiresAt = &at
		}
	}
	if len(errs) > 0 {
		return ValidationFailed("the token is not valid; see details", errs...)
	}
	secret, err := h.auth.addToken(c.UserContext(), &t)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("a token named %q exists already: %w", name, err)
	}
	if err != nil {
		return err
	}
	c.Location(fmt.Sprintf("%s/%d", c.Path(), t.ID))
	return writeJSON(c, http.StatusCreated, NewAPIToken{
		ID: t.ID, Name: t.Name, Role: t.Role, Token: secret, ExpiresAt: t.ExpiresAt, Apps: t.Apps, CreatedAt: t.CreatedAt,
	})
}

// delete revokes an API token: the next request with it is refused.
//
//	@Summary	Revoke an API token
//	@ID			deleteToken
//	@Tags		tokens
//	@Param		id	path	int	true	"token id"
//	@Success	204
//	@Failure	400	{object}	ErrorResponse
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such token"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/tokens/{id} [delete]
func (h *tokenHandler) delete(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.auth.revokeToken(c.UserContext(), id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no token has id %d: %w", id, err)
		}
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}
