package grpcmw_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/grpcmw"
)

// BenchmarkUnaryServer compares a handler called through the server
// interceptor with the handler alone, in the call's context as gRPC gives
// it (a peer); the difference is the interceptor's cost per call. A real
// connection would bury it under the transport's.
func BenchmarkUnaryServer(b *testing.B) {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}})
	req := wrapperspb.String("ok")
	resp := wrapperspb.String("done")
	handler := func(context.Context, any) (any, error) { return resp, nil }
	info := &grpc.UnaryServerInfo{FullMethod: doMethod}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := handler(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, br := range []struct {
		name  string
		rules []engine.FlowRule
		opts  []grpcmw.Option
	}{
		{name: "no rule"},
		{name: "passing rule", rules: []engine.FlowRule{{Resource: doMethod, Threshold: 1e12}}},
		{
			name: "passing rule, ip param", rules: []engine.FlowRule{{Resource: doMethod, Threshold: 1e12}},
			opts: []grpcmw.Option{grpcmw.WithParam(grpcmw.ClientIP())},
		},
	} {
		eng := engine.New(engine.Options{})
		b.Cleanup(eng.Close)
		if err := eng.LoadFlowRules(br.rules); err != nil {
			b.Fatal(err)
		}
		icpt := grpcmw.UnaryServerInterceptor(eng, br.opts...)
		b.Run("guarded/"+br.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := icpt(ctx, req, info, handler); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
