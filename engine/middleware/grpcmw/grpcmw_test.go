package grpcmw_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/grpcmw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// The test service's methods. Do answers the code its request names
// ("ok", "panic", or a code number such as "14"); Count streams as many
// messages as its request says.
const (
	doMethod    = "/sluice.test.Test/Do"
	countMethod = "/sluice.test.Test/Count"
)

func do(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(_ context.Context, req any) (any, error) {
		switch v := req.(*wrapperspb.StringValue).Value; v {
		case "ok":
			return wrapperspb.String("done"), nil
		case "panic":
			panic("handler panicked")
		default:
			c, _ := strconv.Atoi(v)
			return nil, status.Error(codes.Code(c), "failed")
		}
	}
	if icpt == nil {
		return h(ctx, in)
	}
	return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: doMethod}, h)
}

func count(_ any, ss grpc.ServerStream) error {
	in := new(wrapperspb.Int32Value)
	if err := ss.RecvMsg(in); err != nil {
		return err
	}
	if in.Value < 0 {
		return status.Error(codes.Internal, "negative")
	}
	for i := range in.Value {
		if err := ss.SendMsg(wrapperspb.Int32(i)); err != nil {
			return err
		}
	}
	return nil
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "sluice.test.Test",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Do", Handler: do}},
	Streams: []grpc.StreamDesc{{
		StreamName: "Count", Handler: count, ServerStreams: true, ClientStreams: true,
	}},
}

// recovered counts the panics that reached the interceptor chained
// before the guard, which answers them Internal as a recovery
// interceptor would.
type recovered struct{ n atomic.Int32 }

func (r *recovered) interceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.n.Add(1)
			err = status.Error(codes.Internal, "recovered")
		}
	}()
	return h(ctx, req)
}

// serve starts the test service on a 127.0.0.1 listener with opts and
// returns a client connection to it.
func serve(t *testing.T, opts []grpc.ServerOption, dialOpts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&serviceDesc, struct{}{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func call(ctx context.Context, conn *grpc.ClientConn, v string) error {
	return conn.Invoke(ctx, doMethod, wrapperspb.String(v), new(wrapperspb.StringValue))
}

func TestUnaryServer(t *testing.T) {
	tests := []struct {
		name        string
		rules       []engine.FlowRule
		opts        []grpcmw.Option
		calls       []string
		wantCodes   []codes.Code
		want        guardtest.Stats
		wantMessage string // of the last call's block error
		wantClockMs int64
	}{
		{
			name:      "the full method names the resource",
			calls:     []string{"ok", "ok"},
			wantCodes: []codes.Code{codes.OK, codes.OK},
			want:      guardtest.Stats{Pass: 2, Complete: 2},
		},
		{
			name:        "a blocked call ends ResourceExhausted, naming no rule",
			rules:       []engine.FlowRule{{Name: "do-qps", Resource: doMethod, Threshold: 1}},
			calls:       []string{"ok", "ok"},
			wantCodes:   []codes.Code{codes.OK, codes.ResourceExhausted},
			want:        guardtest.Stats{Pass: 1, Block: 1, Complete: 1},
			wantMessage: "too many requests",
		},
		{
			name:        "with details, the block error names the rule",
			rules:       []engine.FlowRule{{Name: "do-qps", Resource: doMethod, Threshold: 0}},
			opts:        []grpcmw.Option{grpcmw.WithBlockDetails()},
			calls:       []string{"ok"},
			wantCodes:   []codes.Code{codes.ResourceExhausted},
			want:        guardtest.Stats{Block: 1},
			wantMessage: "too many requests: blocked by flow rule do-qps",
		},
		{
			name:      "the default codes count as errors, the others do not",
			calls:     []string{strconv.Itoa(int(codes.Unavailable)), strconv.Itoa(int(codes.Internal)), strconv.Itoa(int(codes.NotFound))},
			wantCodes: []codes.Code{codes.Unavailable, codes.Internal, codes.NotFound},
			want:      guardtest.Stats{Pass: 3, Complete: 3, Errors: 2},
		},
		{
			name:      "WithErrorCodes chooses the codes",
			opts:      []grpcmw.Option{grpcmw.WithErrorCodes(codes.NotFound)},
			calls:     []string{strconv.Itoa(int(codes.Unavailable)), strconv.Itoa(int(codes.NotFound))},
			wantCodes: []codes.Code{codes.Unavailable, codes.NotFound},
			want:      guardtest.Stats{Pass: 2, Complete: 2, Errors: 1},
		},
		{
			name:      "a panic is counted as an error",
			calls:     []string{"panic"},
			wantCodes: []codes.Code{codes.Internal},
			want:      guardtest.Stats{Pass: 1, Complete: 1, Errors: 1},
		},
		{
			name: "a throttled call waits its turn",
			rules: []engine.FlowRule{{
				Resource: doMethod, Threshold: 10,
				ControlBehavior: engine.BehaviorThrottling, MaxQueueingTimeMs: 500,
			}},
			calls:       []string{"ok", "ok", "ok"},
			wantCodes:   []codes.Code{codes.OK, codes.OK, codes.OK},
			want:        guardtest.Stats{Pass: 3, Complete: 3},
			wantClockMs: 200,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, clock := guardtest.NewEngine(t, tt.rules...)
			start := clock.NowMs()
			var rec recovered
			conn := serve(t, []grpc.ServerOption{grpc.ChainUnaryInterceptor(rec.interceptor, grpcmw.UnaryServerInterceptor(eng, tt.opts...))})
			var last error
			for i, v := range tt.calls {
				last = call(t.Context(), conn, v)
				if got := status.Code(last); got != tt.wantCodes[i] {
					t.Fatalf("call %d (%s): code %v (%v), want %v", i, v, got, last, tt.wantCodes[i])
				}
			}
			if got := guardtest.StatsOf(eng, doMethod); got != tt.want {
				t.Errorf("stats = %+v, want %+v", got, tt.want)
			}
			if tt.wantMessage != "" {
				checkBlocked(t, last, tt.wantMessage)
			}
			if got := clock.NowMs() - start; got != tt.wantClockMs {
				t.Errorf("clock moved %d ms, want %d", got, tt.wantClockMs)
			}
			wantPanics := int32(0)
			for _, v := range tt.calls {
				if v == "panic" {
					wantPanics++
				}
			}
			if got := rec.n.Load(); got != wantPanics {
				t.Errorf("%d panics reached the recovery interceptor, want %d", got, wantPanics)
			}
		})
	}
}

// checkBlocked checks a block error: ResourceExhausted, the message, and
// a RetryInfo of one second, the HTTP guards' Retry-After for a rule of
// one second or a block of another kind.
func checkBlocked(t *testing.T, err error, wantMessage string) {
	t.Helper()
	checkBlockedRetry(t, err, wantMessage, time.Second)
}

// checkBlockedRetry is checkBlocked with a RetryInfo of want.
func checkBlockedRetry(t *testing.T, err error, wantMessage string, want time.Duration) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || st.Message() != wantMessage {
		t.Errorf("block error = %v, %q; want ResourceExhausted, %q", st.Code(), st.Message(), wantMessage)
	}
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry == nil || retry.GetRetryDelay().AsDuration() != want {
		t.Errorf("details = %v, want a RetryInfo of %v", st.Details(), want)
	}
}

// TestBlockedRetryInfoFromTheRule: a call a window rule blocks is told
// when the window has room for it, in whole seconds rounded up, on the
// server and on a client; with details too.
func TestBlockedRetryInfoFromTheRule(t *testing.T) {
	rules := []engine.FlowRule{{Name: "do-per-10s", Resource: doMethod, Threshold: 1, StatIntervalMs: 10_000}}
	for _, tt := range []struct {
		name        string
		opts        []grpcmw.Option
		wantMessage string
	}{
		{"plain", nil, "too many requests"},
		{"with details", []grpcmw.Option{grpcmw.WithBlockDetails()}, "too many requests: blocked by flow rule do-per-10s"},
	} {
		t.Run(tt.name+"/server", func(t *testing.T) {
			eng, clock := guardtest.NewEngine(t, rules...)
			conn := serve(t, []grpc.ServerOption{grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(eng, tt.opts...))})
			if err := call(t.Context(), conn, "ok"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2500)
			// 7.5 s until the first call leaves the window.
			checkBlockedRetry(t, call(t.Context(), conn, "ok"), tt.wantMessage, 8*time.Second)
			clock.Advance(7000)
			checkBlockedRetry(t, call(t.Context(), conn, "ok"), tt.wantMessage, time.Second)
		})
		t.Run(tt.name+"/client", func(t *testing.T) {
			eng, clock := guardtest.NewEngine(t, rules...)
			conn := serve(t, nil, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(eng, tt.opts...)))
			if err := call(t.Context(), conn, "ok"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(1000)
			checkBlockedRetry(t, call(t.Context(), conn, "ok"), tt.wantMessage, 9*time.Second)
		})
	}
}

func TestUnaryServerBreakerOpensOnErrors(t *testing.T) {
	eng, _ := guardtest.NewEngine(t)
	if err := eng.LoadCircuitBreakerRules([]engine.CircuitBreakerRule{{
		Name: "do-errors", Resource: doMethod, Strategy: engine.StrategyErrorCount,
		Threshold: 2, RetryTimeoutMs: 10_000, MinRequestAmount: 1, StatIntervalMs: 1000,
	}}); err != nil {
		t.Fatal(err)
	}
	conn := serve(t, []grpc.ServerOption{grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(eng, grpcmw.WithBlockDetails()))})
	unavailable := strconv.Itoa(int(codes.Unavailable))
	for range 2 {
		if err := call(t.Context(), conn, unavailable); status.Code(err) != codes.Unavailable {
			t.Fatalf("call = %v, want the handler's Unavailable", err)
		}
	}
	err := call(t.Context(), conn, "ok")
	checkBlocked(t, err, "too many requests: blocked by circuitBreaker rule do-errors")
}

func TestUnaryServerOriginAndParams(t *testing.T) {
	eng, _ := guardtest.NewEngine(t)
	if err := eng.LoadAuthorityRules([]engine.AuthorityRule{{Resource: doMethod, Strategy: engine.AuthorityDeny, Origins: []string{"mallory"}}}); err != nil {
		t.Fatal(err)
	}
	if err := eng.LoadHotspotRules([]engine.HotspotRule{
		{Name: "per-user", Resource: doMethod, ParamKey: "header:X-User", Threshold: 1},
		{Name: "per-ip", Resource: doMethod, ParamKey: "ip", Threshold: 100, SpecificItems: map[string]float64{"127.0.0.1": 2}},
	}); err != nil {
		t.Fatal(err)
	}
	var tenants []string
	conn := serve(t, []grpc.ServerOption{grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(eng,
		grpcmw.WithBlockDetails(),
		grpcmw.WithOrigin(grpcmw.Metadata("X-Caller")),
		grpcmw.WithParam(grpcmw.Metadata("X-User")),
		grpcmw.WithParam(grpcmw.ClientIP()),
		grpcmw.WithParam(grpcmw.Func("tenant", func(ctx context.Context, method string) string {
			tenants = append(tenants, method)
			return ""
		})),
	))})
	with := func(kv ...string) context.Context { return metadata.AppendToOutgoingContext(t.Context(), kv...) }

	checkBlocked(t, call(with("x-caller", "mallory"), conn, "ok"), "too many requests: blocked by authority rule")
	if err := call(with("x-caller", "alice", "x-user", "ann"), conn, "ok"); err != nil {
		t.Fatal(err)
	}
	checkBlocked(t, call(with("x-user", "ann"), conn, "ok"), "too many requests: blocked by hotspot rule per-user")
	if err := call(with("x-user", "bob"), conn, "ok"); err != nil {
		t.Fatal(err)
	}
	checkBlocked(t, call(with("x-user", "cy"), conn, "ok"), "too many requests: blocked by hotspot rule per-ip")
	if len(tenants) == 0 || tenants[0] != doMethod {
		t.Errorf("Func saw methods %v, want %s", tenants, doMethod)
	}
}

func TestUnaryClient(t *testing.T) {
	eng, _ := guardtest.NewEngine(t, engine.FlowRule{Name: "out", Resource: doMethod, Threshold: 1})
	var served atomic.Int32
	conn := serve(t, []grpc.ServerOption{grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		served.Add(1)
		return h(ctx, req)
	})}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(eng, grpcmw.WithParam(grpcmw.Metadata("X-User")))))
	if err := call(t.Context(), conn, strconv.Itoa(int(codes.Unavailable))); status.Code(err) != codes.Unavailable {
		t.Fatalf("call = %v, want Unavailable", err)
	}
	checkBlocked(t, call(t.Context(), conn, "ok"), "too many requests")
	if n := served.Load(); n != 1 {
		t.Errorf("the server saw %d calls, want 1: a blocked call fails on the client", n)
	}
	if got, want := guardtest.StatsOf(eng, doMethod), (guardtest.Stats{Pass: 1, Block: 1, Complete: 1, Errors: 1}); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
}

var countDesc = &grpc.StreamDesc{StreamName: "Count", ServerStreams: true, ClientStreams: true}

// stream calls Count for n messages and reads them all.
func stream(ctx context.Context, conn *grpc.ClientConn, n int32) (int, error) {
	cs, err := conn.NewStream(ctx, countDesc, countMethod)
	if err != nil {
		return 0, err
	}
	// io.EOF: the server ended the call, whose status RecvMsg tells.
	if err := cs.SendMsg(wrapperspb.Int32(n)); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if err := cs.CloseSend(); err != nil {
		return 0, err
	}
	got := 0
	for {
		if err := cs.RecvMsg(new(wrapperspb.Int32Value)); err != nil {
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			return got, err
		}
		got++
	}
}

func TestStreams(t *testing.T) {
	server, _ := guardtest.NewEngine(t, engine.FlowRule{Resource: countMethod, Threshold: 2})
	client, _ := guardtest.NewEngine(t)
	conn := serve(t, []grpc.ServerOption{grpc.StreamInterceptor(grpcmw.StreamServerInterceptor(server))},
		grpc.WithStreamInterceptor(grpcmw.StreamClientInterceptor(client)))
	if n, err := stream(t.Context(), conn, 3); err != nil || n != 3 {
		t.Fatalf("stream = %d, %v; want 3 messages", n, err)
	}
	if _, err := stream(t.Context(), conn, -1); status.Code(err) != codes.Internal {
		t.Fatalf("stream = %v, want Internal", err)
	}
	_, err := stream(t.Context(), conn, 1)
	checkBlocked(t, err, "too many requests")
	if got, want := guardtest.StatsOf(server, countMethod), (guardtest.Stats{Pass: 2, Block: 1, Complete: 2, Errors: 1}); got != want {
		t.Errorf("server stats = %+v, want %+v", got, want)
	}
	if got, want := guardtest.StatsOf(client, countMethod), (guardtest.Stats{Pass: 3, Complete: 3, Errors: 1}); got != want {
		t.Errorf("client stats = %+v, want %+v", got, want)
	}

	// A stream the caller abandons ends with its context.
	ctx, cancel := context.WithCancel(t.Context())
	if _, err := conn.NewStream(ctx, countDesc, countMethod); err != nil {
		t.Fatal(err)
	}
	cancel()
	guardtest.WaitFor(t, "the abandoned stream to complete", func() bool {
		return guardtest.StatsOf(client, countMethod).Complete == 4
	})
}

// gRPC ends a stream's context while RecvMsg reads its final status: a
// failed stream must count that status, every time, and not a
// cancellation.
func TestFailedStreamsCountTheirStatus(t *testing.T) {
	client, _ := guardtest.NewEngine(t)
	conn := serve(t, nil, grpc.WithStreamInterceptor(grpcmw.StreamClientInterceptor(client)))
	const n = 300
	for range n {
		if _, err := stream(t.Context(), conn, -1); status.Code(err) != codes.Internal {
			t.Fatalf("stream = %v, want Internal", err)
		}
	}
	if got, want := guardtest.StatsOf(client, countMethod), (guardtest.Stats{Pass: n, Complete: n, Errors: n}); got != want {
		t.Errorf("client stats = %+v, want %+v", got, want)
	}
}

// A stream nobody reads ends when its connection closes.
func TestUnreadStreamEndsWithItsConnection(t *testing.T) {
	client, _ := guardtest.NewEngine(t)
	conn := serve(t, nil, grpc.WithStreamInterceptor(grpcmw.StreamClientInterceptor(client)))
	if _, err := conn.NewStream(t.Context(), countDesc, countMethod); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	guardtest.WaitFor(t, "the unread stream to complete", func() bool {
		return guardtest.StatsOf(client, countMethod) == guardtest.Stats{Pass: 1, Complete: 1}
	})
}
