package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/sluicehq/sluice/server/rls"
)

// ServeGRPC answers Envoy's rate limit service (server/rls), gRPC health
// and reflection on ln until Shutdown, and returns nil then; over TLS with
// the PEM certificate and key files when given (those of the HTTP
// listener). It closes ln when it returns. The rules' index is read here:
// a server that never serves gRPC pays nothing for it.
func (s *Server) ServeGRPC(ln net.Listener, certFile, keyFile string) error {
	opts := rls.Options{Engine: s.engine, Rules: s.rules, Authorize: s.auth.authorizeGRPC, Logger: s.logger}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return errors.Join(fmt.Errorf("load the TLS certificate: %w", err), ln.Close())
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	g, err := rls.NewServer(context.Background(), opts)
	if err != nil {
		return errors.Join(fmt.Errorf("server: %w", err), ln.Close())
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return ln.Close()
	}
	s.grpcServers = append(s.grpcServers, g)
	s.mu.Unlock()
	s.logger.Info("listening for gRPC (Envoy rate limit service)", "addr", ln.Addr().String())
	return g.Serve(ln)
}

// authorizeGRPC checks a gRPC caller's bearer token against the tokens the
// HTTP API takes: ShouldRateLimit needs the instance role, the one that
// may change nothing (what a gateway should hold), or a role the check
// API allows (checkRole and above); reflection any valid token.
func (a *auth) authorizeGRPC(ctx context.Context, secret string, need rls.Access) error {
	p, err := a.tokenPrincipal(ctx, secret)
	if err != nil {
		return fmt.Errorf("%w: %v", rls.ErrUnauthenticated, err)
	}
	if need == rls.AccessDecide && p.role != roleInstance && roleRank[p.role] < roleRank[checkRole] {
		return fmt.Errorf("%w: ShouldRateLimit needs the %s role (a gateway's), or %s and above; yours is %s", rls.ErrPermissionDenied, roleInstance, checkRole, p.role)
	}
	return nil
}
