package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestCountsOnce: from this module, with nothing but the public API, a
// keyed side-effecting call runs once and its retry replays it (the
// endpoint's idempotency claims), and typed tools need no schema options.
func TestCountsOnce(t *testing.T) {
	ep := localCounter(t, nil)
	if err := ep.Server.Verify(); err != nil {
		t.Fatal(err)
	}
	c := mcptest.New(t, ep.Server)
	for i := range 2 {
		a := c.CallTool("count_add", addIn{N: 5}, mcptest.IdempotencyKey("add-5-once"))
		if a.IsError() || a.Structured()["count"] != float64(5) || a.Replayed() != (i == 1) {
			t.Fatalf("call %d: %s", i, a.Raw)
		}
	}
	if a := c.CallTool("count_get", nil); a.Structured()["count"] != float64(5) {
		t.Errorf("count_get: %s", a.Raw)
	}
	if a := c.CallTool("count_add", map[string]any{"n": "five"}); !a.IsError() || a.Error != nil {
		t.Errorf("an argument of the wrong type: %s", a.Raw)
	}
}

// TestCountsPerCaller: each caller has a count of its own, written
// through the endpoint's items, and a write that meets another's change
// is answered state_changed with nothing written.
func TestCountsPerCaller(t *testing.T) {
	ep := localCounter(t, nil)
	alice, bob := mcptest.New(t, ep.Server), mcptest.New(t, ep.Server)
	alice.Principal, bob.Principal = "alice", "bob"
	alice.CallTool("count_add", addIn{N: 2})
	bob.CallTool("count_add", addIn{N: 40})
	if a := alice.CallTool("count_get", nil); a.Structured()["count"] != float64(2) {
		t.Fatalf("alice: %s", a.Raw)
	}
	if b := bob.CallTool("count_get", nil); b.Structured()["count"] != float64(40) {
		t.Fatalf("bob: %s", b.Raw)
	}
	// Another write lands between add's read and its write.
	c := &counter{items: ep.Items}
	racing := &racingTable{Table: ep.Items}
	c.items = racing
	_, _, err := c.add(context.Background(), &stateless.ToolRequest{Call: &stateless.Call{Principal: "alice"}}, addIn{N: 1})
	var te *mcperr.ToolError
	if !errors.As(err, &te) || te.Kind() != mcperr.ToolKindStateChanged {
		t.Fatalf("a write that met another: %v", err)
	}
	if a := alice.CallTool("count_get", nil); a.Structured()["count"] != float64(3) {
		t.Fatalf("after the race, want only the other write's 1: %s", a.Raw)
	}
}

// racingTable adds 1 to the count itself before each write it is given.
type racingTable struct{ items.Table }

func (r *racingTable) Write(ctx context.Context, ops ...items.Op) error {
	if err := r.Table.Write(ctx, items.Update(ops[0].Key()).Add("n", 1)); err != nil {
		return err
	}
	return r.Table.Write(ctx, ops...)
}

// TestProductionComposition: configured as template.yaml configures a
// function on Lambda, the endpoint has its claims in DynamoDB (a
// claims.Transactor, so that a tool's own writes commit with its claim),
// and is protected: a call without a token is refused 401 with the
// challenge that sends the client to the protected-resource metadata.
// Nothing is called at start: every AWS client and the issuer's keys are
// fetched on first use.
func TestProductionComposition(t *testing.T) {
	env := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":   "127.0.0.1:9001",
		"AWS_LAMBDA_FUNCTION_NAME": "counter",
		"MCP_CLAIMS_TABLE":         "counter-claims",
		"MCP_STATE_KMS_KEY":        "alias/counter-state",
		"MCP_AUTH_ISSUER":          "https://issuer.example.com",
		"MCP_AUDIENCE":             "https://counter.example.com/mcp",
		"MCP_STREAM_EVENTS":        "rest",
	}
	cfg, err := endpoint.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ep, err := newEndpoint(cfg, endpoint.Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ep.Claims.(claims.Transactor); !ok || !cfg.InLambda || cfg.ClaimsTable != "counter-claims" {
		t.Errorf("claims %T, in Lambda %v, table %q", ep.Claims, cfg.InLambda, cfg.ClaimsTable)
	}
	c := mcptest.New(t, ep.Server)
	c.Endpoint = cfg.Audience
	if a := c.CallTool("count_add", addIn{N: 1}); a.Status != 401 {
		t.Errorf("no token: %d %s", a.Status, a.Raw)
	}
	adm := ep.Server.Admit(context.Background(), cfg.Audience, http.Header{})
	if adm.Refusal == nil || !strings.Contains(adm.Refusal.Challenge(), `resource_metadata="https://counter.example.com/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("the authorizer's decision without a token: %+v", adm)
	}
	// Without an issuer, on Lambda, the endpoint refuses to start.
	delete(env, "MCP_AUTH_ISSUER")
	if _, err := endpoint.LoadConfig(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "MCP_AUTH_ISSUER") {
		t.Errorf("no issuer on Lambda: %v", err)
	}
}

// TestAuditRunsAsTask: a task tool's call is answered with a task, which
// the endpoint's worker runs (in this process, locally) and tasks/get
// reports completed with the tool's result.
func TestAuditRunsAsTask(t *testing.T) {
	ep := localCounter(t, nil)
	c := mcptest.New(t, ep.Server)
	c.Capabilities = map[string]any{"extensions": map[string]any{stateless.ExtensionTasks: map[string]any{}}}
	c.CallTool("count_add", addIn{N: 7})
	created := c.CallTool("count_audit", nil)
	id, _ := created.Result["taskId"].(string)
	if id == "" || created.Result["resultType"] != "task" {
		t.Fatalf("not a task: %s", created.Raw)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := c.Call("tasks/get", map[string]any{"taskId": id})
		if a.Result["status"] == "completed" {
			res, _ := a.Result["result"].(map[string]any)
			if sc, _ := res["structuredContent"].(map[string]any); sc["count"] != float64(7) {
				t.Fatalf("completed with %s", a.Raw)
			}
			return
		}
		if a.Error != nil || a.Result["status"] != "working" || time.Now().After(deadline) {
			t.Fatalf("polling: %s", a.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRateLimit: with MCP_RATE_LIMIT, a caller's requests over the limit
// in a window are refused retryably with the time left, and another
// caller is not.
func TestRateLimit(t *testing.T) {
	ep := localCounter(t, map[string]string{"MCP_RATE_LIMIT": "3/1h"})
	alice, bob := mcptest.New(t, ep.Server), mcptest.New(t, ep.Server)
	alice.Principal, bob.Principal = "alice", "bob"
	for i := range 3 {
		if a := alice.CallTool("count_get", nil); a.IsError() {
			t.Fatalf("call %d: %s", i, a.Raw)
		}
	}
	a := alice.CallTool("count_get", nil)
	if a.Error == nil || a.Header.Get("Retry-After") == "" || !strings.Contains(string(a.Error.Data), "retryAfterMs") {
		t.Fatalf("over the limit: %d %s", a.Status, a.Raw)
	}
	if b := bob.CallTool("count_get", nil); b.IsError() {
		t.Fatalf("another caller: %s", b.Raw)
	}
}

// localCounter is the counter's endpoint as it runs locally, configured
// by env.
func localCounter(t *testing.T, env map[string]string) *endpoint.Endpoint {
	t.Helper()
	cfg, err := endpoint.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ep, err := newEndpoint(cfg, endpoint.Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}
