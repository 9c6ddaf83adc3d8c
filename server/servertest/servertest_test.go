package servertest_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }

// httpServer is a net/http server as Start runs one: Serve returns nil
// after Shutdown, as Sluice's does.
type httpServer struct {
	*http.Server
	certFile, keyFile string // serve HTTPS when set
}

func (s httpServer) Serve(ln net.Listener) error {
	var err error
	if s.certFile != "" {
		err = s.Server.ServeTLS(ln, s.certFile, s.keyFile)
	} else {
		err = s.Server.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// whoAmI answers the Authorization header it was sent.
var whoAmI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, r.Header.Get("Authorization"))
})

// plain builds a server that answers with whoAmI over HTTP.
func plain(servertest.Env) (servertest.Server, error) {
	return httpServer{Server: &http.Server{Handler: whoAmI}}, nil
}

func TestDoSendsTheAdminToken(t *testing.T) {
	n := servertest.Start(t, plain)
	resp, body := n.Do(t, http.MethodGet, "/", nil)
	if want := "Bearer " + servertest.AdminToken; resp.StatusCode != http.StatusOK || string(body) != want {
		t.Errorf("Do: %d %q, want 200 %q", resp.StatusCode, body, want)
	}
	resp, body = n.DoRaw(t, "GET / HTTP/1.1\r\nHost: servertest\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("DoRaw: %d %q, want 200 and no credentials", resp.StatusCode, body)
	}
}

// TestRestartOnTheSameAddressAndDatabase: a test that stops a server can
// start the next one where clients expect it, on the same database.
func TestRestartOnTheSameAddressAndDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	first := servertest.Start(t, plain, servertest.DBPath(path))
	if err := first.Store.AddMetrics(t.Context(), []store.MinuteDelta{{Resource: "kept", StartMs: store.MinuteMs}}); err != nil {
		t.Fatal(err)
	}
	first.Stop(t)

	second := servertest.Start(t, plain, servertest.DBPath(path), servertest.Addr(first.Addr))
	if second.URL != first.URL {
		t.Fatalf("second URL %s, want %s", second.URL, first.URL)
	}
	if resp, _ := second.Do(t, http.MethodGet, "/", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("after the restart: %d", resp.StatusCode)
	}
	if kept, err := second.Store.MetricResources(t.Context()); err != nil || len(kept) != 1 || kept[0].Name != "kept" {
		t.Errorf("the second server's database holds %+v (%v), want the first's resource kept", kept, err)
	}
}

func TestTLS(t *testing.T) {
	n := servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		return httpServer{Server: &http.Server{Handler: whoAmI}, certFile: env.CertFile, keyFile: env.KeyFile}, nil
	}, servertest.TLS())
	if resp, _ := n.Do(t, http.MethodGet, "/", nil); resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Errorf("Do over HTTPS: %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
	if resp, _ := n.DoRaw(t, "GET / HTTP/1.1\r\nHost: servertest\r\nConnection: close\r\n\r\n"); resp.StatusCode != http.StatusOK {
		t.Errorf("DoRaw over TLS: %d", resp.StatusCode)
	}
}

// TestNewDatabasesAreCopiesOfOneMigrated: a server on a new database finds
// the migrations applied instead of applying them itself, which costs a
// few hundred milliseconds per server under the race detector, and two
// new databases are still apart.
func TestNewDatabasesAreCopiesOfOneMigrated(t *testing.T) {
	a := servertest.Start(t, plain)
	b := servertest.Start(t, plain)
	for name, n := range map[string]*servertest.Node{"a": a, "b": b} {
		if logs := n.Logs(); strings.Contains(logs, "migration applied") {
			t.Errorf("server %s applied migrations on its new database:\n%s", name, logs)
		}
	}
	if err := a.Store.AddMetrics(t.Context(), []store.MinuteDelta{{Resource: "only-a", StartMs: store.MinuteMs}}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Store.MetricResources(t.Context()); err != nil || len(got) != 0 {
		t.Errorf("b's database holds %+v (%v), want none of a's resources", got, err)
	}
}
