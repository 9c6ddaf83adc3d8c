package grpcmw

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluicehq/sluice/engine/middleware/internal/guard"
)

// Extractor reads one value of a call: the caller's origin (WithOrigin)
// or a param (WithParam), under the param key that hotspot rules name. An
// empty value counts as absent: the call has no origin, or not that param,
// so the key's hotspot rules do not limit it.
type Extractor struct{ x guard.Extractor[grpcRequest] }

// Key returns the param key the extractor's value goes under.
func (x Extractor) Key() string { return x.x.Key() }

// ClientIP reads the IP address of the peer, param key "ip". Behind a
// proxy, that is the proxy; give its addresses with WithTrustedProxies to
// read the client's from the x-forwarded-for metadata. On a client
// interceptor there is no peer yet: only a trusted proxy's metadata
// could name one, so ClientIP reads nothing there.
func ClientIP() Extractor { return Extractor{guard.ClientIP[grpcRequest]()} }

// Metadata reads the first value of the metadata key name, param key
// "header:<name>" (as given, such as "header:X-User"), the key the HTTP
// guards' Header extractor uses, since gRPC metadata travels as HTTP/2
// headers: one hotspot rule limits a user over both. Metadata keys are
// lower case; name is matched in any case. The server reads the incoming
// metadata, the client the outgoing.
func Metadata(name string) Extractor {
	return Extractor{guard.Header[grpcRequest](name, strings.ToLower(name))}
}

// Func reads what fn returns for the call's context and full method,
// under the caller-chosen param key; "" means absent. fn runs before
// every guarded call, so keep it cheap.
func Func(key string, fn func(ctx context.Context, fullMethod string) string) Extractor {
	return Extractor{guard.Func(key, func(req grpcRequest) string { return fn(req.ctx, req.method) })}
}

// WithOrigin names each call's origin (the calling app, tenant or user),
// which authority rules allow or deny and flow rules with a limitApp
// count apart. Only the extractor's value is used, not its key.
func WithOrigin(x Extractor) Option { return func(cfg *config) { cfg.extract.SetOrigin(x.x) } }

// WithParam gives each call the extractor's value as a param, which
// hotspot rules with the extractor's key limit per value. Give it once per
// param.
func WithParam(x Extractor) Option { return func(cfg *config) { cfg.extract.AddParam(x.x) } }

// WithTrustedProxies makes ClientIP believe the x-forwarded-for metadata
// when the call comes from one of these networks: the client is the
// rightmost address of it that is not a trusted proxy. Without it, the
// metadata is ignored.
func WithTrustedProxies(proxies ...netip.Prefix) Option {
	return func(cfg *config) { cfg.extract.TrustProxies(proxies) }
}

// grpcRequest is what the extractors read of a call: its metadata (the
// incoming on a server, the outgoing on a client) and its peer. It reads
// them only when an extractor asks.
type grpcRequest struct {
	ctx      context.Context
	method   string
	outgoing bool
}

// values returns the metadata values of key, which is lower case.
func (req grpcRequest) values(key string) []string {
	if req.outgoing {
		md, _ := metadata.FromOutgoingContext(req.ctx)
		return md[key]
	}
	return metadata.ValueFromIncomingContext(req.ctx, key)
}

// Header returns the first value of the metadata key.
func (req grpcRequest) Header(name string) string {
	if v := req.values(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// HeaderLine returns value i of the metadata key; the extractors ask for
// X-Forwarded-For by its HTTP name.
func (req grpcRequest) HeaderLine(name string, i int) (string, bool) {
	if v := req.values(strings.ToLower(name)); i < len(v) {
		return v[i], true
	}
	return "", false
}

// Query is empty: a call has no query.
func (grpcRequest) Query(string) string { return "" }

// PathParam is empty: a method has no path parameters.
func (grpcRequest) PathParam(string) string { return "" }

// Cookie is empty: gRPC has no cookies.
func (grpcRequest) Cookie(string) string { return "" }

// RemoteIP is the peer's address; the zero Addr on a client, or for a
// peer that is not an IP address (a Unix socket).
func (req grpcRequest) RemoteIP() netip.Addr {
	if req.outgoing {
		return netip.Addr{}
	}
	p, ok := peer.FromContext(req.ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}
	}
	if tcp, ok := p.Addr.(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	ap, err := netip.ParseAddrPort(p.Addr.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// RemoteIPText is the peer's address as text, or the peer's own name for
// an address that is not an IP address.
func (req grpcRequest) RemoteIPText() string {
	if a := req.RemoteIP(); a.IsValid() {
		return a.String()
	}
	if req.outgoing {
		return ""
	}
	if p, ok := peer.FromContext(req.ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}
