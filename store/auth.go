package store

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// User is a person who logs in to the console.
type User struct {
	ID           int64 `gorm:"primaryKey"`
	Username     string
	Role         string
	PasswordHash string
	Apps         Apps
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// TableName is the users table.
func (User) TableName() string { return "users" }

// Session is a console login. IDHash is the SHA-256 of the cookie's secret.
type Session struct {
	IDHash     string `gorm:"primaryKey"`
	UserID     int64
	CSRFToken  string `gorm:"column:csrf_token"`
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// TableName is the sessions table.
func (Session) TableName() string { return "sessions" }

// APIToken is a bearer token for CI and services. TokenHash is the SHA-256
// of the secret, which is shown once and not kept.
type APIToken struct {
	ID         int64 `gorm:"primaryKey"`
	Name       string
	Role       string
	TokenHash  string
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	CreatedBy  string
	Apps       Apps
	CreatedAt  time.Time
}

// TableName is the API tokens table.
func (APIToken) TableName() string { return "api_tokens" }

// Apps is a per-app scope (docs/api.md, "Per-app scopes"): the apps whose
// rules a user or token may write or read as an instance. Empty is no
// scope. It is kept as a JSON array, and as ” when empty, so the rows
// from before scopes existed read as unscoped.
type Apps []string

// Value encodes a for the apps column.
func (a Apps) Value() (driver.Value, error) {
	if len(a) == 0 {
		return "", nil
	}
	b, err := json.Marshal([]string(a))
	return string(b), err
}

// Scan decodes the apps column.
func (a *Apps) Scan(src any) error {
	var text string
	switch v := src.(type) {
	case nil:
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		return fmt.Errorf("apps: cannot scan %T", src)
	}
	*a = nil
	if text == "" {
		return nil
	}
	return json.Unmarshal([]byte(text), (*[]string)(a))
}

// CountUsers returns how many users exist.
func (s *Store) CountUsers(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&User{}).Count(&n).Error
	return n, err
}

// CreateUser inserts u and sets its ID and times; ErrConflict if the
// username is taken, in any case.
func (s *Store) CreateUser(ctx context.Context, u *User) error {
	u.ID = 0
	return translate(s.db.WithContext(ctx).Create(u).Error)
}

// GetUser returns the user with id, or ErrNotFound.
func (s *Store) GetUser(ctx context.Context, id int64) (User, error) {
	var u User
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&u).Error
	return u, translate(err)
}

// UserByName returns the user called username in any case (ed is ED),
// or ErrNotFound.
func (s *Store) UserByName(ctx context.Context, username string) (User, error) {
	var u User
	err := s.db.WithContext(ctx).Where("lower(username) = lower(?)", username).Take(&u).Error
	return u, translate(err)
}

// ListUsers returns one page of users, by ID, and how many there are.
func (s *Store) ListUsers(ctx context.Context, page Page) ([]User, int64, error) {
	q := s.db.WithContext(ctx).Model(&User{})
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	users := []User{}
	err := page.apply(q.Order("id")).Find(&users).Error
	return users, total, err
}

// UpdateUser changes a user's role, their scope when apps is not nil (an
// empty Apps clears it) and, when passwordHash is not empty, password; a new password ends every session of the user, and an admin
// demoted loses the admin tokens they created (revokeAdminTokensOf). In
// one transaction; ErrNotFound if the user is gone, ErrConflict if the
// change would leave no admin.
func (s *Store) UpdateUser(ctx context.Context, id int64, role, passwordHash string, apps *Apps) (User, error) {
	var u User
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("id = ?", id).Take(&u).Error; err != nil {
			return translate(err)
		}
		if u.Role == roleAdmin && role != roleAdmin {
			if err := keepAnAdmin(tx, id); err != nil {
				return err
			}
		}
		if u.Role == roleAdmin && role != roleAdmin {
			if err := revokeAdminTokensOf(tx, u.Username); err != nil {
				return err
			}
		}
		u.Role = role
		updates := map[string]any{"role": role, "updated_at": tx.NowFunc()}
		if apps != nil {
			updates["apps"] = *apps
		}
		if passwordHash != "" {
			u.PasswordHash = passwordHash
			updates["password_hash"] = passwordHash
			if err := tx.Where("user_id = ?", id).Delete(&Session{}).Error; err != nil {
				return err
			}
		}
		return tx.Model(&User{}).Where("id = ?", id).Updates(updates).Error
	})
	if err != nil {
		return User{}, err
	}
	return s.GetUser(ctx, id)
}

// DeleteUser removes a user and their sessions, and an admin's admin
// tokens (revokeAdminTokensOf); ErrNotFound if there is no such user,
// ErrConflict if they are the last admin.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var u User
		if err := tx.Where("id = ?", id).Take(&u).Error; err != nil {
			return translate(err)
		}
		if u.Role == roleAdmin {
			if err := keepAnAdmin(tx, id); err != nil {
				return err
			}
			if err := revokeAdminTokensOf(tx, u.Username); err != nil {
				return err
			}
		}
		if err := tx.Where("user_id = ?", id).Delete(&Session{}).Error; err != nil {
			return err
		}
		return tx.Where("id = ?", id).Delete(&User{}).Error
	})
}

// roleAdmin is the role keepAnAdmin protects; the server owns the roles.
const roleAdmin = "admin"

// TokenActor is how a change made with the token named name is
// attributed (APIToken.CreatedBy, revisions' actors); a user's changes are
// attributed to their username, which has no colon.
func TokenActor(name string) string { return "token:" + name }

// revokeAdminTokensOf deletes, within tx, the admin tokens that the user
// named username created, then those that these created, and so on: a
// token created with an admin's role ends with that admin's role, so that
// someone demoted or deleted keeps no admin access through it. The other
// replicas are told (ChangedTokens) if any went.
func revokeAdminTokensOf(tx *gorm.DB, username string) error {
	creators := []string{username}
	revoked := false
	for len(creators) > 0 {
		var names []string
		if err := tx.Model(&APIToken{}).Where("role = ? AND created_by IN ?", roleAdmin, creators).Pluck("name", &names).Error; err != nil {
			return err
		}
		if len(names) == 0 {
			break
		}
		if err := tx.Where("role = ? AND name IN ?", roleAdmin, names).Delete(&APIToken{}).Error; err != nil {
			return err
		}
		revoked = true
		creators = creators[:0]
		for _, name := range names {
			creators = append(creators, TokenActor(name))
		}
	}
	if !revoked {
		return nil
	}
	return announce(tx, ChangedTokens)
}

// ErrLastAdmin is a change that would leave no admin; it is an ErrConflict.
var ErrLastAdmin = errors.Join(ErrConflict, errors.New("the last admin cannot be removed or demoted"))

func keepAnAdmin(tx *gorm.DB, exceptID int64) error {
	var admins int64
	if err := tx.Model(&User{}).Where("role = ? AND id <> ?", roleAdmin, exceptID).Count(&admins).Error; err != nil {
		return err
	}
	if admins == 0 {
		return ErrLastAdmin
	}
	return nil
}

// CreateSession stores a new session.
func (s *Store) CreateSession(ctx context.Context, sess *Session) error {
	return s.db.WithContext(ctx).Create(sess).Error
}

// GetSession returns the session whose secret hashes to idHash, with its
// user, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, idHash string) (Session, User, error) {
	var sess Session
	db := s.db.WithContext(ctx)
	if err := db.Where("id_hash = ?", idHash).Take(&sess).Error; err != nil {
		return Session{}, User{}, translate(err)
	}
	var u User
	if err := db.Where("id = ?", sess.UserID).Take(&u).Error; err != nil {
		return Session{}, User{}, translate(err)
	}
	return sess, u, nil
}

// TouchSession records that a session was used at seen.
func (s *Store) TouchSession(ctx context.Context, idHash string, seen time.Time) error {
	return s.db.WithContext(ctx).Model(&Session{}).Where("id_hash = ?", idHash).Update("last_seen_at", seen).Error
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, idHash string) error {
	return s.db.WithContext(ctx).Where("id_hash = ?", idHash).Delete(&Session{}).Error
}

// DeleteSessionsBefore removes the sessions that expired, absolutely at
// expiredBefore or for idling since idleBefore.
func (s *Store) DeleteSessionsBefore(ctx context.Context, expiredBefore, idleBefore time.Time) error {
	return s.db.WithContext(ctx).Where("expires_at <= ? OR last_seen_at <= ?", expiredBefore, idleBefore).Delete(&Session{}).Error
}

// CreateToken inserts t and sets its ID; ErrConflict if its name is taken.
// The other replicas are told (ChangedTokens).
func (s *Store) CreateToken(ctx context.Context, t *APIToken) error {
	t.ID = 0
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := translate(tx.Create(t).Error); err != nil {
			return err
		}
		return announce(tx, ChangedTokens)
	})
}

// PutToken registers t under its name, idempotently: the bootstrap token
// is registered again at every start. When a token of that name already
// has t's secret and role, that row is kept as it is (its ID, CreatedAt
// and LastUsedAt) and t becomes a copy of it; otherwise the token of that
// name, if any, is replaced by t, and the other replicas are told
// (ChangedTokens). Replicas that start together on one database may race
// to insert the same token: the one that loses finds the winner's row when
// it tries again.
func (s *Store) PutToken(ctx context.Context, t *APIToken) error {
	err := s.putToken(ctx, t)
	if errors.Is(err, ErrConflict) {
		err = s.putToken(ctx, t)
	}
	return err
}

func (s *Store) putToken(ctx context.Context, t *APIToken) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var existing APIToken
		err := tx.Where("name = ?", t.Name).Take(&existing).Error
		switch {
		case err == nil && existing.TokenHash == t.TokenHash && existing.Role == t.Role:
			*t = existing
			return nil
		case err != nil && !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		}
		if err := tx.Where("name = ?", t.Name).Delete(&APIToken{}).Error; err != nil {
			return err
		}
		t.ID = 0
		if err := translate(tx.Create(t).Error); err != nil {
			return err
		}
		return announce(tx, ChangedTokens)
	})
}

// AllTokens returns every token, by ID.
func (s *Store) AllTokens(ctx context.Context) ([]APIToken, error) {
	tokens := []APIToken{}
	err := s.db.WithContext(ctx).Order("id").Find(&tokens).Error
	return tokens, err
}

// DeleteToken revokes the token with id; ErrNotFound if there is none.
// The other replicas are told (ChangedTokens).
func (s *Store) DeleteToken(ctx context.Context, id int64) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Where("id = ?", id).Delete(&APIToken{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return announce(tx, ChangedTokens)
	})
}

// TouchTokens records when tokens were last used, by ID.
func (s *Store) TouchTokens(ctx context.Context, used map[int64]time.Time) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for id, at := range used {
			if err := tx.Model(&APIToken{}).Where("id = ?", id).Update("last_used_at", at).Error; err != nil {
				return err
			}
		}
		return nil
	})
}
