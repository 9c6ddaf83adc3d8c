package rls_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

// TestMain runs the tests on SQLite files, or on PostgreSQL with
// SLUICE_TEST_DB=postgres (servertest.Main).
func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }

// startMs is the manual clock's start: statuses' numbers are exact on it.
const startMs = 1_000_000_000

// rls is a server with its gRPC listener, on a manual engine clock.
type rls struct {
	node  *servertest.Node
	clock *engine.ManualClock
	// nowOffset moves the server's time for tokens (expiry).
	nowOffset *atomic.Int64
	conn      *grpc.ClientConn
	editor    string // a token of role editor
}

func startRLS(t testing.TB, opts ...servertest.Option) *rls {
	t.Helper()
	return startRLSWith(t, false, opts...)
}

// tlsServer serves HTTPS on the Node's certificate.
type tlsServer struct {
	*server.Server
	certFile, keyFile string
}

func (s tlsServer) Serve(ln net.Listener) error { return s.ServeTLS(ln, s.certFile, s.keyFile) }

// startRLSWith is startRLS, serving both listeners over TLS if useTLS.
func startRLSWith(t testing.TB, useTLS bool, opts ...servertest.Option) *rls {
	t.Helper()
	return startRLSConfigured(t, useTLS, nil, opts...)
}

// startRLSConfigured is startRLSWith, the server's Config changed by
// configure (a Redis counter, say) when it is not nil.
func startRLSConfigured(t testing.TB, useTLS bool, configure func(*server.Config), opts ...servertest.Option) *rls {
	t.Helper()
	r := &rls{clock: engine.NewManualClock(startMs), nowOffset: &atomic.Int64{}}
	var certFile, keyFile string
	var srv *server.Server
	served := make(chan error, 1)
	// Registered first, so run last: after servertest's stop has shut the
	// server down.
	t.Cleanup(func() {
		if err := <-served; err != nil {
			t.Errorf("ServeGRPC returned %v after the shutdown, want nil", err)
		}
	})
	r.node = servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		var err error
		cfg := server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			BootstrapToken: servertest.AdminToken, PasswordCost: bcrypt.MinCost, TLS: useTLS,
			Now: func() time.Time { return time.Now().UTC().Add(time.Duration(r.nowOffset.Load())) },
		}
		if configure != nil {
			configure(&cfg)
		}
		srv, err = server.New(t.Context(), cfg)
		if err != nil || !useTLS {
			return srv, err
		}
		certFile, keyFile = env.CertFile, env.KeyFile
		return tlsServer{Server: srv, certFile: certFile, keyFile: keyFile}, nil
	}, append([]servertest.Option{servertest.EngineOptions(engine.Options{Clock: r.clock})}, opts...)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { served <- srv.ServeGRPC(ln, certFile, keyFile) }()
	creds := insecure.NewCredentials()
	if useTLS {
		if creds, err = credentials.NewClientTLSFromFile(certFile, ""); err != nil {
			t.Fatal(err)
		}
	}
	r.conn, err = grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.conn.Close() })
	// Named apart: replicas on one database share the token names.
	r.editor = r.token(t, "envoy-"+rand.Text(), "editor", "")
	return r
}

// token creates an API token and returns its secret.
func (r *rls) token(t testing.TB, name, role, expiresAt string) string {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"role":%q}`, name, role)
	if expiresAt != "" {
		body = fmt.Sprintf(`{"name":%q,"role":%q,"expiresAt":%q}`, name, role, expiresAt)
	}
	resp, got := r.node.Do(t, http.MethodPost, "/api/v1/tokens", strings.NewReader(body))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /tokens: %d %s", resp.StatusCode, got)
	}
	var created struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(got, &created); err != nil {
		t.Fatal(err)
	}
	return created.Token
}

// rule stores a rule, given as its JSON object, and returns its id.
func (r *rls) rule(t testing.TB, rule string) int64 {
	t.Helper()
	resp, got := r.node.Do(t, http.MethodPost, "/api/v1/rules", strings.NewReader(rule))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /rules %s: %d %s", rule, resp.StatusCode, got)
	}
	var created struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(got, &created); err != nil {
		t.Fatal(err)
	}
	return created.ID
}

// bearer is the test's context with token as a call's bearer token.
func bearer(t testing.TB, token string) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
}

// ask calls ShouldRateLimit as the editor.
func (r *rls) ask(t testing.TB, req *pb.RateLimitRequest) *pb.RateLimitResponse {
	t.Helper()
	resp, err := pb.NewRateLimitServiceClient(r.conn).ShouldRateLimit(bearer(t, r.editor), req)
	if err != nil {
		t.Fatalf("ShouldRateLimit(%v): %v", req, err)
	}
	return resp
}

// desc is a descriptor of key, value pairs.
func desc(kv ...string) *commonv3.RateLimitDescriptor {
	d := &commonv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &commonv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func request(domain string, ds ...*commonv3.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, Descriptors: ds}
}

// codes lists the statuses' codes and the overall one, last.
func codesOf(resp *pb.RateLimitResponse) string {
	var b strings.Builder
	for _, s := range resp.GetStatuses() {
		b.WriteString(s.GetCode().String() + " ")
	}
	return b.String() + "=> " + resp.GetOverallCode().String()
}

// counts are a resource's passes and blocks in the last second of the
// manual clock; zero for a resource the engine does not track.
func (r *rls) counts(resource string) (passes, blocks, shadowBlocks float64) {
	res := r.node.Engine.Lookup(resource)
	if res == nil {
		return 0, 0, 0
	}
	live := res.Live()
	return live.PassQps, live.BlockQps, live.ShadowBlockQps
}

func TestNestedDescriptorsMostSpecificWins(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"api-total","kind":"flow","resource":"edge:generic_key=api","threshold":5}`)
	r.rule(t, `{"name":"api-per-ip","kind":"hotspot","resource":"edge:generic_key=api/remote_address","paramKey":"remote_address","threshold":2}`)
	r.rule(t, `{"name":"api-bad-ip","kind":"flow","resource":"edge:generic_key=api/remote_address=10.0.0.9","threshold":1}`)
	// Only a prefix of a node with a rule: no limit of its own.
	r.rule(t, `{"name":"acme-per-user","kind":"hotspot","resource":"edge:tenant=acme/user","paramKey":"user","threshold":1}`)

	perIP := func(ip string) string {
		return codesOf(r.ask(t, request("edge", desc("generic_key", "api", "remote_address", ip))))
	}
	for i, want := range []string{"OK => OK", "OK => OK", "OVER_LIMIT => OVER_LIMIT"} {
		if got := perIP("10.0.0.1"); got != want {
			t.Errorf("10.0.0.1, call %d: %s, want %s (2 per address)", i+1, got, want)
		}
	}
	if got := perIP("10.0.0.2"); got != "OK => OK" {
		t.Errorf("another address: %s, want OK: its own count", got)
	}
	for i, want := range []string{"OK => OK", "OVER_LIMIT => OVER_LIMIT"} {
		if got := perIP("10.0.0.9"); got != want {
			t.Errorf("10.0.0.9, call %d: %s, want %s (its exact node: 1)", i+1, got, want)
		}
	}
	// The wildcard node's rule is not the exact node's: 10.0.0.9 counted
	// there only.
	if p, b, _ := r.counts("edge:generic_key=api/remote_address=10.0.0.9"); p != 1 || b != 1 {
		t.Errorf("exact node counts %v passes %v blocks, want 1 and 1", p, b)
	}
	if p, b, _ := r.counts("edge:generic_key=api/remote_address"); p != 3 || b != 1 {
		t.Errorf("wildcard node counts %v passes %v blocks, want 3 and 1", p, b)
	}
	// Two descriptors judged each on their own: the shorter one is the
	// node with api-total; one over limit makes the whole answer so.
	resp := r.ask(t, request("edge", desc("generic_key", "api"), desc("generic_key", "api", "remote_address", "10.0.0.1")))
	if got := codesOf(resp); got != "OK OVER_LIMIT => OVER_LIMIT" {
		t.Errorf("two descriptors: %s", got)
	}
	if l := resp.GetStatuses()[0].GetCurrentLimit(); l.GetName() != "api-total" || l.GetRequestsPerUnit() != 5 || l.GetUnit() != pb.RateLimitResponse_RateLimit_SECOND {
		t.Errorf("api-total's current_limit: %v", l)
	}
	// tenant=acme is only a prefix: no match, counted under the keys.
	if got := codesOf(r.ask(t, request("edge", desc("tenant", "acme")))); got != "OK => OK" {
		t.Errorf("a prefix node: %s", got)
	}
	if p, _, _ := r.counts("edge:tenant"); p != 1 {
		t.Errorf("a prefix node's call counted %v times under edge:tenant, want 1", p)
	}
	if p, _, _ := r.counts("edge:tenant=acme"); p != 0 {
		t.Errorf("a prefix node's call counted under the prefix: %v", p)
	}
}

func TestPerValueStatusesCountDown(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"per-user","kind":"hotspot","resource":"edge:user","paramKey":"user","threshold":2,"statIntervalMs":60000}`)
	ann := request("edge", desc("user", "ann"))
	for i, wantLeft := range []uint32{1, 0} {
		s := r.ask(t, ann).GetStatuses()[0]
		if s.GetCode() != pb.RateLimitResponse_OK || s.GetLimitRemaining() != wantLeft {
			t.Errorf("call %d: %v, want OK with %d left", i+1, s, wantLeft)
		}
		if l := s.GetCurrentLimit(); l.GetRequestsPerUnit() != 2 || l.GetUnit() != pb.RateLimitResponse_RateLimit_MINUTE || l.GetName() != "per-user" {
			t.Errorf("current_limit %v, want per-user 2 per MINUTE", l)
		}
	}
	s := r.ask(t, ann).GetStatuses()[0]
	if s.GetCode() != pb.RateLimitResponse_OVER_LIMIT || s.GetLimitRemaining() != 0 || s.GetDurationUntilReset().AsDuration() != time.Minute {
		t.Errorf("over: %v, want OVER_LIMIT, 0 left, reset in 1m (the passes were all now)", s)
	}
	if s := r.ask(t, request("edge", desc("user", "bob"))).GetStatuses()[0]; s.GetCode() != pb.RateLimitResponse_OK || s.GetLimitRemaining() != 1 {
		t.Errorf("bob, his own count: %v", s)
	}
	r.clock.Advance(60_000)
	if s := r.ask(t, ann).GetStatuses()[0]; s.GetCode() != pb.RateLimitResponse_OK {
		t.Errorf("a minute later: %v, want OK", s)
	}
}

func TestHitsAddend(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"five","kind":"flow","resource":"edge:generic_key=bulk","threshold":5}`)
	req := request("edge", desc("generic_key", "bulk"))
	req.HitsAddend = 3
	if s := r.ask(t, req).GetStatuses()[0]; s.GetCode() != pb.RateLimitResponse_OK || s.GetLimitRemaining() != 2 {
		t.Errorf("3 of 5: %v, want OK with 2 left", s)
	}
	if s := r.ask(t, req).GetStatuses()[0]; s.GetCode() != pb.RateLimitResponse_OVER_LIMIT {
		t.Errorf("3 more: %v, want OVER_LIMIT", s)
	}
	// The descriptor's own hits_addend wins over the request's.
	req.Descriptors[0].HitsAddend = wrapperspb.UInt64(2)
	if s := r.ask(t, req).GetStatuses()[0]; s.GetCode() != pb.RateLimitResponse_OK || s.GetLimitRemaining() != 0 {
		t.Errorf("2 more: %v, want OK with 0 left", s)
	}
	if p, b, _ := r.counts("edge:generic_key=bulk"); p != 5 || b != 3 {
		t.Errorf("counts %v passes %v blocks, want 5 and 3", p, b)
	}
}

func TestLimitOverride(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"hundred","kind":"flow","resource":"edge:generic_key=api","threshold":100}`)
	withLimit := desc("generic_key", "api")
	withLimit.Limit = &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_HOUR}
	req := request("edge", withLimit)
	for i, want := range []string{"OK", "OK", "OVER_LIMIT"} {
		s := r.ask(t, req).GetStatuses()[0]
		if s.GetCode().String() != want {
			t.Errorf("call %d: %v, want %s (the override's 2 per hour, not the rule's 100)", i+1, s, want)
		}
		if l := s.GetCurrentLimit(); l.GetRequestsPerUnit() != 2 || l.GetUnit() != pb.RateLimitResponse_RateLimit_HOUR {
			t.Errorf("call %d: current_limit %v, want 2 per HOUR", i+1, l)
		}
		if want == "OVER_LIMIT" && s.GetDurationUntilReset().AsDuration() != time.Hour {
			t.Errorf("reset in %v, want 1h", s.GetDurationUntilReset().AsDuration())
		}
	}
	// Still counted on the node's resource, which the console shows.
	if p, b, _ := r.counts("edge:generic_key=api"); p != 2 || b != 1 {
		t.Errorf("node counts %v passes %v blocks, want 2 and 1", p, b)
	}
	// Matching no node, the override holds each descriptor's values apart.
	unmatched := func(user string) string {
		d := desc("user", user)
		d.Limit = &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_MINUTE}
		return codesOf(r.ask(t, request("nowhere", d)))
	}
	if got := unmatched("ann") + ", " + unmatched("ann") + ", " + unmatched("bob"); got != "OK => OK, OVER_LIMIT => OVER_LIMIT, OK => OK" {
		t.Errorf("overrides of unmatched descriptors: %s, want ann's second over and bob's first OK", got)
	}
	if p, b, _ := r.counts("nowhere:user"); p != 2 || b != 1 {
		t.Errorf("unmatched resource counts %v passes %v blocks, want 2 and 1", p, b)
	}
	// Without the override, the rule decides again.
	if s := r.ask(t, request("edge", desc("generic_key", "api"))).GetStatuses()[0]; s.GetCode() != pb.RateLimitResponse_OK || s.GetCurrentLimit().GetName() != "hundred" {
		t.Errorf("without the override: %v", s)
	}
}

func TestShadowModeUnlimitedAndUnknownDomain(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"shadow-one","kind":"flow","resource":"edge:generic_key=trial","threshold":1,"mode":"shadow"}`)
	r.rule(t, `{"name":"free","kind":"flow","resource":"edge:generic_key=health","threshold":1,"enabled":false}`)
	for i := range 3 {
		resp := r.ask(t, request("edge", desc("generic_key", "trial"), desc("generic_key", "health")))
		if got := codesOf(resp); got != "OK OK => OK" {
			t.Fatalf("shadow and unlimited: %s", got)
		}
		// The shadow limit is reported as envoyproxy/ratelimit reports a
		// shadow_mode one: its limit, and what is left of it.
		shadow, unlimited := resp.GetStatuses()[0], resp.GetStatuses()[1]
		if l := shadow.GetCurrentLimit(); l.GetName() != "shadow-one" || l.GetRequestsPerUnit() != 1 || shadow.GetLimitRemaining() != 0 {
			t.Errorf("call %d, shadow descriptor: %v, want shadow-one's limit of 1, none left", i+1, shadow)
		}
		if unlimited.GetCurrentLimit() != nil {
			t.Errorf("call %d, unlimited descriptor: %v, want no limit", i+1, unlimited)
		}
	}
	if p, _, sb := r.counts("edge:generic_key=trial"); p != 3 || sb != 2 {
		t.Errorf("shadow rule's resource: %v passes %v shadow blocks, want 3 and 2", p, sb)
	}
	if p, _, _ := r.counts("edge:generic_key=health"); p != 3 {
		t.Errorf("unlimited node counted %v passes, want 3", p)
	}
	if p, _, _ := r.counts("edge:generic_key"); p != 0 {
		t.Errorf("unlimited node's calls counted as unmatched: %v", p)
	}
	s := r.ask(t, request("nowhere", desc("a", "1", "b", "2"))).GetStatuses()[0]
	if s.GetCode() != pb.RateLimitResponse_OK || s.GetCurrentLimit() != nil {
		t.Errorf("unknown domain: %v, want OK without a limit", s)
	}
	if p, _, _ := r.counts("nowhere:a/b"); p != 1 {
		t.Errorf("unknown domain counted %v under nowhere:a/b, want 1", p)
	}
}

func TestReplaces(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"api2-total","kind":"flow","resource":"edge:generic_key=api2","threshold":1}`)
	r.rule(t, `{"name":"api2-user","kind":"hotspot","resource":"edge:generic_key=api2/user","paramKey":"user","threshold":100,"replaces":"api2-total"}`)
	both := request("edge", desc("generic_key", "api2"), desc("generic_key", "api2", "user", "ann"))
	for range 2 {
		if got := codesOf(r.ask(t, both)); got != "OK OK => OK" {
			t.Fatalf("api2-total replaced: %s", got)
		}
	}
	if p, b, _ := r.counts("edge:generic_key=api2"); p != 0 || b != 0 {
		t.Errorf("the replaced descriptor was counted: %v passes %v blocks", p, b)
	}
	alone := request("edge", desc("generic_key", "api2"))
	if got := codesOf(r.ask(t, alone)) + " " + codesOf(r.ask(t, alone)); got != "OK => OK OVER_LIMIT => OVER_LIMIT" {
		t.Errorf("api2-total alone: %s, want its limit of 1", got)
	}

	// A shadow rule replaces as an enforce one does; a disabled one
	// (unlimited) replaces nothing.
	r.rule(t, `{"name":"api3-total","kind":"flow","resource":"edge:generic_key=api3","threshold":1}`)
	r.rule(t, `{"name":"api3-user","kind":"hotspot","resource":"edge:generic_key=api3/user","paramKey":"user","threshold":100,"mode":"shadow","replaces":"api3-total"}`)
	r.rule(t, `{"name":"api4-total","kind":"flow","resource":"edge:generic_key=api4","threshold":1}`)
	r.rule(t, `{"name":"api4-user","kind":"hotspot","resource":"edge:generic_key=api4/user","paramKey":"user","threshold":100,"enabled":false,"replaces":"api4-total"}`)
	for i, want := range []string{"OK OK => OK", "OK OK => OK"} {
		if got := codesOf(r.ask(t, request("edge", desc("generic_key", "api3"), desc("generic_key", "api3", "user", "ann")))); got != want {
			t.Errorf("replaced by a shadow rule, call %d: %s, want %s", i+1, got, want)
		}
	}
	for i, want := range []string{"OK OK => OK", "OVER_LIMIT OK => OVER_LIMIT"} {
		if got := codesOf(r.ask(t, request("edge", desc("generic_key", "api4"), desc("generic_key", "api4", "user", "ann")))); got != want {
			t.Errorf("named by a disabled rule, call %d: %s, want %s", i+1, got, want)
		}
	}
}

func TestHourQuotaAnswersHour(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"hourly","kind":"flow","resource":"edge:generic_key=export","threshold":1000,"statIntervalMs":3600000}`)
	s := r.ask(t, request("edge", desc("generic_key", "export"))).GetStatuses()[0]
	if l := s.GetCurrentLimit(); l.GetRequestsPerUnit() != 1000 || l.GetUnit() != pb.RateLimitResponse_RateLimit_HOUR || s.GetLimitRemaining() != 999 {
		t.Errorf("hour quota: %v, want 1000 per HOUR, 999 left", s)
	}
	if d := s.GetDurationUntilReset().AsDuration(); d != time.Hour {
		t.Errorf("reset in %v, want 1h: the one pass leaves then", d)
	}
}

func TestRuleWritesReachTheIndex(t *testing.T) {
	r := startRLS(t)
	req := request("edge", desc("generic_key", "late"))
	if s := r.ask(t, req).GetStatuses()[0]; s.GetCurrentLimit() != nil {
		t.Fatalf("before the rule: %v", s)
	}
	id := r.rule(t, `{"name":"late","kind":"flow","resource":"edge:generic_key=late","threshold":1}`)
	if s := r.ask(t, req).GetStatuses()[0]; s.GetCurrentLimit().GetName() != "late" {
		t.Fatalf("after the rule's write: %v, want its limit", s)
	}
	resp, got := r.node.Do(t, http.MethodDelete, fmt.Sprintf("/api/v1/rules/%d", id), nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, got)
	}
	if s := r.ask(t, req).GetStatuses()[0]; s.GetCode() != pb.RateLimitResponse_OK || s.GetCurrentLimit() != nil {
		t.Fatalf("after the delete: %v, want no limit", s)
	}
}

func TestBadRequestsCountNothing(t *testing.T) {
	r := startRLS(t)
	r.rule(t, `{"name":"per-user","kind":"hotspot","resource":"edge:user","paramKey":"user","threshold":100}`)
	good := func() *commonv3.RateLimitDescriptor { return desc("user", "ann") }
	many := func(n int) []*commonv3.RateLimitDescriptor {
		ds := make([]*commonv3.RateLimitDescriptor, n)
		for i := range ds {
			ds[i] = good()
		}
		return ds
	}
	entries := func(n int) *commonv3.RateLimitDescriptor {
		d := desc()
		for i := range n {
			d.Entries = append(d.Entries, &commonv3.RateLimitDescriptor_Entry{Key: fmt.Sprintf("k%d", i), Value: "v"})
		}
		return d
	}
	noUnit := good()
	noUnit.Limit = &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1}
	tooManyHits := good()
	tooManyHits.HitsAddend = wrapperspb.UInt64(1_000_000_001)
	negative := good()
	negative.IsNegativeHits = true
	longKeys := desc()
	for i := range 10 {
		longKeys.Entries = append(longKeys.Entries, &commonv3.RateLimitDescriptor_Entry{Key: strings.Repeat("k", 30) + fmt.Sprint(i)})
	}
	cases := []struct {
		name  string
		req   *pb.RateLimitRequest
		code  codes.Code
		field string
	}{
		{"empty domain", request("", good()), codes.InvalidArgument, "domain:"},
		{"no descriptors", request("edge"), codes.InvalidArgument, "descriptors:"},
		{"65 descriptors", request("edge", many(65)...), codes.InvalidArgument, "descriptors: at most 64"},
		{"no entries", request("edge", good(), desc()), codes.InvalidArgument, "descriptors[1].entries:"},
		{"17 entries", request("edge", good(), entries(17)), codes.InvalidArgument, "descriptors[1].entries: at most 16"},
		// Over the message size before it is read.
		{"10,000 entries", request("edge", good(), entries(10_000)), codes.ResourceExhausted, ""},
		{"empty key", request("edge", good(), desc("user", "ann", "", "x")), codes.InvalidArgument, "descriptors[1].entries[1].key:"},
		{"huge value", request("edge", good(), desc("user", strings.Repeat("v", 300))), codes.InvalidArgument, "descriptors[1].entries[0].value:"},
		{"keys too long a name", request("edge", good(), longKeys), codes.InvalidArgument, "descriptors[1].entries: the domain and keys"},
		{"hits_addend", &pb.RateLimitRequest{Domain: "edge", Descriptors: many(1), HitsAddend: 1_000_000_001}, codes.InvalidArgument, "hits_addend:"},
		{"a descriptor's hits_addend", request("edge", good(), tooManyHits), codes.InvalidArgument, "descriptors[1].hits_addend:"},
		{"negative hits", request("edge", good(), negative), codes.InvalidArgument, "descriptors[1].is_negative_hits:"},
		{"override without a unit", request("edge", good(), noUnit), codes.InvalidArgument, "descriptors[1].limit.unit:"},
		{"over the message size", request("edge", good(), desc("user", strings.Repeat("v", 70_000))), codes.ResourceExhausted, ""},
	}
	client := pb.NewRateLimitServiceClient(r.conn)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := client.ShouldRateLimit(bearer(t, r.editor), c.req)
			if status.Code(err) != c.code || !strings.Contains(status.Convert(err).Message(), c.field) {
				t.Errorf("%v, want %v naming %q", err, c.code, c.field)
			}
		})
	}
	if p, b, _ := r.counts("edge:user"); p != 0 || b != 0 {
		t.Errorf("bad requests counted %v passes %v blocks", p, b)
	}
	if got := r.node.Engine.Lookup("edge:k0/k1/k2"); got != nil {
		t.Errorf("a bad request's unmatched resource was made")
	}
}

func TestAuthentication(t *testing.T) {
	r := startRLS(t)
	viewer := r.token(t, "viewer", "viewer", "")
	instance := r.token(t, "fleet", "instance", "")
	admin := r.token(t, "ops", "admin", "")
	revoked := r.token(t, "gone", "editor", "")
	expiring := r.token(t, "brief", "editor", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	resp, got := r.node.Do(t, http.MethodGet, "/api/v1/tokens", nil)
	var list struct {
		Items []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := json.Unmarshal(got, &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /tokens: %d %s", resp.StatusCode, got)
	}
	for _, tok := range list.Items {
		if tok.Name == "gone" {
			if resp, got := r.node.Do(t, http.MethodDelete, fmt.Sprintf("/api/v1/tokens/%d", tok.ID), nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("revoking: %d %s", resp.StatusCode, got)
			}
		}
	}
	r.nowOffset.Store(int64(2 * time.Hour))

	client := pb.NewRateLimitServiceClient(r.conn)
	req := request("edge", desc("generic_key", "api"))
	cases := []struct {
		name string
		ctx  context.Context
		want codes.Code
	}{
		{"no token", t.Context(), codes.Unauthenticated},
		{"not a bearer", metadata.AppendToOutgoingContext(t.Context(), "authorization", "Basic YWRtaW46YWRtaW4="), codes.Unauthenticated},
		{"unknown token", bearer(t, "slc_nonsense"), codes.Unauthenticated},
		{"revoked", bearer(t, revoked), codes.Unauthenticated},
		{"expired", bearer(t, expiring), codes.Unauthenticated},
		{"viewer", bearer(t, viewer), codes.PermissionDenied},
		{"instance", bearer(t, instance), codes.OK},
		{"editor", bearer(t, r.editor), codes.OK},
		{"admin", bearer(t, admin), codes.OK},
	}
	for _, c := range cases {
		if _, err := client.ShouldRateLimit(c.ctx, req); status.Code(err) != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if p, _, _ := r.counts("edge:generic_key"); p != 3 {
		t.Errorf("%v calls counted, want the 3 allowed ones", p)
	}

	health, err := grpc_health_v1.NewHealthClient(r.conn).Check(t.Context(), &grpc_health_v1.HealthCheckRequest{})
	if err != nil || health.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Errorf("health without a token: %v, %v", health, err)
	}
	health, err = grpc_health_v1.NewHealthClient(r.conn).Check(t.Context(), &grpc_health_v1.HealthCheckRequest{Service: pb.RateLimitService_ServiceDesc.ServiceName})
	if err != nil || health.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Errorf("the service's health: %v, %v", health, err)
	}

	services := func(ctx context.Context) ([]string, error) {
		stream, err := reflectionpb.NewServerReflectionClient(r.conn).ServerReflectionInfo(ctx)
		if err != nil {
			return nil, err
		}
		// A stream the server refused fails Send with io.EOF, or not,
		// as the refusal races the request: its status is Recv's.
		if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		resp, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		var names []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		return names, stream.CloseSend()
	}
	if _, err := services(t.Context()); status.Code(err) != codes.Unauthenticated {
		t.Errorf("reflection without a token: %v, want Unauthenticated", err)
	}
	names, err := services(bearer(t, viewer))
	if err != nil || !strings.Contains(strings.Join(names, " "), pb.RateLimitService_ServiceDesc.ServiceName) {
		t.Errorf("reflection as a viewer: %v, %v", names, err)
	}
}

func TestTLS(t *testing.T) {
	r := startRLSWith(t, true, servertest.TLS())
	if s := r.ask(t, request("edge", desc("user", "ann"))); s.GetOverallCode() != pb.RateLimitResponse_OK {
		t.Errorf("over TLS: %v", s)
	}
	plain, err := grpc.NewClient(r.conn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := grpc_health_v1.NewHealthClient(plain).Check(t.Context(), &grpc_health_v1.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("plain HTTP/2 to the TLS listener: %v, want Unavailable", err)
	}
}

// TestReplicaFollowsRuleWrites runs two servers on one PostgreSQL
// database: a rule written through one reaches the other's index.
func TestReplicaFollowsRuleWrites(t *testing.T) {
	db := servertest.SharedDatabase(t)
	a, b := startRLS(t, servertest.DBPath(db)), startRLS(t, servertest.DBPath(db))
	req := request("edge", desc("generic_key", "shared"))
	if s := b.ask(t, req).GetStatuses()[0]; s.GetCurrentLimit() != nil {
		t.Fatalf("before the write: %v", s)
	}
	a.rule(t, `{"name":"shared","kind":"flow","resource":"edge:generic_key=shared","threshold":3}`)
	servertest.WaitUntil(t, "the other replica's RLS to answer the rule's limit", 10*time.Second, func() bool {
		return b.ask(t, req).GetStatuses()[0].GetCurrentLimit().GetName() == "shared"
	})
}

// BenchmarkShouldRateLimit asks for one descriptor of a per-value rule
// over a real connection, from parallel clients.
func BenchmarkShouldRateLimit(b *testing.B) {
	r := startRLS(b, servertest.DiscardLogs())
	r.rule(b, `{"name":"per-user","kind":"hotspot","resource":"edge:user","paramKey":"user","threshold":1000000000}`)
	client := pb.NewRateLimitServiceClient(r.conn)
	ctx := bearer(b, r.editor)
	b.ReportAllocs()
	b.RunParallel(func(p *testing.PB) {
		req := request("edge", desc("user", "ann"))
		for p.Next() {
			if _, err := client.ShouldRateLimit(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
