package grpcmw

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/internal/guard"
)

// Option adjusts an interceptor.
type Option func(*config)

type config struct {
	resource func(ctx context.Context, fullMethod string) string
	blocked  func(ctx context.Context, fullMethod string, blk *engine.BlockError) error
	details  bool
	failed   [codes.Unauthenticated + 1]bool
	extract  guard.Extractors[grpcRequest]
}

// DefaultErrorCodes are the codes that count as a failed call unless
// WithErrorCodes says otherwise: those that tell of a fault of the service,
// not of the caller's request (InvalidArgument, NotFound,
// PermissionDenied and the like are answers, not failures).
var DefaultErrorCodes = []codes.Code{
	codes.Unknown, codes.DeadlineExceeded, codes.Unimplemented,
	codes.Internal, codes.Unavailable, codes.DataLoss,
}

// WithResource names the resource of each call; "" lets the call through
// unguarded and uncounted. The default is the full method,
// "/orders.Orders/Get".
func WithResource(name func(ctx context.Context, fullMethod string) string) Option {
	return func(cfg *config) { cfg.resource = name }
}

// WithBlocked makes the error a blocked call ends with. The default is
// codes.ResourceExhausted, with the message "too many requests" (see
// WithBlockDetails) and a RetryInfo detail of the HTTP guards' Retry-After:
// the whole seconds until the window of the rule that blocked has room
// for the call, or one second for a block of another kind
// (middleware.RetryAfter).
func WithBlocked(answer func(ctx context.Context, fullMethod string, blk *engine.BlockError) error) Option {
	return func(cfg *config) { cfg.blocked = answer }
}

// WithBlockDetails makes the default block error name the rule that
// blocked ("too many requests: blocked by flow rule orders-qps"), for
// services whose callers may know their rules.
func WithBlockDetails() Option {
	return func(cfg *config) { cfg.details = true }
}

// WithErrorCodes replaces the codes that count as a failed call, for the
// breakers and the error statistics (DefaultErrorCodes without it). A
// handler's error that carries no status is codes.Unknown.
func WithErrorCodes(cs ...codes.Code) Option {
	return func(cfg *config) {
		clear(cfg.failed[:])
		for _, c := range cs {
			if int(c) < len(cfg.failed) {
				cfg.failed[c] = true
			}
		}
	}
}

// grpcGuard is what the four interceptors share.
type grpcGuard struct {
	eng      *engine.Engine
	cfg      config
	blocked  *blockedErrors // the default block errors, without WithBlocked
	methods  *guard.ResourceCache[string]
	outgoing bool
}

func newGuard(eng *engine.Engine, outgoing bool, opts []Option) *grpcGuard {
	var cfg config
	for _, c := range DefaultErrorCodes {
		cfg.failed[c] = true
	}
	for _, o := range opts {
		o(&cfg)
	}
	g := &grpcGuard{eng: eng, cfg: cfg, methods: guard.NewResourceCache[string](eng), outgoing: outgoing}
	if cfg.blocked == nil {
		g.blocked = &blockedErrors{detailed: cfg.details}
	}
	return g
}

func fullMethodName(m string) string { return m }

// enter asks the engine for the call; a nil resource means unguarded.
// A throttled call waits its turn here, up to the rule's
// maxQueueingTimeMs.
func (g *grpcGuard) enter(ctx context.Context, method string) (*engine.Resource, engine.Entry, error) {
	var res *engine.Resource
	if g.cfg.resource != nil {
		name := g.cfg.resource(ctx, method)
		if name == "" {
			return nil, engine.Entry{}, nil
		}
		res = g.eng.Resource(name)
	} else {
		res = g.methods.Get(method, fullMethodName)
	}
	var buf [guard.MaxStackOptions]engine.EntryOption
	opts := buf[:0]
	if !g.outgoing {
		// Calls come in: system rules guard them.
		opts = append(opts, engine.WithInbound())
	}
	opts = g.cfg.extract.Append(opts, res, grpcRequest{ctx: ctx, method: method, outgoing: g.outgoing})
	e, blk := res.Entry(opts...)
	switch {
	case blk == nil:
		return res, e, nil
	case g.blocked == nil:
		return res, e, g.cfg.blocked(ctx, method, blk)
	}
	return res, e, g.blocked.err(blk, middleware.RetryAfter(res.Status(true, opts...), blk))
}

// failure is err if its code counts as a failed call, else nil.
func (g *grpcGuard) failure(err error) error {
	if err == nil {
		return nil
	}
	if c := status.Code(err); int(c) < len(g.cfg.failed) && g.cfg.failed[c] {
		return err
	}
	return nil
}

// cachedRetrySeconds is the longest RetryInfo whose plain block error is
// made once and kept.
const cachedRetrySeconds = 60

// blockedErrors are the default block errors. Those without details, by
// far the most frequent, are kept by their delay up to a minute, so that
// a flood of blocked calls does not marshal a RetryInfo for each.
type blockedErrors struct {
	detailed bool
	plain    [cachedRetrySeconds + 1]atomic.Pointer[status.Status]
}

// err is the error of a call blk blocked, which may retry after
// retrySeconds.
func (b *blockedErrors) err(blk *engine.BlockError, retrySeconds int64) error {
	if b.detailed {
		return blockedStatus(middleware.BlockedMessage(blk), retrySeconds).Err()
	}
	if retrySeconds > cachedRetrySeconds {
		return blockedStatus(middleware.TooManyRequests, retrySeconds).Err()
	}
	st := b.plain[retrySeconds].Load()
	if st == nil {
		st = blockedStatus(middleware.TooManyRequests, retrySeconds)
		b.plain[retrySeconds].Store(st)
	}
	return st.Err()
}

// blockedStatus is ResourceExhausted with msg and a RetryInfo of
// retrySeconds.
func blockedStatus(msg string, retrySeconds int64) *status.Status {
	retry := &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(retrySeconds) * time.Second)}
	st, err := status.New(codes.ResourceExhausted, msg).WithDetails(retry)
	if err != nil {
		return status.New(codes.ResourceExhausted, msg) // RetryInfo always marshals
	}
	return st
}

// UnaryServerInterceptor guards a server's unary calls.
func UnaryServerInterceptor(eng *engine.Engine, opts ...Option) grpc.UnaryServerInterceptor {
	g := newGuard(eng, false, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		res, e, err := g.enter(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return handler(ctx, req)
		}
		returned := false
		defer func() {
			if !returned {
				e.Exit(engine.WithError(guard.ErrPanicked))
			}
		}()
		resp, err := handler(ctx, req)
		returned = true
		e.Exit(engine.WithError(g.failure(err)))
		return resp, err
	}
}

// StreamServerInterceptor guards a server's streaming calls: a call
// lasts until its handler returns.
func StreamServerInterceptor(eng *engine.Engine, opts ...Option) grpc.StreamServerInterceptor {
	g := newGuard(eng, false, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		res, e, err := g.enter(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		if res == nil {
			return handler(srv, ss)
		}
		returned := false
		defer func() {
			if !returned {
				e.Exit(engine.WithError(guard.ErrPanicked))
			}
		}()
		err = handler(srv, ss)
		returned = true
		e.Exit(engine.WithError(g.failure(err)))
		return err
	}
}

// UnaryClientInterceptor guards a client's unary calls: a blocked call
// fails at once with the block error, without reaching the server.
// Calls going out, system rules do not apply.
func UnaryClientInterceptor(eng *engine.Engine, opts ...Option) grpc.UnaryClientInterceptor {
	g := newGuard(eng, true, opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		res, e, err := g.enter(ctx, method)
		if err != nil {
			return err
		}
		if res == nil {
			return invoker(ctx, method, req, reply, cc, callOpts...)
		}
		returned := false
		defer func() {
			if !returned {
				e.Exit(engine.WithError(guard.ErrPanicked))
			}
		}()
		err = invoker(ctx, method, req, reply, cc, callOpts...)
		returned = true
		e.Exit(engine.WithError(g.failure(err)))
		return err
	}
}

// StreamClientInterceptor guards a client's streaming calls: a blocked
// call fails at once. A call lasts until the stream ends: RecvMsg (or
// SendMsg) returned an error, io.EOF being a success, or the stream's
// context ended while no RecvMsg or SendMsg was under way, which is how
// a stream the caller abandons (by cancelling its context) or whose
// connection closes ends in gRPC.
func StreamClientInterceptor(eng *engine.Engine, opts ...Option) grpc.StreamClientInterceptor {
	g := newGuard(eng, true, opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		res, e, err := g.enter(ctx, method)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return streamer(ctx, desc, cc, method, callOpts...)
		}
		returned := false
		defer func() {
			if !returned {
				e.Exit(engine.WithError(guard.ErrPanicked))
			}
		}()
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		returned = true
		if err != nil {
			e.Exit(engine.WithError(g.failure(err)))
			return nil, err
		}
		s := &clientStream{ClientStream: cs, ctx: cs.Context(), g: g, e: e}
		// A stream the caller abandons ends with its context; the entry
		// must not stay in flight.
		s.stop = context.AfterFunc(s.ctx, func() {
			if s.calls.Load() == 0 {
				s.exit(s.ctxErr())
			}
		})
		return s, nil
	}
}

// clientStream exits its entry once, when the stream ends.
//
// gRPC ends a stream's context as RecvMsg reads the stream's final
// status, before RecvMsg returns it. The context's watcher therefore
// leaves the exit to a RecvMsg or SendMsg under way, which returns that
// status, and the last of them to return exits if the context ended
// meanwhile without an error reaching it; so a failed stream counts its
// status, not a cancellation, and no entry stays in flight.
type clientStream struct {
	grpc.ClientStream
	// ctx is the stream's context, read once: gRPC's Context takes the
	// stream's lock.
	ctx    context.Context
	g      *grpcGuard
	e      engine.Entry
	stop   func() bool
	calls  atomic.Int32
	exited atomic.Bool
}

// ctxErr is the status of a stream whose context ended.
func (s *clientStream) ctxErr() error {
	return status.FromContextError(s.ctx.Err()).Err()
}

// returned closes a RecvMsg or SendMsg: the last call out exits if the
// stream's context ended while it was under way.
func (s *clientStream) returned() {
	if s.calls.Add(-1) == 0 && s.ctx.Err() != nil {
		s.exit(s.ctxErr())
	}
}

func (s *clientStream) exit(err error) {
	if s.exited.Swap(true) {
		return
	}
	if err == io.EOF {
		err = nil
	}
	s.e.Exit(engine.WithError(s.g.failure(err)))
}

// ended exits the entry on a method's error and stops watching the
// context.
func (s *clientStream) ended(err error) {
	s.stop()
	s.exit(err)
}

// RecvMsg receives a message; an error ends the call.
func (s *clientStream) RecvMsg(m any) error {
	s.calls.Add(1)
	defer s.returned()
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.ended(err)
	}
	return err
}

// SendMsg sends a message; an error other than io.EOF ends the call (on
// io.EOF, RecvMsg tells the call's status).
func (s *clientStream) SendMsg(m any) error {
	s.calls.Add(1)
	defer s.returned()
	err := s.ClientStream.SendMsg(m)
	if err != nil && err != io.EOF {
		s.ended(err)
	}
	return err
}
