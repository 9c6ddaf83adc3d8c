package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/store"
)

// Roles, from least to most allowed.
const (
	roleViewer = "viewer"
	roleEditor = "editor"
	roleAdmin  = "admin"
)

// roleInstance is the role of the tokens app processes that embed the
// engine are given: it ranks below every other, so that it reaches only
// the routes whose access names it (instancesOr), and nothing else.
const roleInstance = "instance"

var roleRank = map[string]int{roleViewer: 1, roleEditor: 2, roleAdmin: 3}

// Auth defaults.
const (
	sessionCookie = "sluice_session"
	csrfHeader    = "X-CSRF-Token"
	// bearerChallenge is the WWW-Authenticate of a 401.
	bearerChallenge    = `Bearer realm="sluice"`
	defaultSessionIdle = 2 * time.Hour
	defaultSessionMax  = 24 * time.Hour
	// touchEvery bounds how often a session's or token's last use is
	// written: once a minute is exact enough and spares a write per
	// request.
	touchEvery = time.Minute
	// bootstrapTokenName names the token --bootstrap-token registers.
	bootstrapTokenName = "bootstrap"
	// instanceTokenName names the token --instance-token registers.
	instanceTokenName = "instances"
)

// publicPaths are the /api/v1 routes that answer without credentials.
var publicPaths = map[string]bool{"/api/v1/health": true, "/api/v1/auth/login": true}

// principal is who makes a request: a user through a console session, or
// an API token.
//
// A token's principal is made once, when the token is cached, and shared
// by its requests: nothing writes to a principal once made.
type principal struct {
	user    *store.User     // a session's user
	session *store.Session  // nil for tokens
	token   *store.APIToken // nil for sessions
	role    string
	// actor is a token's actorName, made once rather than on every
	// request that the API guard names by it.
	actor string
}

// actorName is how revisions name the principal: the username, or
// "token:<name>".
func (p *principal) actorName() string {
	if p.token != nil {
		return p.actor
	}
	return p.user.Username
}

const principalKey = "sluice.principal"

// principalOf returns the request's principal, or nil on public routes.
func principalOf(c *fiber.Ctx) *principal {
	p, _ := c.Locals(principalKey).(*principal)
	return p
}

// authConfig is how the server authenticates.
type authConfig struct {
	// secureCookies marks the session cookie Secure (the server runs TLS).
	secureCookies bool
	sessionIdle   time.Duration
	sessionMax    time.Duration
	bcryptCost    int
	now           func() time.Time
}

// auth authenticates and authorises every /api/v1 request, and keeps the
// API tokens in memory: every token write goes through it, so the cache is
// exact and a revocation takes effect on the next request.
type auth struct {
	store  *store.Store
	logger *slog.Logger
	cfg    authConfig
	logins *loginLimiter
	// dummyHash is checked against when a username does not exist, so that
	// a login takes as long either way; made on first need.
	dummyHash func() []byte

	mu sync.RWMutex
	// tokens is keyed by the SHA-256 of the secret as bytes, not by the
	// hex text the store keeps, so that a request's lookup makes no
	// string.
	tokens map[tokenDigest]*cachedToken
	// writeMu is held by every writer of tokens across the store access
	// its change follows, so that a reload that read the store before a
	// token was added or revoked cannot put back a cache without that
	// change.
	writeMu sync.Mutex
}

type cachedToken struct {
	token store.APIToken
	// principal is every request's principal with the token.
	principal principal
	// lastSeenNs is when the last use was written to the store, in Unix
	// nanoseconds; checked on every request without a lock.
	lastSeenNs atomic.Int64
}

func newAuth(st *store.Store, logger *slog.Logger, cfg authConfig) *auth {
	return &auth{
		store: st, logger: logger, cfg: cfg, logins: newLoginLimiter(), tokens: map[tokenDigest]*cachedToken{},
		dummyHash: sync.OnceValue(func() []byte {
			hash, _ := bcrypt.GenerateFromPassword([]byte(randomSecret(16)), cfg.bcryptCost)
			return hash
		}),
	}
}

// start creates the first admin on an empty database, registers the
// bootstrap and instance tokens, and loads the tokens.
func (a *auth) start(ctx context.Context, adminPassword, bootstrapToken, instanceToken string) error {
	if err := a.ensureAdmin(ctx, adminPassword); err != nil {
		return err
	}
	for _, t := range []struct{ name, role, secret, flag string }{
		{bootstrapTokenName, roleAdmin, bootstrapToken, "--bootstrap-token"},
		{instanceTokenName, roleInstance, instanceToken, "--instance-token"},
	} {
		if t.secret == "" {
			continue
		}
		err := a.store.PutToken(ctx, &store.APIToken{
			Name: t.name, Role: t.role, TokenHash: hashSecret(t.secret), CreatedBy: t.flag, CreatedAt: a.cfg.now(),
		})
		if err != nil {
			return fmt.Errorf("register the %s token: %w", t.name, err)
		}
	}
	return a.reloadTokens(ctx)
}

// ensureAdmin creates the user admin when there is no user at all, with
// password or, if that is empty, a random one that is logged once.
func (a *auth) ensureAdmin(ctx context.Context, password string) error {
	n, err := a.store.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	generated := password == ""
	if generated {
		password = randomSecret(18)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), a.cfg.bcryptCost)
	if err != nil {
		return err
	}
	if err := a.store.CreateUser(ctx, &store.User{Username: "admin", Role: roleAdmin, PasswordHash: string(hash)}); err != nil {
		return fmt.Errorf("create the first admin: %w", err)
	}
	if generated {
		a.logger.Warn("created the first user; log in and change the password (shown only this once)",
			"username", "admin", "password", password)
	} else {
		a.logger.Info("created the first user with the password from SLUICE_ADMIN_PASSWORD", "username", "admin")
	}
	return nil
}

func (a *auth) reloadTokens(ctx context.Context) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	all, err := a.store.AllTokens(ctx)
	if err != nil {
		return err
	}
	tokens := make(map[tokenDigest]*cachedToken, len(all))
	for _, t := range all {
		digest, ok := digestOfHash(t.TokenHash)
		if !ok {
			a.logger.WarnContext(ctx, "a stored token's hash is not a SHA-256 in hex; the token is refused", "token", t.Name)
			continue
		}
		ct := newCachedToken(t)
		if t.LastUsedAt != nil {
			ct.lastSeenNs.Store(t.LastUsedAt.UnixNano())
		}
		tokens[digest] = ct
	}
	a.mu.Lock()
	a.tokens = tokens
	a.mu.Unlock()
	return nil
}

// middleware authenticates every /api/v1 request before routing, so that
// an unknown path without credentials is 401 too, and checks the CSRF
// token of cookie-authenticated writes. The role a request needs is
// checked by the route that matched (apiRoutes), not here: the raw path is
// not what the router matched.
func (a *auth) middleware(c *fiber.Ctx) error {
	if publicPaths[c.Path()] {
		return c.Next()
	}
	if err := a.admit(c); err != nil {
		return err
	}
	return c.Next()
}

// admit authenticates the request, checks the CSRF token of a
// cookie-authenticated write, and keeps the principal for the handlers
// after it (principalOf).
func (a *auth) admit(c *fiber.Ctx) error {
	p, err := a.authenticate(c, "credentials are required: a bearer token or a console session")
	if err != nil {
		return err
	}
	if p.session != nil && !safeMethod(c.Method()) &&
		subtle.ConstantTimeCompare([]byte(c.Get(csrfHeader)), []byte(p.session.CSRFToken)) != 1 {
		return NewError(http.StatusForbidden, "a console write must carry the session's csrfToken in the "+csrfHeader+" header")
	}
	c.Locals(principalKey, p)
	return nil
}

// requireCredentials lets through any authenticated caller of role
// viewer or above: it guards /metrics, which Prometheus scrapes with a
// bearer token. An instance token is refused there, as on every route but
// the instances' own (docs/api.md, "Instances").
func (a *auth) requireCredentials(c *fiber.Ctx) error {
	p, err := a.authenticate(c, "credentials are required: a bearer token (or start the server with --public-metrics)")
	if err != nil {
		return err
	}
	if roleRank[p.role] < roleRank[roleViewer] {
		return NewError(http.StatusForbidden, fmt.Sprintf("this needs the %s role; yours is %s", roleViewer, p.role))
	}
	return c.Next()
}

func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// authenticate finds the request's principal. No credential, or one that
// is wrong, expired or revoked, is a 401 (noCredentials is its message
// when there is none), with the WWW-Authenticate challenge RFC 7235
// requires of every 401.
func (a *auth) authenticate(c *fiber.Ctx, noCredentials string) (*principal, error) {
	p, err := a.credentials(c)
	if err == nil && p == nil {
		err = NewError(http.StatusUnauthorized, noCredentials)
	}
	if err == nil {
		return p, nil
	}
	if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, bearerChallenge)
	}
	return p, err
}

// credentials finds the request's principal: a bearer token, else a
// session cookie. A credential that is present but wrong, expired or
// revoked is an error; no credential at all is a nil principal.
func (a *auth) credentials(c *fiber.Ctx) (*principal, error) {
	// Read in place, not copied as c.Get copies under Immutable: the
	// secret is only hashed, never kept.
	if h := utils.UnsafeString(c.Request().Header.Peek(fiber.HeaderAuthorization)); h != "" {
		secret, ok := bearerSecret(h)
		if !ok {
			return nil, NewError(http.StatusUnauthorized, "the Authorization header must be \"Bearer <token>\"")
		}
		return a.tokenPrincipal(c.UserContext(), secret)
	}
	if cookie := c.Cookies(sessionCookie); cookie != "" {
		return a.sessionPrincipal(c.UserContext(), cookie)
	}
	return nil, nil
}

// bearerSecret reads the token of an Authorization header of the Bearer
// scheme. The scheme is case-insensitive and followed by one or more
// spaces (RFC 7235, section 2.1): "bearer <token>" is as good as
// "Bearer <token>".
func bearerSecret(header string) (string, bool) {
	scheme, rest, _ := strings.Cut(header, " ")
	secret := strings.TrimLeft(rest, " ")
	return secret, strings.EqualFold(scheme, "Bearer") && secret != ""
}

func (a *auth) tokenPrincipal(ctx context.Context, secret string) (*principal, error) {
	digest := tokenDigest(sha256.Sum256(utils.UnsafeBytes(secret)))
	a.mu.RLock()
	ct := a.tokens[digest]
	a.mu.RUnlock()
	now := a.cfg.now()
	if ct == nil || ct.token.ExpiresAt != nil && !now.Before(*ct.token.ExpiresAt) {
		return nil, NewError(http.StatusUnauthorized, "the token is unknown, revoked or expired")
	}
	last := ct.lastSeenNs.Load()
	if now.UnixNano()-last >= int64(touchEvery) && ct.lastSeenNs.CompareAndSwap(last, now.UnixNano()) {
		if err := a.store.TouchTokens(ctx, map[int64]time.Time{ct.token.ID: now}); err != nil {
			a.logger.WarnContext(ctx, "record a token's last use", "token", ct.token.Name, "error", err)
		}
	}
	return &ct.principal, nil
}

func (a *auth) sessionPrincipal(ctx context.Context, cookie string) (*principal, error) {
	idHash := hashSecret(cookie)
	sess, user, err := a.store.GetSession(ctx, idHash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, NewError(http.StatusUnauthorized, "the session has ended; log in again")
	}
	if err != nil {
		return nil, err
	}
	now := a.cfg.now()
	if !now.Before(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) >= a.cfg.sessionIdle {
		if err := a.store.DeleteSession(ctx, idHash); err != nil {
			return nil, err
		}
		return nil, NewError(http.StatusUnauthorized, "the session has expired; log in again")
	}
	if now.Sub(sess.LastSeenAt) >= touchEvery {
		if err := a.store.TouchSession(ctx, idHash, now); err != nil {
			return nil, err
		}
	}
	return &principal{user: &user, session: &sess, role: user.Role}, nil
}

// purgeSessions deletes the sessions that sessionPrincipal would refuse,
// which it deletes only when they are presented again: the retention job
// runs it, so that abandoned sessions do not pile up.
func (a *auth) purgeSessions(ctx context.Context) error {
	now := a.cfg.now()
	return a.store.DeleteSessionsBefore(ctx, now, now.Add(-a.cfg.sessionIdle))
}

// newSession logs user in: it stores a session and sets its cookie.
func (a *auth) newSession(c *fiber.Ctx, user store.User) (store.Session, error) {
	secret := randomSecret(32)
	now := a.cfg.now()
	sess := store.Session{
		IDHash: hashSecret(secret), UserID: user.ID, CSRFToken: randomSecret(24),
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(a.cfg.sessionMax),
	}
	if err := a.store.CreateSession(c.UserContext(), &sess); err != nil {
		return store.Session{}, err
	}
	c.Cookie(&fiber.Cookie{
		Name: sessionCookie, Value: secret, Path: "/", HTTPOnly: true, Secure: a.cfg.secureCookies,
		SameSite: fiber.CookieSameSiteStrictMode, Expires: sess.ExpiresAt,
	})
	return sess, nil
}

// clearCookie tells the browser to drop the session cookie.
func (a *auth) clearCookie(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{
		Name: sessionCookie, Value: "", Path: "/", HTTPOnly: true, Secure: a.cfg.secureCookies,
		SameSite: fiber.CookieSameSiteStrictMode, Expires: time.Unix(0, 0), MaxAge: -1,
	})
}

// addToken registers a new token in the store and the cache and returns its
// secret.
func (a *auth) addToken(ctx context.Context, t *store.APIToken) (string, error) {
	secret := "slc_" + randomSecret(32)
	t.TokenHash = hashSecret(secret)
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if err := a.store.CreateToken(ctx, t); err != nil {
		return "", err
	}
	a.mu.Lock()
	a.tokens[tokenDigest(sha256.Sum256([]byte(secret)))] = newCachedToken(*t)
	a.mu.Unlock()
	return secret, nil
}

// revokeToken deletes a token; the next request with it is refused.
func (a *auth) revokeToken(ctx context.Context, id int64) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if err := a.store.DeleteToken(ctx, id); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for hash, ct := range a.tokens {
		if ct.token.ID == id {
			delete(a.tokens, hash)
		}
	}
	return nil
}

// tokenDigest is the SHA-256 of a token's secret.
type tokenDigest [sha256.Size]byte

// digestOfHash reads a token hash as the store keeps it (hashSecret's hex).
func digestOfHash(hash string) (tokenDigest, bool) {
	var d tokenDigest
	if len(hash) != hex.EncodedLen(len(d)) {
		return d, false
	}
	_, err := hex.Decode(d[:], []byte(hash))
	return d, err == nil
}

// newCachedToken caches t with the principal its requests share.
func newCachedToken(t store.APIToken) *cachedToken {
	ct := &cachedToken{token: t}
	ct.principal = principal{token: &ct.token, role: t.Role, actor: store.TokenActor(t.Name)}
	return ct
}

// hashSecret is the SHA-256 of a high-entropy secret (a session or token):
// enough against a stolen database, and cheap on every request. Passwords,
// low in entropy, get bcrypt instead.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// randomSecret returns n random bytes, base64url-encoded.
func randomSecret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
