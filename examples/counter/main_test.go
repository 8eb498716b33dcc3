package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// call sends one 2026-07-28 request to the endpoint's server, as a
// transport would, and returns its status and JSON-RPC answer.
func call(t *testing.T, s *stateless.Server, method, name, params, key, token string) (int, map[string]any) {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {stateless.Version20260728}, "Mcp-Method": {method}}
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if params != "" {
		params += ","
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Body: []byte(body), Endpoint: "https://counter.example.com/mcp"})
	var m map[string]any
	if err := json.Unmarshal(resp.Body, &m); err != nil {
		t.Fatalf("%s: %v: %s", method, err, resp.Body)
	}
	return resp.Status, m
}

// TestCountsOnce: from this module, with nothing but the public API, a
// keyed side-effecting call runs once and its retry replays it (the
// endpoint's idempotency claims), and typed tools need no schema options.
func TestCountsOnce(t *testing.T) {
	cfg, err := endpoint.LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ep, err := newEndpoint(cfg, endpoint.Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Server.Verify(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		status, m := call(t, ep.Server, "tools/call", "count_add", `"name":"count_add","arguments":{"n":5}`, "add-5-once", "")
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		meta, _ := res["_meta"].(map[string]any)
		if status != 200 || sc["count"] != float64(5) {
			t.Fatalf("call %d: %d %v", i, status, m)
		}
		if _, replayed := meta[stateless.MetaReplay]; replayed != (i == 1) {
			t.Errorf("call %d: replay marker %v in %v", i, replayed, meta)
		}
	}
	if _, m := call(t, ep.Server, "tools/call", "count_get", `"name":"count_get","arguments":{}`, "", ""); !strings.Contains(toJSON(m), `"count":5`) {
		t.Errorf("count_get: %v", m)
	}
	if _, m := call(t, ep.Server, "tools/call", "count_add", `"name":"count_add","arguments":{"n":"five"}`, "", ""); !strings.Contains(toJSON(m), `"isError":true`) {
		t.Errorf("an argument of the wrong type: %v", m)
	}
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
	status, m := call(t, ep.Server, "tools/call", "count_add", `"name":"count_add","arguments":{"n":1}`, "", "")
	if status != 401 {
		t.Errorf("no token: %d %v", status, m)
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

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
