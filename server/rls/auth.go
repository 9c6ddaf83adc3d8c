package rls

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Access is what a method needs of the caller's token.
type Access int

const (
	// AccessDecide is what ShouldRateLimit needs: a token of a role the
	// HTTP check API allows.
	AccessDecide Access = iota + 1
	// AccessAny is what reflection needs: a valid token of any role.
	AccessAny
)

// Authorizer checks that a bearer token's secret gives access need; it
// returns an error wrapping ErrUnauthenticated (no such token, revoked or
// expired) or ErrPermissionDenied (a role without that access) when it
// does not.
type Authorizer func(ctx context.Context, secret string, need Access) error

// Refusals an Authorizer wraps: the interceptors answer them as the gRPC
// codes of the same names.
var (
	ErrUnauthenticated  = errors.New("unauthenticated")
	ErrPermissionDenied = errors.New("permission denied")
)

// healthPrefix is the health service's methods, open to every caller:
// Kubernetes probes carry no token.
var healthPrefix = "/" + grpc_health_v1.Health_ServiceDesc.ServiceName + "/"

// reflectionPrefix is the start of the reflection services' methods
// (v1 and v1alpha).
const reflectionPrefix = "/grpc.reflection."

// access is what method needs; ok is false for one every caller may call.
func access(method string) (need Access, ok bool) {
	switch {
	case strings.HasPrefix(method, healthPrefix):
		return 0, false
	case strings.HasPrefix(method, reflectionPrefix):
		return AccessAny, true
	}
	return AccessDecide, true
}

// guard checks the caller of method; nil lets it in.
func guard(ctx context.Context, authorize Authorizer, method string) error {
	need, ok := access(method)
	if !ok {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	if len(values) == 0 {
		return status.Error(codes.Unauthenticated, "credentials are required: authorization metadata \"Bearer <token>\"")
	}
	secret, ok := bearerSecret(values[0])
	if len(values) > 1 || !ok {
		return status.Error(codes.Unauthenticated, "the authorization metadata must be one \"Bearer <token>\"")
	}
	err := authorize(ctx, secret, need)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnauthenticated):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, ErrPermissionDenied):
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return status.Error(codes.Internal, "checking the token failed")
}

// bearerSecret reads the token of a value of the Bearer scheme, as the
// HTTP API reads its Authorization header: the scheme case-insensitive,
// followed by one or more spaces.
func bearerSecret(value string) (string, bool) {
	scheme, rest, _ := strings.Cut(value, " ")
	secret := strings.TrimLeft(rest, " ")
	return secret, strings.EqualFold(scheme, "Bearer") && secret != ""
}

func unaryGuard(authorize Authorizer) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := guard(ctx, authorize, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func streamGuard(authorize Authorizer) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := guard(ss.Context(), authorize, info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}
