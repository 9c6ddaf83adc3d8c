package clients_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/clients/gen/sluiceapi"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

// newClient starts a server on a real SQLite file and a real listener, and
// answers a generated client that calls it as the bootstrap admin.
func newClient(t *testing.T) *sluiceapi.ClientWithResponses {
	t.Helper()
	node := servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		return server.New(t.Context(), server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			BootstrapToken: servertest.AdminToken, PasswordCost: bcrypt.MinCost,
		})
	})
	client, err := sluiceapi.NewClientWithResponses(node.URL, sluiceapi.WithRequestEditorFn(
		func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// TestGeneratedClientDrivesTheRuleFlow creates a rule, lists it, asks for
// the plan of an apply that updates it and reads its history, through the
// Go client generated from the spec: each answer must decode into the
// generated types (an apply plan's from and to are any JSON value) and say
// what the server did.
func TestGeneratedClientDrivesTheRuleFlow(t *testing.T) {
	client := newClient(t)
	ctx := t.Context()

	created, err := client.CreateRuleWithResponse(ctx, &sluiceapi.CreateRuleParams{}, sluiceapi.ServerRuleContent{
		Name: new("orders-qps"), Kind: sluiceapi.ServerRuleContentKindFlow,
		Resource: new("GET:/api/orders"), Threshold: new(100.0),
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.JSON201 == nil {
		t.Fatalf("create: %d %s", created.StatusCode(), created.Body)
	}
	id := created.JSON201.Id
	if since := time.Since(created.JSON201.CreatedAt); since < 0 || since > time.Minute {
		t.Errorf("create: createdAt %v, want a moment ago", created.JSON201.CreatedAt)
	}

	listed, err := client.ListRulesWithResponse(ctx, &sluiceapi.ListRulesParams{Resource: new("GET:/api/orders")})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if listed.JSON200 == nil {
		t.Fatalf("list: %d %s", listed.StatusCode(), listed.Body)
	}
	if items := listed.JSON200.Items; listed.JSON200.Total != 1 || len(items) != 1 || items[0].Id != id || *items[0].Name != "orders-qps" {
		t.Fatalf("list: %s, want the one rule created, id %d", listed.Body, id)
	}

	planned, err := client.ApplyRulesWithResponse(ctx, &sluiceapi.ApplyRulesParams{DryRun: new(true)}, sluiceapi.ServerApplyRequest{
		Rules: []sluiceapi.ServerRuleContent{{
			Name: new("orders-qps"), Kind: sluiceapi.ServerRuleContentKindFlow,
			Resource: new("GET:/api/orders"), Threshold: new(250.0),
			Enabled: new(false), Description: new("sale cap"), App: new("checkout"),
		}},
	})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if planned.JSON200 == nil {
		t.Fatalf("apply: %d %s", planned.StatusCode(), planned.Body)
	}
	plan := planned.JSON200
	if !plan.DryRun || len(plan.Created) != 0 || len(plan.Deleted) != 0 || len(plan.Unchanged) != 0 || len(plan.Updated) != 1 {
		t.Fatalf("apply: %s, want a dry run that updates orders-qps only", planned.Body)
	}
	update := plan.Updated[0]
	if update.Name != "orders-qps" || update.Kind != "flow" || update.Resource != "GET:/api/orders" {
		t.Errorf("apply: updates %s %s %s, want orders-qps, a flow rule on GET:/api/orders", update.Name, update.Kind, update.Resource)
	}
	got := map[string][2]any{}
	for _, c := range update.Changes {
		got[c.Field] = [2]any{c.From, c.To}
	}
	want := map[string][2]any{
		"app":         {nil, "checkout"},
		"description": {"", "sale cap"},
		"enabled":     {true, false},
		"threshold":   {float64(100), float64(250)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("apply: changes %v, want %v", got, want)
	}

	history, err := client.ListRuleRevisionsWithResponse(ctx, id, &sluiceapi.ListRuleRevisionsParams{})
	if err != nil {
		t.Fatalf("revisions: %v", err)
	}
	if history.JSON200 == nil {
		t.Fatalf("revisions: %d %s", history.StatusCode(), history.Body)
	}
	revs := history.JSON200.Items
	if len(revs) != 1 || revs[0].Version != 1 || revs[0].Action != sluiceapi.Create || *revs[0].Rule.Threshold != 100 || !revs[0].Rule.CreatedAt.Equal(created.JSON201.CreatedAt) {
		t.Errorf("revisions: %s, want only the creation (version 1, threshold 100, its rule created as answered): a dry run writes nothing", history.Body)
	}
}
