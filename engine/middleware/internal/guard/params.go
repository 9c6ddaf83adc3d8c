package guard

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/engine"
)

// IPKey is the param key of the client IP extractor.
const IPKey = "ip"

// HeaderKey is the param key of a header's extractor: "header:X-User".
func HeaderKey(name string) string { return "header:" + name }

// QueryKey is the param key of a query parameter's extractor: "query:key".
func QueryKey(name string) string { return "query:" + name }

// PathKey is the param key of a path parameter's extractor: "path:id".
func PathKey(name string) string { return "path:" + name }

// MaxStackOptions is how many entry options a request's call keeps on the
// stack: inbound, an origin, the params and one spare; more still work, on
// the heap.
const MaxStackOptions = 9

// Proxies are the trusted proxies, whose X-Forwarded-For the client IP
// extractor believes.
type Proxies []netip.Prefix

// trusts reports whether a is one of the proxies.
func (p Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, prefix := range p {
		if prefix.Contains(a) {
			return true
		}
	}
	return false
}

// Forwarded returns the client IP that X-Forwarded-For tells, given the
// header's lines in order, when the peer that sent the request is a
// trusted proxy: the rightmost address that is not a trusted proxy, since
// every proxy appends the address it was called from and a client may
// write anything on the left. Past an entry that is not an IP address, it
// returns the last trusted proxy before it. False means the peer's own
// address is the client's: it is not a trusted proxy, or the header names
// nobody.
func (p Proxies) Forwarded(peer netip.Addr, lines []string) (string, bool) {
	if len(p) == 0 || !p.trusts(peer) {
		return "", false
	}
	client, found := "", false
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for rest != "" {
			hop := rest
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				hop, rest = rest[j+1:], rest[:j]
			} else {
				rest = ""
			}
			hop = strings.TrimSpace(hop)
			if hop == "" {
				continue
			}
			a, err := netip.ParseAddr(hop)
			if err != nil {
				return client, found
			}
			client, found = hop, true
			if !p.trusts(a) {
				return client, true
			}
		}
	}
	return client, found
}

// QueryValue returns the first value of key in a raw query string, ""
// if it has none or a value that does not decode. It allocates only to
// decode an escaped key or value.
func QueryValue(rawQuery, key string) string {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, _ := strings.Cut(pair, "=")
		if !sameQueryKey(k, key) {
			continue
		}
		if !strings.ContainsAny(v, "%+") {
			return v
		}
		decoded, err := url.QueryUnescape(v)
		if err != nil {
			return ""
		}
		return decoded
	}
	return ""
}

func sameQueryKey(raw, key string) bool {
	if !strings.ContainsAny(raw, "%+") {
		return raw == key
	}
	decoded, err := url.QueryUnescape(raw)
	return err == nil && decoded == key
}

// PathValue returns the value of the wildcard {name} (or {name...}) of a
// ServeMux pattern in escapedPath, a path the pattern matched; "" if the
// pattern has no such wildcard. It is r.PathValue for a guard in front of
// a ServeMux, which has not matched the request yet.
func PathValue(pattern, escapedPath, name string) string {
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		pattern = pattern[i:] // past the method and host
	}
	for pattern != "" && escapedPath != "" {
		var want, seg string
		want, pattern = nextSegment(pattern)
		seg, escapedPath = nextSegment(escapedPath)
		wildcard, ok := strings.CutPrefix(want, "{")
		if !ok {
			continue
		}
		wildcard, _ = strings.CutSuffix(wildcard, "}")
		switch {
		case wildcard == name:
			return unescapePath(seg)
		case strings.TrimSuffix(wildcard, "...") == name:
			if escapedPath == "" {
				return unescapePath(seg)
			}
			return unescapePath(seg + escapedPath)
		}
	}
	return ""
}

// nextSegment splits "/a/b" into "a" and "/b".
func nextSegment(p string) (seg, rest string) {
	p = strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}

func unescapePath(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	u, err := url.PathUnescape(s)
	if err != nil {
		return ""
	}
	return u
}

// AppendParam appends the option of a param unless its value is "": a
// missing value leaves the call unlimited by the key's rules rather than
// lumping every such call under one empty value.
func AppendParam(opts []engine.EntryOption, key, value string) []engine.EntryOption {
	if value == "" {
		return opts
	}
	return append(opts, engine.WithParam(key, value))
}

// AppendOrigin appends the option of an origin unless it is "".
func AppendOrigin(opts []engine.EntryOption, origin string) []engine.EntryOption {
	if origin == "" {
		return opts
	}
	return append(opts, engine.WithOrigin(origin))
}
