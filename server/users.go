package server

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/store"
)

// UserRequest creates a user, or changes one (PATCH: only the fields
// given).
type UserRequest struct {
	Username string `json:"username" example:"alice" validate:"optional"`
	Role     string `json:"role" enums:"admin,editor,viewer" example:"editor" validate:"optional"`
	// Password is write-only; changing it ends the user's sessions.
	Password string `json:"password" example:"correct horse battery staple" validate:"optional"`
	// Apps scopes the user to the rules of these apps (docs/api.md, "Per-app
	// scopes"): 1 to 64 app names, none twice; not for an admin. Absent or
	// null on create: no scope; on PATCH, absent keeps it and null clears
	// it.
	Apps []string `json:"apps" example:"checkout,payments" extensions:"x-nullable" validate:"optional"`
}

// UserList is one page of users.
type UserList struct {
	Items    []User `json:"items"`
	Total    int64  `json:"total"`
	Page     int    `json:"page"`
	PageSize int    `json:"pageSize"`
}

var usernamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,63}$`)

type userHandler struct {
	auth *auth
}

func bindUsers(api apiRoutes, h *userHandler) {
	api.get("/users", admins, h.list)
	api.post("/users", admins, h.create)
	api.get("/users/:id", admins, h.get)
	api.patch("/users/:id", admins, h.update)
	api.delete("/users/:id", admins, h.delete)
}

// list answers one page of users.
//
//	@Summary	List users
//	@ID			listUsers
//	@Tags		users
//	@Produce	json
//	@Param		page		query		int	false	"page, from 1"				default(1)
//	@Param		pageSize	query		int	false	"users per page, 1 to 500"	default(50)
//	@Success	200			{object}	UserList
//	@Failure	400			{object}	ErrorResponse
//	@Failure	401			{object}	ErrorResponse
//	@Failure	403			{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/users [get]
func (h *userHandler) list(c *fiber.Ctx) error {
	page, err := pageParams(c)
	if err != nil {
		return err
	}
	users, total, err := h.auth.store.ListUsers(c.UserContext(), page)
	if err != nil {
		return err
	}
	items := make([]User, len(users))
	for i, u := range users {
		items[i] = userOf(u)
	}
	return writeJSON(c, http.StatusOK, UserList{Items: items, Total: total, Page: page.Number, PageSize: page.Size})
}

// get answers one user.
//
//	@Summary	Get a user
//	@ID			getUser
//	@Tags		users
//	@Produce	json
//	@Param		id	path		int	true	"user id"
//	@Success	200	{object}	User
//	@Failure	400	{object}	ErrorResponse
//	@Failure	401	{object}	ErrorResponse
//	@Failure	403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	404	{object}	ErrorResponse	"no such user"
//	@Failure	429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/users/{id} [get]
func (h *userHandler) get(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	u, err := h.auth.store.GetUser(c.UserContext(), id)
	if err != nil {
		return userMissing(id, err)
	}
	return writeJSON(c, http.StatusOK, userOf(u))
}

// create adds a user.
//
//	@Summary	Create a user
//	@ID			createUser
//	@Tags		users
//	@Accept		json
//	@Produce	json
//	@Param		user	body		UserRequest	true	"username, role, password and optional apps"
//	@Success	201		{object}	User
//	@Failure	400		{object}	ErrorResponse
//	@Failure	401		{object}	ErrorResponse
//	@Failure	403		{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure	409		{object}	ErrorResponse	"the username is taken, in this case or another: usernames are case-insensitive"
//	@Failure	413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure	415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure	422		{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure	429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security	BearerAuth
//	@Router		/api/v1/users [post]
func (h *userHandler) create(c *fiber.Ctx) error {
	req, present, err := decodeUserRequest(c)
	if err != nil {
		return err
	}
	var errs []FieldError
	if !usernamePattern.MatchString(req.Username) {
		errs = append(errs, FieldError{"username", "must be 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit"})
	}
	if !present["role"] || roleRank[req.Role] == 0 {
		errs = append(errs, FieldError{"role", "must be one of admin, editor, viewer"})
	}
	errs = append(errs, checkPassword("password", req.Password)...)
	checkScopeRole(req.Role, req.Apps, &errs)
	if len(errs) > 0 {
		return ValidationFailed("the user is not valid; see details", errs...)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(req.Password), h.auth.cfg.bcryptCost)
	if err != nil {
		return err
	}
	u := store.User{Username: req.Username, Role: req.Role, PasswordHash: string(hash), Apps: req.Apps}
	if err := h.auth.store.CreateUser(c.UserContext(), &u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("a user named %q exists already, in this case or another: %w", req.Username, err)
		}
		return err
	}
	c.Location(fmt.Sprintf("%s/%d", c.Path(), u.ID))
	return writeJSON(c, http.StatusCreated, userOf(u))
}

// update changes a user's role, scope or password.
//
//	@Summary		Update a user
//	@ID				updateUser
//	@Description	Changes the role, the scope (apps; null clears it, and a scoped user cannot be made admin without clearing it) and/or the password (which ends the user's sessions). A change of scope holds from the user's next request. The last admin cannot be demoted. An admin demoted loses the admin tokens they created, and those these created in turn.
//	@Tags			users
//	@Accept			json
//	@Produce		json
//	@Param			id		path		int			true	"user id"
//	@Param			user	body		UserRequest	true	"role, apps and/or password; the username cannot change"
//	@Success		200		{object}	User
//	@Failure		400		{object}	ErrorResponse
//	@Failure		401		{object}	ErrorResponse
//	@Failure		403		{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404		{object}	ErrorResponse	"no such user"
//	@Failure		409		{object}	ErrorResponse	"it would leave no admin"
//	@Failure		413		{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415		{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422		{object}	ErrorResponse	"bad fields, each named in details"
//	@Failure		429		{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/users/{id} [patch]
func (h *userHandler) update(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	req, present, err := decodeUserRequest(c)
	if err != nil {
		return err
	}
	current, err := h.auth.store.GetUser(c.UserContext(), id)
	if err != nil {
		return userMissing(id, err)
	}
	var errs []FieldError
	if present["username"] && req.Username != current.Username {
		errs = append(errs, FieldError{"username", "cannot change"})
	}
	role := current.Role
	if present["role"] {
		if roleRank[req.Role] == 0 {
			errs = append(errs, FieldError{"role", "must be one of admin, editor, viewer"})
		}
		role = req.Role
	}
	apps := current.Apps
	if present["apps"] {
		apps = req.Apps
	}
	checkScopeRole(role, apps, &errs)
	var hash []byte
	if present["password"] {
		if errs = append(errs, checkPassword("password", req.Password)...); len(errs) == 0 {
			if hash, err = bcrypt.GenerateFromPassword([]byte(req.Password), h.auth.cfg.bcryptCost); err != nil {
				return err
			}
		}
	}
	if len(errs) > 0 {
		return ValidationFailed("the user was not changed; see details", errs...)
	}
	var newApps *store.Apps
	if present["apps"] {
		newApps = &apps
	}
	u, err := h.auth.store.UpdateUser(c.UserContext(), id, role, string(hash), newApps)
	if err != nil {
		return userMissing(id, err)
	}
	if current.Role == roleAdmin && role != roleAdmin {
		// The admin tokens the user made are gone from the store.
		if err := h.auth.reloadTokens(c.UserContext()); err != nil {
			return err
		}
	}
	return writeJSON(c, http.StatusOK, userOf(u))
}

// delete removes a user, ends their sessions and, for an admin, revokes
// their admin tokens.
//
//	@Summary		Delete a user
//	@ID				deleteUser
//	@Description	Removes the user and ends their sessions. An admin's admin tokens, and those these created in turn, go with them. The last admin cannot be deleted.
//	@Tags			users
//	@Param			id	path	int	true	"user id"
//	@Success		204
//	@Failure		400	{object}	ErrorResponse
//	@Failure		401	{object}	ErrorResponse
//	@Failure		403	{object}	ErrorResponse	"admins only; or an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		404	{object}	ErrorResponse	"no such user"
//	@Failure		409	{object}	ErrorResponse	"the last admin cannot be deleted"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/users/{id} [delete]
func (h *userHandler) delete(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.auth.store.DeleteUser(c.UserContext(), id); err != nil {
		return userMissing(id, err)
	}
	// An admin's admin tokens are gone from the store with them.
	if err := h.auth.reloadTokens(c.UserContext()); err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

func decodeUserRequest(c *fiber.Ctx) (UserRequest, map[string]bool, error) {
	var errs []engine.FieldError
	o, err := codec.ParseBody(c.Body(), &errs)
	if err != nil {
		return UserRequest{}, nil, errNotJSONObject(err)
	}
	var req UserRequest
	present := map[string]bool{
		"username": o.Str("username", &req.Username),
		"role":     o.Str("role", &req.Role),
		"password": o.Str("password", &req.Password),
	}
	var appErrs []FieldError
	req.Apps, present["apps"] = readApps(o, &appErrs)
	o.Rest(func(string) string { return "" })
	if all := append(fieldErrors(errs), appErrs...); len(all) > 0 {
		return UserRequest{}, nil, ValidationFailed("the user is not valid; see details", all...)
	}
	return req, present, nil
}

// userMissing words store errors about user id.
func userMissing(id int64, err error) error {
	switch {
	case errors.Is(err, store.ErrLastAdmin):
		return fmt.Errorf("user %d is the last admin; make another admin first: %w", id, store.ErrConflict)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no user has id %d: %w", id, err)
	}
	return err
}
