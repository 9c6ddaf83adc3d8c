package server

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/server/servertest"
)

// tlsServer serves HTTPS on the listener servertest gives it, with the
// certificate servertest made, as the binary serves TLS (ServeTLS) on the
// listener it opens.
type tlsServer struct {
	*Server
	certFile, keyFile string
}

func (s tlsServer) Serve(ln net.Listener) error { return s.ServeTLS(ln, s.certFile, s.keyFile) }

// TestTLS serves HTTPS: the session cookie is Secure and the security
// headers are set.
func TestTLS(t *testing.T) {
	t.Parallel()
	n := servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		srv, err := New(t.Context(), Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			TLS: true, AdminPassword: adminPassword, PasswordCost: bcrypt.MinCost,
		})
		if err != nil {
			return nil, err
		}
		return tlsServer{Server: srv, certFile: env.CertFile, keyFile: env.KeyFile}, nil
	}, servertest.TLS())
	resp, _ := n.DoWith(t, http.MethodPost, "/api/v1/auth/login",
		strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`), http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login over HTTPS: %d", resp.StatusCode)
	}
	if cookie := strings.ToLower(resp.Header.Get("Set-Cookie")); !strings.Contains(cookie, "secure") {
		t.Fatalf("Set-Cookie %q is not Secure over HTTPS", cookie)
	}
	for _, h := range []string{"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "Strict-Transport-Security"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("header %s missing", h)
		}
	}
}
