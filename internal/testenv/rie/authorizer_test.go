package rie

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/runner"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// doorTokens is a TokenAuthenticator: token -> scopes; "keys-down" cannot be
// checked (the issuer's keys out of reach), any other is expired.
type doorTokens map[string][]string

func (d doorTokens) Authenticate(ctx context.Context, token, audience string) (string, []string, *mcperr.Error) {
	if token == "keys-down" {
		return "", nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, errors.New("jwks unreachable"))
	}
	scopes, ok := d[token]
	if !ok {
		return "", nil, mcperr.Wrap(mcperr.KindUnauthorized, errors.New("token expired"))
	}
	return "jwt:https://issuer.example#" + token, scopes, nil
}

const doorEndpoint = "https://api.example/mcp"

// doorServer is the endpoint behind the door: protected, one tool that
// needs notes:write, browser pages of one origin, the registration
// facade; observed into log. docs are its OAuth documents.
func doorServer(log io.Writer) (srv *stateless.Server, docs *auth.Documents) {
	ob := observe.New(log, observe.Options{Function: "fn"})
	res := &auth.Resource{Tokens: doorTokens{"reader": {"notes:read"}}, ScopesSupported: []string{"notes:read", "notes:write"},
		Registration: &auth.Registration{ClientID: "c", AuthorizationEndpoint: "https://idp.example/authorize", TokenEndpoint: "https://idp.example/token"}}
	srv = stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Observe: ob.Observe,
		AllowedOrigins: []string{"https://app.example"},
		Auth:           &stateless.AuthOptions{Authenticator: res}})
	stateless.AddTool(srv, &stateless.Tool{Name: "notes_add", Scopes: []string{"notes:write"}},
		func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			return &stateless.CallToolResult{}, struct{}{}, nil
		})
	return srv, &auth.Documents{Server: srv, Resource: res}
}

// runInLambda serves srv in this process as the function does on Lambda
// when some of its answers stream (its own runtime, pkg/runner), under a
// stand-in Runtime API, until the test ends.
func runInLambda(t *testing.T, srv *stateless.Server, docs *auth.Documents) *runtimeapi.Runtime {
	t.Helper()
	rt, err := runtimeapi.Start(runtimeapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_LAMBDA_RUNTIME_API", rt.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(ctx, srv, runner.Options{InLambda: true, Endpoint: doorEndpoint, StreamKinds: []apigw.Kind{apigw.KindREST}, Documents: docs})
	}()
	t.Cleanup(func() {
		cancel()
		rt.Stop()
		<-done
	})
	return rt
}

// requestLines are the request lines written since the last call.
func requestLines(t *testing.T, log *syncbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log.Take()), "\n") {
		var m map[string]any
		if line == "" || json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "request" {
			continue
		}
		out = append(out, m)
	}
	return out
}

// TestStreamingDoorAuthorizerOfItsOwn: the protected streaming door whose
// authorizer is a function of its own (the template's
// StreamAuthorizerFunction: the same binary, run here under the
// function's own runtime). Its refusals are that function's invocations
// alone: the MCP function is not invoked for them, so a refused token is
// never one of the MCP function's Errors. Each decision writes a request
// line in the authorizer's log: an expired token 401 and "unauthorized",
// a missing scope 403 and "forbidden", the issuer's keys out of reach 503
// and "unavailable" (a fault: ERROR, Faults 1), a token let through "ok".
func TestStreamingDoorAuthorizerOfItsOwn(t *testing.T) {
	var log syncbuf.Buffer
	srv, docs := doorServer(&log)
	authorizer := runInLambda(t, srv, docs)
	fn := &fakeFunction{answer: proxyAnswer(t, 200, nil, nil), stream: proxyAnswer(t, 200, nil, nil)}
	front := &StreamFront{Function: fn, Door: RESTAPI, REST: REST{Domain: true,
		Metadata:           TemplateMetadata(doorEndpoint, "https://issuer.example", []string{"notes:read", "notes:write"}),
		Authorizer:         TemplateGatewayResponses("https://api.example/.well-known/oauth-protected-resource/mcp", []string{"notes:read", "notes:write"}),
		AuthorizerFunction: authorizer}}
	for _, tt := range []struct {
		name, token, method, tool, outcome, level string
		status                                    int
	}{
		{"an expired token", "expired", "tools/list", "", "unauthorized", "INFO", 401},
		{"a scope missing", "reader", "tools/call", "notes_add", "forbidden", "INFO", 403},
		{"the keys out of reach", "keys-down", "tools/list", "", "unavailable", "ERROR", 503},
		{"let through", "reader", "tools/list", "", "ok", "INFO", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Authorization": {"Bearer " + tt.token}, "Mcp-Method": {tt.method}}
			if tt.tool != "" {
				h.Set("Mcp-Name", tt.tool)
			}
			resp := serve(t, front, "POST", "/mcp", h, `{}`)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			lines := requestLines(t, &log)
			if len(lines) != 1 || lines[0]["Method"] != "authorize" || lines[0]["Outcome"] != tt.outcome || lines[0]["level"] != tt.level ||
				lines[0]["gateway_request_id"] != "front-authorizer" {
				t.Fatalf("the authorizer's lines %v, want one, authorize, %s, %s", lines, tt.outcome, tt.level)
			}
			if faults, _ := lines[0]["Faults"].(float64); (faults == 1) != (tt.outcome == "unavailable") {
				t.Errorf("Faults %v for %s", lines[0]["Faults"], tt.outcome)
			}
		})
	}
	// The MCP function was invoked once, for the request let through.
	if evs := fn.Events(); len(evs) != 1 || evs[0]["methodArn"] != nil {
		t.Errorf("the MCP function's invocations: %v", evs)
	}
}

// TestRegistrationPreflightOnEveryDoor: a browser page on an allowed
// origin can register: the preflight of POST /mcp/register is answered by
// the same Origin rule (AllowedOrigins) on the local door, the streaming
// door (the function, outside the authorizer) and a function URL, naming
// POST, the one method there; a page on another origin is refused it,
// without Access-Control-* headers. (Through the HTTP API, API Gateway
// answers preflights itself, from the same AllowedOrigins: deploy's
// TestCORS.)
func TestRegistrationPreflightOnEveryDoor(t *testing.T) {
	var log syncbuf.Buffer
	srv, docs := doorServer(&log)
	rt := runInLambda(t, srv, docs)
	// The local door.
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(ctx, srv, runner.Options{Addr: "127.0.0.1:0", Endpoint: doorEndpoint, Stdout: pw, Logger: slog.New(slog.DiscardHandler), Documents: docs})
	}()
	t.Cleanup(func() { cancel(); <-done })
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	local, ok := strings.CutPrefix(strings.TrimSpace(line), "MCP endpoint: ")
	if err != nil || !ok {
		t.Fatalf("the local door's URL: %q, %v", line, err)
	}
	localDoor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest(r.Method, strings.TrimSuffix(local, "/mcp")+r.URL.Path, r.Body)
		req.Header = r.Header
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	streaming := &StreamFront{Function: rt, Door: RESTAPI, REST: REST{Domain: true,
		Metadata:   TemplateMetadata(doorEndpoint, doorEndpoint, []string{"notes:read", "notes:write"}),
		ASMetadata: TemplateAuthorizationServerMetadata(doorEndpoint, "https://idp.example/authorize", "https://idp.example/token", []string{"notes:read", "notes:write"}),
		Authorizer: TemplateGatewayResponses("https://api.example/.well-known/oauth-protected-resource/mcp", []string{"notes:read", "notes:write"})}}
	functionURL := &StreamFront{Function: rt, Door: FunctionURL}
	for name, door := range map[string]http.Handler{"local": localDoor, "streaming": streaming, "function URL": functionURL} {
		t.Run(name, func(t *testing.T) {
			preflight := http.Header{"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type"}}
			resp := serve(t, door, "OPTIONS", "/mcp/register", preflight, "")
			if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
				resp.Header.Get("Access-Control-Allow-Methods") != "POST" || !strings.EqualFold(resp.Header.Get("Access-Control-Allow-Headers"), "content-type") {
				t.Errorf("the preflight: %d %v", resp.StatusCode, resp.Header)
			}
			preflight.Set("Origin", "https://evil.example")
			resp = serve(t, door, "OPTIONS", "/mcp/register", preflight, "")
			if resp.StatusCode < 400 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("another origin's preflight: %d %v", resp.StatusCode, resp.Header)
			}
			// The registration itself, as the page then sends it.
			resp = serve(t, door, "POST", "/mcp/register", http.Header{"Origin": {"https://app.example"}, "Content-Type": {"application/json"}},
				`{"redirect_uris":["http://127.0.0.1:3000/cb"]}`)
			if acao := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != http.StatusCreated || (acao != "*" && acao != "https://app.example") {
				t.Errorf("the registration: %d %v", resp.StatusCode, resp.Header)
			}
		})
	}
}
