package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// writeSelfSigned writes a certificate for 127.0.0.1 and its key as PEM
// files and returns their paths.
func writeSelfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// TestTLS serves HTTPS: the session cookie is Secure and the security
// headers are set.
func TestTLS(t *testing.T) {
	certFile, keyFile := writeSelfSigned(t)
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng := engine.New(engine.Options{})
	defer eng.Close()
	srv, err := New(t.Context(), Config{Engine: eng, Store: st, TLS: true, AdminPassword: adminPassword, PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	served := make(chan error, 1)
	go func() { served <- srv.ListenTLS(addr, certFile, keyFile) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		<-served
	}()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var resp *http.Response
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err = c.Post("https://"+addr+"/api/v1/auth/login", "application/json",
			strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
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
