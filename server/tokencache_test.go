package server

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// TestTokenCacheKeepsTokensAddedDuringAReload: a reload of the token cache
// (a replica following another's change) that read the store before a
// token was added must not put back a cache without it: the new token
// would be refused as unknown until the next change anywhere.
func TestTokenCacheKeepsTokensAddedDuringAReload(t *testing.T) {
	t.Parallel()
	st := servertest.OpenStore(t, filepath.Join(t.TempDir(), "sluice.db"))
	a := newAuth(st, slog.New(slog.DiscardHandler), authConfig{now: time.Now})
	for i := range 100 {
		var wg sync.WaitGroup
		var secret string
		var addErr error
		wg.Go(func() { _ = a.reloadTokens(t.Context()) })
		wg.Go(func() {
			secret, addErr = a.addToken(t.Context(), &store.APIToken{Name: fmt.Sprintf("token-%d", i), Role: roleViewer, CreatedBy: "test"})
		})
		wg.Wait()
		if addErr != nil {
			t.Fatal(addErr)
		}
		if _, err := a.tokenPrincipal(t.Context(), secret); err != nil {
			t.Fatalf("round %d: the token just added is refused: %v", i, err)
		}
	}
}
