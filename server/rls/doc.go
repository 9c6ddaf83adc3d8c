// Package rls is Envoy's rate limit service (RLS v3,
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) in front of
// the server's engine: it resolves a request's descriptors to the stored
// rules whose resources server/descriptor names, the way envoyproxy/ratelimit
// resolves its configuration, and answers each descriptor's status. The
// server runs it on its own gRPC listener (docs/envoy.md).
package rls
