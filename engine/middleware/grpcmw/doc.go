// Package grpcmw guards gRPC calls with a Sluice engine: interceptors for
// servers and clients, unary and streaming. Each call is a resource named
// by its full method ("/orders.Orders/Get"); a blocked call ends with
// codes.ResourceExhausted, and the handler's error and latency feed the
// resource's breakers and statistics.
//
//	srv := grpc.NewServer(
//		grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(eng)),
//		grpc.StreamInterceptor(grpcmw.StreamServerInterceptor(eng)),
//	)
//
// The interceptors do not recover panics: a panicking handler's call is
// counted as an error and the panic goes on, to a recovery interceptor
// chained before this one or to the process.
package grpcmw
