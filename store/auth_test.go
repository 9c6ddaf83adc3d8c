package store

import (
	"sync"
	"testing"
	"time"
)

// TestPutTokenIsIdempotent: putting a token of the same name, secret and
// role again keeps the stored row (its ID, CreatedAt and LastUsedAt), as
// the bootstrap token at every start; another secret or role replaces it,
// and the old secret is gone.
func TestPutTokenIsIdempotent(t *testing.T) {
	s, _ := openTestStore(t)
	ctx := t.Context()
	created := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	used := created.Add(time.Hour)
	first := APIToken{Name: "bootstrap", Role: "admin", TokenHash: "hash-1", CreatedBy: "--bootstrap-token", CreatedAt: created}
	if err := s.PutToken(ctx, &first); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchTokens(ctx, map[int64]time.Time{first.ID: used}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, role, hash string
		keep             bool
	}{
		{name: "the same secret and role", role: "admin", hash: "hash-1", keep: true},
		{name: "another secret", role: "admin", hash: "hash-2"},
		{name: "another role", role: "viewer", hash: "hash-2"},
	}
	want := first
	want.LastUsedAt = &used
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			again := APIToken{Name: "bootstrap", Role: tt.role, TokenHash: tt.hash, CreatedBy: "--bootstrap-token", CreatedAt: created.Add(24 * time.Hour)}
			if err := s.PutToken(ctx, &again); err != nil {
				t.Fatal(err)
			}
			all, err := s.AllTokens(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 1 {
				t.Fatalf("%d tokens stored, want 1: %+v", len(all), all)
			}
			got := all[0]
			if got.ID != again.ID {
				t.Errorf("PutToken set ID %d, the stored row has %d", again.ID, got.ID)
			}
			if got.TokenHash != tt.hash || got.Role != tt.role {
				t.Errorf("stored %s %s, want %s %s", got.TokenHash, got.Role, tt.hash, tt.role)
			}
			kept := got.ID == want.ID && got.CreatedAt.Equal(want.CreatedAt) &&
				got.LastUsedAt != nil && got.LastUsedAt.Equal(*want.LastUsedAt)
			if kept != tt.keep {
				t.Errorf("stored %+v after %+v: kept = %v, want %v", got, want, kept, tt.keep)
			}
			if !tt.keep && (got.LastUsedAt != nil || !got.CreatedAt.Equal(again.CreatedAt)) {
				t.Errorf("a replaced token took the old one's times: %+v", got)
			}
			want = got
		})
	}
}

// TestPutTokenConcurrently: replicas that start together register the
// same token at once; every one succeeds, and one row is stored.
func TestPutTokenConcurrently(t *testing.T) {
	s, _ := openTestStore(t)
	const replicas = 8
	errs := make(chan error, replicas)
	var wg sync.WaitGroup
	for range replicas {
		wg.Go(func() {
			errs <- s.PutToken(t.Context(), &APIToken{Name: "bootstrap", Role: "admin", TokenHash: "hash-1", CreatedBy: "--bootstrap-token", CreatedAt: time.Now()})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("PutToken: %v", err)
		}
	}
	all, err := s.AllTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Errorf("%d tokens stored, want 1: %+v", len(all), all)
	}
}
