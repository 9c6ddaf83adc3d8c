-- +goose Up
CREATE TABLE users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,      -- ids are never reused
  username TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL,                        -- admin | editor | viewer
  password_hash TEXT NOT NULL,               -- bcrypt
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
-- Console sessions. The cookie holds a random secret; only its SHA-256 is
-- kept, so a copy of the database does not log anyone in.
CREATE TABLE sessions (
  id_hash TEXT PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  csrf_token TEXT NOT NULL,
  created_at DATETIME NOT NULL,
  last_seen_at DATETIME NOT NULL,
  expires_at DATETIME NOT NULL               -- absolute expiry
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expires ON sessions(expires_at);
-- API tokens for CI. The secret is shown once; only its SHA-256 is kept.
CREATE TABLE api_tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  expires_at DATETIME,                       -- NULL: never
  last_used_at DATETIME,
  created_by TEXT NOT NULL,
  created_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE sessions;
DROP TABLE users;
