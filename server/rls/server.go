package rls

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/sluicehq/sluice/engine"
)

// Transport bounds of the listener (docs/envoy.md, "Bounds").
const (
	// MaxConcurrentStreams bounds the calls in flight on one connection;
	// Envoy multiplexes its calls on a few.
	MaxConcurrentStreams = 1024
	// connectionTimeout bounds the handshake of a new connection (TLS
	// included).
	connectionTimeout = 10 * time.Second
	// keepaliveMinTime is the shortest interval between a client's pings
	// the server tolerates; a client that pings more often is cut off.
	keepaliveMinTime = 10 * time.Second
	// maxConnectionIdle closes connections unused this long.
	maxConnectionIdle = 15 * time.Minute
)

// Options is what NewServer needs.
type Options struct {
	// Engine decides. Required.
	Engine *engine.Engine
	// Rules are the stored rules descriptors resolve to. Required.
	Rules Rules
	// Authorize checks the callers' tokens. Required.
	Authorize Authorizer
	// TLS, when set, serves over TLS with it. Optional. Default: plain
	// HTTP/2.
	TLS *tls.Config
	// Logger receives the service's errors. Optional. Default:
	// slog.Default().
	Logger *slog.Logger
}

// Server is the gRPC server of the rate limit service, with health and
// reflection.
type Server struct {
	grpc   *grpc.Server
	health *health.Server
}

// NewServer reads the rules and builds the server; it does not listen
// yet.
func NewServer(ctx context.Context, opts Options) (*Server, error) {
	if opts.Engine == nil || opts.Rules == nil || opts.Authorize == nil {
		return nil, errors.New("rls: Options.Engine, Rules and Authorize are required")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ix, err := newIndex(ctx, opts.Rules, logger)
	if err != nil {
		return nil, err
	}
	serverOpts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRecvMsgBytes),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		grpc.ConnectionTimeout(connectionTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: maxConnectionIdle}),
		grpc.ChainUnaryInterceptor(unaryGuard(opts.Authorize)),
		grpc.ChainStreamInterceptor(streamGuard(opts.Authorize)),
	}
	if opts.TLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s := &Server{grpc: grpc.NewServer(serverOpts...), health: health.NewServer()}
	ratelimitv3.RegisterRateLimitServiceServer(s.grpc, &service{engine: opts.Engine, index: ix, overrides: newOverrides(MaxOverrides)})
	grpc_health_v1.RegisterHealthServer(s.grpc, s.health)
	s.health.SetServingStatus(ratelimitv3.RateLimitService_ServiceDesc.ServiceName, grpc_health_v1.HealthCheckResponse_SERVING)
	reflection.Register(s.grpc)
	return s, nil
}

// Serve answers on ln until Stop, and returns nil then.
func (s *Server) Serve(ln net.Listener) error {
	err := s.grpc.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop answers health checks NOT_SERVING, stops accepting connections and
// waits for the calls in flight, or until ctx is done: then it cuts them.
func (s *Server) Stop(ctx context.Context) {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
	}
}
