package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoginLimiterCountsLoginsInFlight: logins whose password is still
// being checked count against the limit, so no more than the limit are
// ever let through at once; how they settle decides what follows.
func TestLoginLimiterCountsLoginsInFlight(t *testing.T) {
	t.Parallel()
	const nowMs = 1_000_000_000
	tests := []struct {
		name   string
		settle func(l *loginLimiter, client string)
		// blocked: after the settling, the next login waits the window.
		blocked bool
	}{
		{"failed", func(l *loginLimiter, client string) { l.fail(nowMs, "admin", client) }, true},
		{"succeeded", func(l *loginLimiter, client string) { l.succeed("admin", client) }, false},
		{"abandoned", func(l *loginLimiter, client string) { l.abandon("admin", client) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLoginLimiter()
			var through []string
			for i := range 2 * maxFailuresPerUser {
				client := fmt.Sprintf("10.0.0.%d", i)
				switch wait := l.begin(nowMs, "admin", client); wait {
				case 0:
					through = append(through, client)
				case pendingWaitMs:
				default:
					t.Fatalf("login %d waits %d ms, want 0 or %d while the others are checked", i, wait, pendingWaitMs)
				}
			}
			if len(through) != maxFailuresPerUser {
				t.Fatalf("%d logins let through at once, want %d", len(through), maxFailuresPerUser)
			}
			for _, client := range through {
				tt.settle(l, client)
			}
			if len(l.pending) != 0 {
				t.Errorf("pending after every login settled: %v", l.pending)
			}
			wait := l.begin(nowMs, "admin", "10.0.1.1")
			if blocked := wait > pendingWaitMs; blocked != tt.blocked {
				t.Errorf("the next login waits %d ms; blocked = %v, want %v", wait, blocked, tt.blocked)
			}
		})
	}
}

// TestConcurrentGuessesAreThrottled: a burst of wrong passwords for one
// user, sent at once, has no more than maxFailuresPerUser checked; the
// rest are 429 with Retry-After, and so is the right password after it.
func TestConcurrentGuessesAreThrottled(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	const guesses = 4 * maxFailuresPerUser
	statuses := make(chan *http.Response, guesses)
	errs := make(chan error, guesses)
	var wg sync.WaitGroup
	for i := range guesses {
		wg.Go(func() {
			resp, err := http.Post(n.URL+"/api/v1/auth/login", "application/json",
				strings.NewReader(fmt.Sprintf(`{"username":"admin","password":"wrong-password-%d"}`, i)))
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			statuses <- resp
		})
	}
	wg.Wait()
	close(statuses)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checked := 0
	for resp := range statuses {
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			checked++
		case resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "":
			t.Errorf("a guess: %d (Retry-After %q), want 401, or 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if checked != maxFailuresPerUser {
		t.Errorf("%d of %d concurrent guesses checked, want %d", checked, guesses, maxFailuresPerUser)
	}
	right := `{"username":"admin","password":"` + adminPassword + `"}`
	if status, body := n.as(t, nil, http.MethodPost, "/api/v1/auth/login", right); status != http.StatusTooManyRequests {
		t.Errorf("the right password after the burst: %d %s, want 429", status, body)
	}
}

// TestPasswordChangeIsThrottled: a wrong current password in PATCH
// /me/password counts as a failed login, so a stolen session cannot guess
// the password without limit: after maxFailuresPerUser wrong ones, the
// right one is 429 there and at login, until the window has passed.
func TestPasswordChangeIsThrottled(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	_, name := n.newUser(t, roleViewer)
	cookie, csrf := n.login(t, name, walkPassword)
	session := withCookie(cookie, csrf)
	change := func(current string) string {
		return fmt.Sprintf(`{"currentPassword":%q,"newPassword":"a-new-password-0123"}`, current)
	}
	for i := range maxFailuresPerUser {
		if status, body := n.as(t, session, http.MethodPatch, "/api/v1/me/password", change(fmt.Sprintf("guess-%d-guess", i))); status != http.StatusUnprocessableEntity {
			t.Fatalf("wrong guess %d: %d %s, want 422", i+1, status, body)
		}
	}
	resp, body := n.DoWith(t, http.MethodPatch, "/api/v1/me/password", strings.NewReader(change(walkPassword)), session)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the right password after %d wrong ones: %d %s (Retry-After %q), want 429 with Retry-After",
			maxFailuresPerUser, resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	login := fmt.Sprintf(`{"username":%q,"password":%q}`, name, walkPassword)
	if status, body := n.as(t, nil, http.MethodPost, "/api/v1/auth/login", login); status != http.StatusTooManyRequests {
		t.Fatalf("logging in after the wrong guesses: %d %s, want 429", status, body)
	}
	n.clock.Advance(loginWindowMs * time.Millisecond)
	if status, body := n.as(t, session, http.MethodPatch, "/api/v1/me/password", change(walkPassword)); status != http.StatusNoContent {
		t.Fatalf("the right password once the window passed: %d %s, want 204", status, body)
	}
}
