package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgtest"
)

// login posts a username and password to the server at addr and answers
// the status and, on success, the session cookie.
func login(t *testing.T, addr, username, password string) (int, *http.Cookie) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"username": username, "password": password}) // strings always encode
	resp, err := http.Post("http://"+addr+"/api/v1/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, c := range resp.Cookies() {
		return resp.StatusCode, c
	}
	return resp.StatusCode, nil
}

// sessionStatus answers the status of GET /me with the session cookie.
func sessionStatus(t *testing.T, addr string, cookie *http.Cookie) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/api/v1/me", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(cookie)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminResetPassword resets the admin's lost password on a real SQLite
// file while the server runs on it: the old sessions end, the old password
// no longer logs in and the new one does, given or generated; an unknown
// user is an error and changes nothing.
func TestAdminResetPassword(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sluice.db")
	r := startSluice(t, dir, []string{"--addr", "127.0.0.1:0", "--db", db, "--admin-password", "the-first-password"}, nil)
	defer r.stop(t)

	status, session := login(t, r.addr, "admin", "the-first-password")
	if status != http.StatusOK || session == nil {
		t.Fatalf("first login = %d, want 200 and a session", status)
	}

	// The username matches in any case; the output names the user.
	stdout, stderr, code := runProcess(t, "admin", "reset-password", "ADMIN", "--db", db, "--password", "a-new-password-42")
	if code != 0 || stderr != "" {
		t.Fatalf("reset-password: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	if !strings.Contains(stdout, "The password of admin is set.") || !strings.Contains(stdout, "Every session of admin has ended.") {
		t.Errorf("reset-password printed %q", stdout)
	}
	if got := sessionStatus(t, r.addr, session); got != http.StatusUnauthorized {
		t.Errorf("GET /me with the session from before = %d, want 401: the reset ends it", got)
	}
	if status, _ := login(t, r.addr, "admin", "the-first-password"); status != http.StatusUnauthorized {
		t.Errorf("login with the old password = %d, want 401", status)
	}
	if status, _ := login(t, r.addr, "admin", "a-new-password-42"); status != http.StatusOK {
		t.Fatalf("login with the new password = %d, want 200", status)
	}

	// Without --password: a random one, printed once.
	stdout, stderr, code = runProcess(t, "admin", "reset-password", "admin", "--db", db)
	if code != 0 || stderr != "" {
		t.Fatalf("reset-password without --password: exit %d, stderr %q", code, stderr)
	}
	m := regexp.MustCompile(`(?m)^New password for admin .*:\n(\S+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no generated password in %q", stdout)
	}
	if status, _ := login(t, r.addr, "admin", m[1]); status != http.StatusOK {
		t.Fatalf("login with the generated password = %d, want 200", status)
	}

	// Refusals: exit 1 with a clear message, nothing changed.
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"admin", "reset-password", "nobody", "--db", db, "--password", "whatever-123"}, `no user named "nobody" in ` + db},
		{[]string{"admin", "reset-password", "admin", "--db", db, "--password", "short"}, "--password must be 10 to 72 bytes long"},
		{[]string{"admin", "reset-password", "admin", "--db", filepath.Join(dir, "typo.db"), "--password", "whatever-123"}, "no database at"},
		{[]string{"admin", "reset-password", "--db", db}, "want the user's name"},
		{[]string{"admin", "frobnicate"}, `admin: unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		_, stderr, code := runProcess(t, tt.args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("sluice %s: exit %d, stderr %q; want 1 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	if status, _ := login(t, r.addr, "admin", m[1]); status != http.StatusOK {
		t.Errorf("login after the refusals = %d, want 200: a refusal changes nothing", status)
	}
}

// TestAdminResetPasswordOnPostgres resets a password in a PostgreSQL
// database named by its URL, as a deployment's --db is: the new password
// is the user's; before, the URL was taken for a missing file.
func TestAdminResetPasswordOnPostgres(t *testing.T) {
	pg := pgtest.StartForTest(t)
	url := pg.NewDatabase(t)
	st, err := store.Open(t.Context(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateUser(t.Context(), &store.User{Username: "admin", Role: "admin", PasswordHash: "not a hash"}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runProcess(t, "admin", "reset-password", "admin", "--db", url, "--password", "a-new-password-42"); code != 0 || stderr != "" {
		t.Fatalf("reset-password: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	u, err := st.UserByName(t.Context(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte("a-new-password-42")) != nil {
		t.Error("the new password is not the user's")
	}
}
