package server

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// TestTokenLookupAllocatesNothing: a request's bearer token is looked up
// by the raw SHA-256 of its secret and answered the principal cached with
// it, so that authenticating a request makes no string (the hash's hex)
// and no copy of the token; yet revoking the token refuses the very next
// lookup, and a reload keeps the shared principal's name.
func TestTokenLookupAllocatesNothing(t *testing.T) {
	st := servertest.OpenStore(t, filepath.Join(t.TempDir(), "sluice.db"))
	a := newAuth(st, slog.New(slog.DiscardHandler), authConfig{now: time.Now})
	tok := store.APIToken{Name: "ci", Role: roleEditor, CreatedBy: "test"}
	secret, err := a.addToken(t.Context(), &tok)
	if err != nil {
		t.Fatal(err)
	}
	// The first use records the token's last use; the next minute's do not.
	if _, err := a.tokenPrincipal(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	var p *principal
	allocs := testing.AllocsPerRun(100, func() { p, err = a.tokenPrincipal(t.Context(), secret) })
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("a token lookup allocates %v times, want 0", allocs)
	}
	if p.role != roleEditor || p.actorName() != "token:ci" || p.token.ID != tok.ID {
		t.Errorf("principal = role %q, actor %q, token %d; want editor, token:ci, %d", p.role, p.actorName(), p.token.ID, tok.ID)
	}

	if err := a.reloadTokens(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p, err := a.tokenPrincipal(t.Context(), secret); err != nil || p.actorName() != "token:ci" {
		t.Fatalf("after a reload: %v, %v", p, err)
	}
	if err := a.revokeToken(t.Context(), tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.tokenPrincipal(t.Context(), secret); err == nil {
		t.Fatal("the revoked token is still accepted")
	}
}
