package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sluicehq/sluice/server/servertest"
)

var grpcListeningAddr = regexp.MustCompile(`msg="listening for gRPC[^"]*" addr=(\S+)`)

func TestRunServesGRPCWhenAsked(t *testing.T) {
	dir := t.TempDir()
	r := startSluice(t, dir, []string{"--addr", "127.0.0.1:0", "--db", "{dir}/grpc.db"},
		map[string]string{"SLUICE_GRPC_ADDR": "127.0.0.1:0"})
	var addr string
	servertest.WaitUntil(t, "the gRPC listening log line", 10*time.Second, func() bool {
		if m := grpcListeningAddr.FindStringSubmatch(r.stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health, err := grpc_health_v1.NewHealthClient(conn).Check(t.Context(), &grpc_health_v1.HealthCheckRequest{})
	if err != nil || health.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v, %v", health, err)
	}
	r.stop(t)
	if _, err := grpc_health_v1.NewHealthClient(conn).Check(t.Context(), &grpc_health_v1.HealthCheckRequest{}); err == nil {
		t.Error("the gRPC server still answers after run returned")
	}
}

func TestRunServesNoGRPCUnlessAsked(t *testing.T) {
	r := startSluice(t, t.TempDir(), []string{"--addr", "127.0.0.1:0", "--db", "{dir}/plain.db"}, nil)
	r.stop(t)
	if strings.Contains(r.stderr.String(), "gRPC") {
		t.Errorf("a gRPC listener without --grpc-addr:\n%s", r.stderr.String())
	}
}

func TestRunRefusesABusyGRPCAddr(t *testing.T) {
	busy := listenBusy(t)
	_, stderr, code := runProcess(t, "--addr", "127.0.0.1:0", "--db", t.TempDir()+"/busy.db", "--grpc-addr", busy)
	if code == 0 || !strings.Contains(stderr, "listen on "+busy) {
		t.Errorf("exit %d, stderr %q; want a failure naming %s", code, stderr, busy)
	}
}
