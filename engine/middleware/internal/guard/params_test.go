package guard

import (
	"net/netip"
	"testing"
)

func TestForwarded(t *testing.T) {
	proxies := Proxies{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
	tests := []struct {
		name    string
		proxies Proxies
		peer    string
		lines   []string
		want    string
		wantOK  bool
	}{
		{"no proxies configured", nil, "10.0.0.1", []string{"198.51.100.1"}, "", false},
		{"peer not a proxy", proxies, "192.0.2.1", []string{"198.51.100.1"}, "", false},
		{"no header", proxies, "10.0.0.1", nil, "", false},
		{"one hop", proxies, "10.0.0.1", []string{"198.51.100.1"}, "198.51.100.1", true},
		{"the client's own entries on the left are ignored", proxies, "10.0.0.1", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1", true},
		{"trusted hops are skipped", proxies, "10.0.0.1", []string{"198.51.100.1, 10.0.0.2 ,10.0.0.3"}, "198.51.100.1", true},
		{"lines are read last to first", proxies, "10.0.0.1", []string{"1.2.3.4", "198.51.100.1, 10.0.0.2"}, "198.51.100.1", true},
		{"only proxies: the leftmost", proxies, "10.0.0.1", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3", true},
		{"garbage stops at the last proxy", proxies, "10.0.0.1", []string{"198.51.100.1, unknown, 10.0.0.2"}, "10.0.0.2", true},
		{"garbage right away names nobody", proxies, "10.0.0.1", []string{"198.51.100.1, unknown"}, "", false},
		{"IPv6 and mapped IPv4 peers", proxies, "::ffff:10.0.0.1", []string{"2001:db8::1, 2001:db9::7"}, "2001:db9::7", true},
		{"empty entries are skipped", proxies, "10.0.0.1", []string{"198.51.100.1,, "}, "198.51.100.1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := func(i int) (string, bool) {
				if i < len(tt.lines) {
					return tt.lines[i], true
				}
				return "", false
			}
			got, ok := tt.proxies.Forwarded(netip.MustParseAddr(tt.peer), line)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Forwarded(%s, %q) = %q, %v; want %q, %v", tt.peer, tt.lines, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestQueryValue(t *testing.T) {
	tests := []struct {
		query, key, want string
	}{
		{"key=k1", "key", "k1"},
		{"a=1&key=k1&key=k2", "key", "k1"},
		{"keys=1&key=k1", "key", "k1"},
		{"key", "key", ""},
		{"key=", "key", ""},
		{"other=1", "key", ""},
		{"", "key", ""},
		{"key=a+b%21", "key", "a b!"},
		{"k%65y=v", "key", "v"},
		{"key=%zz&key=ok", "key", ""},
	}
	for _, tt := range tests {
		if got := QueryValue(tt.query, tt.key); got != tt.want {
			t.Errorf("QueryValue(%q, %q) = %q, want %q", tt.query, tt.key, got, tt.want)
		}
	}
}

func TestPathValue(t *testing.T) {
	tests := []struct {
		pattern, path, name, want string
	}{
		{"GET /orders/{id}", "/orders/42", "id", "42"},
		{"/orders/{id}", "/orders/42", "id", "42"},
		{"example.com/orders/{id}/items/{item}", "/orders/42/items/7", "item", "7"},
		{"GET /orders/{id}", "/orders/a%2Fb", "id", "a/b"},
		{"GET /files/{path...}", "/files/a/b%20c", "path", "a/b c"},
		{"GET /files/{path...}", "/files/", "path", ""},
		{"GET /orders/{id}", "/orders/42", "other", ""},
		{"GET /orders/{id}", "/orders/%zz", "id", ""},
		{"", "/orders/42", "id", ""},
	}
	for _, tt := range tests {
		if got := PathValue(tt.pattern, tt.path, tt.name); got != tt.want {
			t.Errorf("PathValue(%q, %q, %q) = %q, want %q", tt.pattern, tt.path, tt.name, got, tt.want)
		}
	}
}
