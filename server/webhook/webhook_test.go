package webhook

import (
	"encoding/base64"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestSignatureMatchesTheSpecVector signs Standard Webhooks' test vector
// as post signs a delivery, with the library's signer.
func TestSignatureMatchesTheSpecVector(t *testing.T) {
	signer, err := standardwebhooks.NewWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got, err := signer.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; err != nil || got != want {
		t.Fatalf("signature %q, %v; want %q", got, err, want)
	}
}

func TestNewSecret(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(raw) != 32 {
		t.Fatalf("secret %q: want whsec_ and the base64 of 32 bytes", secret)
	}
	if _, err := standardwebhooks.NewWebhook(secret); err != nil {
		t.Fatal(err)
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		ip      string
		refused bool
	}{
		{"169.254.169.254", true}, {"127.0.0.1", true}, {"10.0.0.1", true}, {"172.16.5.4", true},
		{"192.168.0.1", true}, {"100.64.0.1", true}, {"0.0.0.0", true}, {"224.0.0.1", true},
		{"255.255.255.255", true}, {"::1", true}, {"fe80::1", true}, {"fd00::1", true}, {"::", true},
		{"::ffff:127.0.0.1", true}, {"::ffff:169.254.169.254", true}, {"64:ff9b::a00:1", true}, {"ff02::1", true},
		{"203.0.113.10", false}, {"8.8.8.8", false}, {"2606:4700:4700::1111", false},
	} {
		if got := Refused(netip.MustParseAddr(tc.ip)) != ""; got != tc.refused {
			t.Errorf("Refused(%s) = %v, want %v", tc.ip, got, tc.refused)
		}
	}
}

// TestRefusedOwnAddresses: every address of this host's interfaces is
// refused, a public one too (a webhook to it reaches the server itself).
func TestRefusedOwnAddresses(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) == 0 {
		t.Fatal("the host has no interface address")
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		if why := Refused(p.Addr()); why == "" {
			t.Errorf("Refused(%s), an address of this host, = \"\"", p.Addr())
		}
	}
	if !ownAddress(mustOwn(t, addrs)) {
		t.Error("ownAddress does not know this host's addresses")
	}
}

// mustOwn returns one address of addrs.
func mustOwn(t *testing.T, addrs []net.Addr) netip.Addr {
	t.Helper()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			return p.Addr()
		}
	}
	t.Fatal("no parsable interface address")
	return netip.Addr{}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url, want    string
		allowPrivate bool
	}{
		{"https://203.0.113.10/hook", "", false},
		{"http://127.0.0.1:9000/", "", true},
		{"http://localhost/", "resolves to", false},
		{"http://169.254.169.254/", "link-local", false},
		{"http://[::1]/", "loopback", false},
		{"ftp://203.0.113.10/", "http or https", false},
		{"http://u:p@203.0.113.10/", "user or password", false},
		{"http://u@127.0.0.1/", "user or password", true},
		{"https://203.0.113.10/" + strings.Repeat("a", MaxURLLength), "at most", false},
	} {
		got := CheckURL(t.Context(), net.DefaultResolver, tc.url, tc.allowPrivate)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckURL(%.40s, %v) = %q, want %q", tc.url, tc.allowPrivate, got, tc.want)
		}
	}
}
