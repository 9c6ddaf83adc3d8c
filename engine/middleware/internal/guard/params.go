package guard

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/engine"
)

// Request is what the extractors read of one framework's request. Each
// middleware implements it over its own request type as a small value
// (the framework's request and what the guard knows of its route), so
// that reading one passes nothing to the heap. Every method answers ""
// (or false, or the zero Addr) for what the request lacks.
type Request interface {
	// Header returns the first line of the header, named as the
	// framework's constructor of the Header extractor gave it.
	Header(name string) string
	// HeaderLine returns line i of the header; false past the last.
	HeaderLine(name string, i int) (string, bool)
	// Query returns the first value of the query parameter.
	Query(name string) string
	// PathParam returns the value of the route's path parameter.
	PathParam(name string) string
	// Cookie returns the value of the cookie.
	Cookie(name string) string
	// RemoteIP is the address of the peer that opened the connection.
	RemoteIP() netip.Addr
	// RemoteIPText is RemoteIP as text, or the peer's address as the
	// framework tells it when that is not an IP address.
	RemoteIPText() string
}

// IPKey is the param key of the client IP extractor.
const IPKey = "ip"

// forwardedFor is the header trusted proxies name the client in.
const forwardedFor = "X-Forwarded-For"

type extractorKind int

const (
	kindNone extractorKind = iota // the zero Extractor: reads nothing
	kindIP
	kindHeader
	kindQuery
	kindPath
	kindCookie
	kindFunc
)

// Extractor reads one value of a request R under a param key. The zero
// Extractor reads nothing.
type Extractor[R Request] struct {
	key  string
	kind extractorKind
	name string
	fn   func(R) string
}

// Key returns the param key the extractor's value goes under.
func (x Extractor[R]) Key() string { return x.key }

// ClientIP reads the client's IP address, param key "ip".
func ClientIP[R Request]() Extractor[R] { return Extractor[R]{key: IPKey, kind: kindIP} }

// Header reads a header, param key "header:<name>"; lookup is the name
// the framework's Request finds it by.
func Header[R Request](name, lookup string) Extractor[R] {
	return Extractor[R]{key: "header:" + name, kind: kindHeader, name: lookup}
}

// Query reads a query parameter, param key "query:<name>".
func Query[R Request](name string) Extractor[R] {
	return Extractor[R]{key: "query:" + name, kind: kindQuery, name: name}
}

// PathParam reads a path parameter of the route, param key "path:<name>".
func PathParam[R Request](name string) Extractor[R] {
	return Extractor[R]{key: "path:" + name, kind: kindPath, name: name}
}

// Cookie reads a cookie, param key "cookie:<name>".
func Cookie[R Request](name string) Extractor[R] {
	return Extractor[R]{key: "cookie:" + name, kind: kindCookie, name: name}
}

// Func reads what fn returns, under key.
func Func[R Request](key string, fn func(R) string) Extractor[R] {
	return Extractor[R]{key: key, kind: kindFunc, fn: fn}
}

// Extractors are a guard's origin and params, and the trusted proxies
// whose X-Forwarded-For its ClientIP believes.
type Extractors[R Request] struct {
	origin  Extractor[R]
	params  []Extractor[R]
	proxies Proxies
}

// SetOrigin names each request's origin with x.
func (e *Extractors[R]) SetOrigin(x Extractor[R]) { e.origin = x }

// AddParam gives each request x's value as a param.
func (e *Extractors[R]) AddParam(x Extractor[R]) { e.params = append(e.params, x) }

// TrustProxies adds trusted proxies.
func (e *Extractors[R]) TrustProxies(proxies []netip.Prefix) {
	e.proxies = append(e.proxies, proxies...)
}

// MaxStackOptions is how many entry options a request's call keeps on the
// stack: inbound, an origin, the params and one spare; more still work, on
// the heap.
const MaxStackOptions = 9

// Append appends to opts the options of req's origin and params for a
// call of res; none when no rule of res reads them, which spares the work
// of computing them on most routes. An empty value is left out: a missing
// param leaves the call unlimited by the key's rules rather than lumping
// every such call under one empty value.
func (e *Extractors[R]) Append(opts []engine.EntryOption, res *engine.Resource, req R) []engine.EntryOption {
	if !res.ReadsCallAttributes() {
		return opts
	}
	if origin := e.value(&e.origin, req); origin != "" {
		opts = append(opts, engine.WithOrigin(origin))
	}
	for i := range e.params {
		x := &e.params[i]
		if v := e.value(x, req); v != "" {
			opts = append(opts, engine.WithParam(x.key, v))
		}
	}
	return opts
}

func (e *Extractors[R]) value(x *Extractor[R], req R) string {
	switch x.kind {
	case kindIP:
		return e.clientIP(req)
	case kindHeader:
		return req.Header(x.name)
	case kindQuery:
		return req.Query(x.name)
	case kindPath:
		return req.PathParam(x.name)
	case kindCookie:
		return req.Cookie(x.name)
	case kindFunc:
		return x.fn(req)
	}
	return ""
}

// clientIP is the peer's address, or the client X-Forwarded-For names
// when the peer is a trusted proxy.
func (e *Extractors[R]) clientIP(req R) string {
	if len(e.proxies) > 0 {
		line := func(i int) (string, bool) { return req.HeaderLine(forwardedFor, i) }
		if client, ok := e.proxies.Forwarded(req.RemoteIP(), line); ok {
			return client
		}
	}
	return req.RemoteIPText()
}

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

// Forwarded returns the client IP that X-Forwarded-For tells, given line
// i of the header for each i until false, when the peer that sent the
// request is a trusted proxy: the rightmost address that is not a trusted
// proxy, since every proxy appends the address it was called from and a
// client may write anything on the left. Past an entry that is not an IP
// address, it returns the last trusted proxy before it. False means the
// peer's own address is the client's: it is not a trusted proxy, or the
// header names nobody.
func (p Proxies) Forwarded(peer netip.Addr, line func(i int) (string, bool)) (string, bool) {
	if len(p) == 0 || !p.trusts(peer) {
		return "", false
	}
	lines := 0
	for _, ok := line(lines); ok; _, ok = line(lines) {
		lines++
	}
	client, found := "", false
	for i := lines - 1; i >= 0; i-- {
		rest, _ := line(i)
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
