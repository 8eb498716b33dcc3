package apigw

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// scopeTable is a TokenAuthenticator: token -> scopes; "down" cannot be
// checked.
type scopeTable map[string][]string

func (st scopeTable) Authenticate(ctx context.Context, token, audience string) (string, []string, *mcperr.Error) {
	if token == "down" {
		return "", nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, errors.New("keys unreachable"))
	}
	scopes, ok := st[token]
	if !ok || audience != "https://mcp.example.com/mcp" {
		return "", nil, mcperr.Wrap(mcperr.KindUnauthorized, errors.New("refused"))
	}
	return "jwt:https://issuer.example.com#" + token, scopes, nil
}

// authorizerEventFor is a REQUEST authorizer's event as API Gateway's
// developer guide shows it ("Input to an API Gateway Lambda authorizer"),
// for a request through a custom domain.
func authorizerEventFor(authorization, method, name string) string {
	h := map[string]string{"Host": "mcp.example.com", "Mcp-Method": method, "Content-Type": "application/json"}
	if name != "" {
		h["Mcp-Name"] = name
	}
	if authorization != "" {
		h["Authorization"] = authorization
	}
	mv := map[string][]string{}
	for k, v := range h {
		mv[k] = []string{v}
	}
	ev := map[string]any{
		"type": "REQUEST", "methodArn": "arn:aws:execute-api:us-east-1:123456789012:abcdef123/v1/POST/mcp",
		"resource": "/mcp", "path": "/mcp", "httpMethod": "POST", "headers": h, "multiValueHeaders": mv,
		"queryStringParameters": map[string]string{}, "pathParameters": map[string]string{}, "stageVariables": map[string]string{},
		"requestContext": map[string]any{"path": "/mcp", "accountId": "123456789012", "resourceId": "05c7jb", "stage": "v1",
			"requestId": "r-1", "identity": map[string]any{"sourceIp": "203.0.113.7"}, "resourcePath": "/mcp", "httpMethod": "POST",
			"domainName": "mcp.example.com", "apiId": "abcdef123"},
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// TestAuthorize: the function as the REST door's Lambda REQUEST
// authorizer answers each decision in the form API Gateway acts on: an
// Allow policy for the method, the error "Unauthorized" (401), a Deny
// policy with the scopes the tool needs in its context (403), and any
// other error when the token could not be checked (500).
func TestAuthorize(t *testing.T) {
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Auth: &stateless.AuthOptions{
		Authenticator: &auth.Resource{Tokens: scopeTable{"reader": {"notes:read"}, "writer": {"notes:write"}}},
		ScopeImplies:  map[string][]string{"notes:write": {"notes:read"}},
	}})
	stateless.AddTool(s, &stateless.Tool{Name: "add", Scopes: []string{"notes:write"}},
		func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
	h := &Handler{Server: s, Endpoint: "https://mcp.example.com/mcp"}
	type answer struct {
		PrincipalID    string `json:"principalId"`
		PolicyDocument struct {
			Version   string `json:"Version"`
			Statement []struct{ Action, Effect, Resource string }
		} `json:"policyDocument"`
		Context map[string]string `json:"context"`
	}
	tests := []struct {
		name, authz, method, tool string
		effect, principal, scopes string
		err                       error
	}{
		{"a valid token", "Bearer reader", "tools/list", "", "Allow", "jwt:https://issuer.example.com#reader", "", nil},
		{"a call with the scope", "Bearer writer", "tools/call", "add", "Allow", "jwt:https://issuer.example.com#writer", "", nil},
		{"a call without it", "Bearer reader", "tools/call", "add", "Deny", "jwt:https://issuer.example.com#reader", "notes:write", nil},
		{"no token", "", "tools/list", "", "", "", "", ErrUnauthorized},
		{"a bad token", "Bearer forged", "tools/list", "", "", "", "", ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := authorizerEventFor(tt.authz, tt.method, tt.tool)
			if !IsAuthorizerEvent([]byte(payload)) {
				t.Fatal("IsAuthorizerEvent = false")
			}
			out, err := h.Authorize(context.Background(), []byte(payload))
			if tt.err != nil {
				if err == nil || err.Error() != "Unauthorized" {
					t.Fatalf("Authorize = %s, %v; want the error Unauthorized", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var a answer
			if err := json.Unmarshal(out, &a); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			st := a.PolicyDocument.Statement
			if a.PrincipalID != tt.principal || a.PolicyDocument.Version != "2012-10-17" || len(st) != 1 ||
				st[0].Action != "execute-api:Invoke" || st[0].Effect != tt.effect || st[0].Resource != "arn:aws:execute-api:us-east-1:123456789012:abcdef123/v1/POST/mcp" {
				t.Errorf("policy %s", out)
			}
			if a.Context["requiredScopes"] != tt.scopes {
				t.Errorf("context %v, want requiredScopes %q", a.Context, tt.scopes)
			}
		})
	}
	out, err := h.Authorize(context.Background(), []byte(authorizerEventFor("Bearer down", "tools/list", "")))
	if err == nil || err.Error() == "Unauthorized" || strings.Contains(err.Error(), "keys unreachable") {
		t.Errorf("keys down: %s, %v; want another error, naming only the kind", out, err)
	}
	// Without a configured endpoint, the one the event names.
	h.Endpoint = ""
	if out, err := h.Authorize(context.Background(), []byte(authorizerEventFor("Bearer reader", "tools/list", ""))); err != nil || !strings.Contains(string(out), `"Allow"`) {
		t.Errorf("endpoint from the event: %s, %v", out, err)
	}
	for _, bad := range []string{`{}`, `{"type":"TOKEN","methodArn":"arn"}`, `{"type":"REQUEST"}`, `not json`} {
		if _, err := h.Authorize(context.Background(), []byte(bad)); !errors.Is(err, ErrNotHTTP) {
			t.Errorf("Authorize(%s) = %v, want ErrNotHTTP", bad, err)
		}
	}
	for _, proxy := range []string{
		`{"version":"2.0","headers":{"x":"REQUEST"}}`,
		`{"version":"2.0","headers":{"methodArn":"arn","type":"REQUEST"},"requestContext":{"http":{"method":"POST"}}}`,
		`{"resource":"/mcp","multiValueHeaders":{"methodArn":["REQUEST"]},"body":"{\"type\":\"REQUEST\",\"methodArn\":\"a\"}"}`,
	} {
		if IsAuthorizerEvent([]byte(proxy)) {
			t.Errorf("a proxy event taken for an authorizer's: %s", proxy)
		}
	}
}

// FuzzAuthorize: any payload is an authorizer's event or not, never
// panics; an authorizer's answer is a policy for the event's method ARN,
// or one of the two errors; a payload IsAuthorizerEvent refuses is never
// answered with a policy.
func FuzzAuthorize(f *testing.F) {
	f.Add([]byte(authorizerEventFor("Bearer reader", "tools/call", "add")))
	f.Add([]byte(authorizerEventFor("", "tools/list", "")))
	f.Add([]byte(`{"type":"REQUEST","methodArn":"a","multiValueHeaders":{"authorization":["Bearer reader","Bearer writer"]}}`))
	f.Add([]byte(`{"type":"REQUEST","methodArn":"a","headers":{"authorization":"Bearer reader","Authorization":"Bearer x"},"multiValueHeaders":{"AUTHORIZATION":["Bearer reader"],"Authorization":["Bearer x"]}}`))
	f.Add([]byte(`{"type":"REQUEST","methodArn":"a","type":"TOKEN"}`))
	f.Add([]byte(`{"version":"2.0","headers":{"methodArn":"REQUEST"}}`))
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Auth: &stateless.AuthOptions{
		Authenticator: &auth.Resource{Tokens: scopeTable{"reader": {"notes:read"}}},
	}})
	stateless.AddTool(s, &stateless.Tool{Name: "add", Scopes: []string{"notes:write"}},
		func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
	h := &Handler{Server: s, Endpoint: "https://mcp.example.com/mcp"}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if fuzzing() && len(payload) > maxFuzzPayload {
			return
		}
		is := IsAuthorizerEvent(payload)
		out, err := h.Authorize(context.Background(), payload)
		if err != nil {
			if out != nil {
				t.Fatalf("an answer with the error %v", err)
			}
			return
		}
		if !is {
			t.Fatalf("a policy for a payload IsAuthorizerEvent refuses: %q", payload)
		}
		var p struct {
			PrincipalID    string `json:"principalId"`
			PolicyDocument struct {
				Statement []struct{ Effect, Resource string }
			} `json:"policyDocument"`
		}
		if json.Unmarshal(out, &p) != nil || p.PrincipalID == "" || len(p.PolicyDocument.Statement) != 1 {
			t.Fatalf("answer %s", out)
		}
	})
}

// decisionReport is what an Observe hook saw of one authorizer decision.
type decisionReport struct {
	method, kind, gatewayID string
	own, fault, cause       bool
	status                  int
}

// TestAuthorizeReportsEveryDecision: each decision of the authorizer is
// reported as any answer is, through Options.Observe, once: its Method the
// server's own "authorize", its Outcome kind the decision ("" for one let
// through, "unauthorized", "forbidden", "unavailable"), the status the
// door answers, a fault only when the token could not be checked, and the
// gateway's request id in the context. A payload that is no authorizer's
// event is no decision, and is not reported.
func TestAuthorizeReportsEveryDecision(t *testing.T) {
	var seen []decisionReport
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Observe: func(ctx context.Context, o *stateless.Outcome) {
			seen = append(seen, decisionReport{method: o.Method, kind: o.Kind, gatewayID: stateless.RequestID(ctx), own: o.OwnMethod,
				fault: o.Fault, cause: o.Err != nil, status: o.Status})
		},
		Auth: &stateless.AuthOptions{Authenticator: &auth.Resource{Tokens: scopeTable{"reader": {"notes:read"}, "writer": {"notes:write"}}}}})
	stateless.AddTool(s, &stateless.Tool{Name: "add", Scopes: []string{"notes:write"}},
		func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
	h := &Handler{Server: s, Endpoint: "https://mcp.example.com/mcp"}
	for _, tt := range []struct {
		name, authz, method, tool string
		want                      decisionReport
	}{
		{"let through", "Bearer reader", "tools/list", "", decisionReport{status: 200}},
		{"a scope missing", "Bearer reader", "tools/call", "add", decisionReport{kind: "forbidden", status: 403}},
		{"no token", "", "tools/list", "", decisionReport{kind: "unauthorized", status: 401, cause: true}},
		{"a refused token", "Bearer expired", "tools/list", "", decisionReport{kind: "unauthorized", status: 401, cause: true}},
		{"the keys out of reach", "Bearer down", "tools/list", "", decisionReport{kind: "unavailable", status: 503, fault: true, cause: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			h.Authorize(context.Background(), []byte(authorizerEventFor(tt.authz, tt.method, tt.tool)))
			want := tt.want
			want.method, want.own, want.gatewayID = "authorize", true, "r-1"
			if len(seen) != 1 || seen[0] != want {
				t.Fatalf("reported %+v, want once %+v", seen, want)
			}
		})
	}
	seen = nil
	for _, bad := range []string{`{}`, `{"type":"TOKEN","methodArn":"arn"}`, `not json`} {
		h.Authorize(context.Background(), []byte(bad))
	}
	if len(seen) != 0 {
		t.Errorf("payloads that are no authorizer's event reported: %+v", seen)
	}
}

// TestAuthorizeHeaderSelection: when the headers hold one header under
// two spellings, the authorizer decides on the value the function's own
// decoder keeps (Decode: multiValueHeaders win over headers), every time,
// whatever the order Go iterates a map in.
func TestAuthorizeHeaderSelection(t *testing.T) {
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Auth: &stateless.AuthOptions{
		Authenticator: &auth.Resource{Tokens: scopeTable{"reader": {"notes:read"}, "writer": {"notes:write"}}},
	}})
	stateless.AddTool(s, &stateless.Tool{Name: "add", Scopes: []string{"notes:write"}},
		func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
	h := &Handler{Server: s, Endpoint: "https://mcp.example.com/mcp"}
	const call = `"Mcp-Method":"tools/call","Mcp-Name":"add"`
	const callMulti = `"Mcp-Method":["tools/call"],"Mcp-Name":["add"]`
	for _, tt := range []struct{ name, headers, multi string }{
		{"multiValueHeaders", `{` + call + `}`, `{"authorization":["Bearer reader"],"Authorization":["Bearer writer"],` + callMulti + `}`},
		{"multiValueHeaders, the other order", `{` + call + `}`, `{"Authorization":["Bearer writer"],"authorization":["Bearer reader"],` + callMulti + `}`},
		{"headers", `{"authorization":"Bearer reader","Authorization":"Bearer writer",` + call + `}`, `null`},
		{"headers, the other order", `{"Authorization":"Bearer writer","authorization":"Bearer reader",` + call + `}`, `null`},
		{"both", `{"authorization":"Bearer writer","Authorization":"Bearer writer",` + call + `}`, `{"AUTHORIZATION":["Bearer reader"],` + callMulti + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctxJSON := `"requestContext":{"domainName":"mcp.example.com","path":"/mcp","httpMethod":"POST","requestId":"r-1"}`
			proxy := `{"resource":"/mcp","httpMethod":"POST","headers":` + tt.headers + `,"multiValueHeaders":` + tt.multi + `,` + ctxJSON + `}`
			r, err := Decode([]byte(proxy))
			if err != nil {
				t.Fatal(err)
			}
			effect := map[string]string{"Bearer reader": "Deny", "Bearer writer": "Allow"}[r.Header.Get("Authorization")]
			if effect == "" {
				t.Fatalf("the decoder kept Authorization %q", r.Header["Authorization"])
			}
			payload := `{"type":"REQUEST","methodArn":"arn:aws:execute-api:us-east-1:123456789012:abcdef123/v1/POST/mcp","headers":` + tt.headers +
				`,"multiValueHeaders":` + tt.multi + `,` + ctxJSON + `}`
			for i := 0; i < 64; i++ {
				out, err := h.Authorize(context.Background(), []byte(payload))
				if err != nil || !strings.Contains(string(out), `"Effect":"`+effect+`"`) {
					t.Fatalf("attempt %d: %s, %v; the decoder kept %q, whose decision is %s", i, out, err, r.Header.Get("Authorization"), effect)
				}
			}
		})
	}
}
