package observe_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// tokenTable is a TokenAuthenticator: token -> scopes; tokenDown cannot be
// checked (the issuer's keys out of reach).
type tokenTable map[string][]string

const tokenDown = "keys-down"

func (tt tokenTable) Authenticate(ctx context.Context, token, audience string) (string, []string, *mcperr.Error) {
	if token == tokenDown {
		return "", nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, errors.New("jwks: dial tcp: connection refused"))
	}
	scopes, ok := tt[token]
	if !ok {
		return "", nil, mcperr.Wrap(mcperr.KindUnauthorized, errors.New("token expired"))
	}
	return "jwt:https://issuer.example.com#" + token, scopes, nil
}

// authorizerEvent is a REST API's REQUEST authorizer event for a request
// with these headers.
func authorizerEvent(headers map[string]string) []byte {
	mv := map[string][]string{}
	for k, v := range headers {
		mv[k] = []string{v}
	}
	b, _ := json.Marshal(map[string]any{"type": "REQUEST", "methodArn": "arn:aws:execute-api:us-east-1:123456789012:api/v1/POST/mcp",
		"resource": "/mcp", "path": "/mcp", "httpMethod": "POST", "headers": headers, "multiValueHeaders": mv,
		"requestContext": map[string]any{"path": "/mcp", "stage": "v1", "requestId": "gw-7", "domainName": "mcp.example.com"}})
	return b
}

// TestAuthorizerLines: the streaming door's authorizer writes one request
// line per decision, as any answer, with its metrics: Method "authorize",
// Outcome "ok", "unauthorized", "forbidden" or "unavailable". Only
// "unavailable" (the token could not be checked: every request through
// the door fails) is a fault, an ERROR line with Faults 1, so that an
// alarm on it sees an issuer's outage while expiring tokens and missing
// scopes page no one. The token is in no line.
func TestAuthorizerLines(t *testing.T) {
	var buf logBuffer
	ob := observe.New(&buf, observe.Options{Namespace: "test", Function: "authorizer"})
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Observe: ob.Observe,
		Auth:    &stateless.AuthOptions{Authenticator: &auth.Resource{Tokens: tokenTable{"reader-S3CRET": {"notes:read"}}}}})
	stateless.AddTool(srv, &stateless.Tool{Name: "notes_add", Scopes: []string{"notes:write"}},
		func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
	h := &apigw.Handler{Server: srv, Endpoint: "https://mcp.example.com/mcp"}
	for _, tt := range []struct {
		name                   string
		headers                map[string]string
		outcome, level, status string
		faults                 float64
	}{
		{"allowed", map[string]string{"Authorization": "Bearer reader-S3CRET", "Mcp-Method": "tools/list"}, "ok", "INFO", "200", 0},
		{"an expired token", map[string]string{"Authorization": "Bearer expired-S3CRET", "Mcp-Method": "tools/list"}, "unauthorized", "INFO", "401", 0},
		{"a scope missing", map[string]string{"Authorization": "Bearer reader-S3CRET", "Mcp-Method": "tools/call", "Mcp-Name": "notes_add"}, "forbidden", "INFO", "403", 0},
		{"the keys out of reach", map[string]string{"Authorization": "Bearer " + tokenDown, "Mcp-Method": "tools/list", "Traceparent": traceparent}, "unavailable", "ERROR", "503", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "inv-1"})
			//lint:ignore SA1029 the key aws-lambda-go uses
			ctx = context.WithValue(ctx, "x-amzn-trace-id", xrayHeader)
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			h.Authorize(ctx, authorizerEvent(tt.headers))
			raw := buf.String()
			lines := buf.lines(t)
			var reqs []map[string]any
			for _, l := range lines {
				if l["msg"] == "request" {
					reqs = append(reqs, l)
				}
			}
			if len(reqs) != 1 {
				t.Fatalf("%d request lines, want 1:\n%s", len(reqs), raw)
			}
			l := reqs[0]
			if l["Function"] != "authorizer" || l["Method"] != "authorize" || l["Outcome"] != tt.outcome || l["level"] != tt.level ||
				jsonNumber(l["status"]) != tt.status || l["request_id"] != "inv-1" || l["gateway_request_id"] != "gw-7" || l["xray_trace_id"] != xrayRoot {
				t.Errorf("line %v", l)
			}
			if f, ok := metric(t, l, "Faults"); !ok || f != tt.faults {
				t.Errorf("Faults = %v (declared %v), want %v", f, ok, tt.faults)
			}
			if r, ok := metric(t, l, "Requests"); !ok || r != 1 {
				t.Errorf("Requests = %v (declared %v)", r, ok)
			}
			if tt.faults == 1 && (l["fault"] != true || !strings.Contains(l["cause"].(string), "connection refused") || l["traceparent"] != traceparent) {
				t.Errorf("a fault's line: %v", l)
			}
			if strings.Contains(raw, "S3CRET") {
				t.Errorf("a token reached the log:\n%s", raw)
			}
		})
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
