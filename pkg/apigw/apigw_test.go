package apigw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

func TestDecodeShapesAndPrincipals(t *testing.T) {
	tests := []struct {
		name, payload string
		kind          Kind
		method        string
		principal     string
		header        map[string]string
		body          string
	}{
		{"http api, jwt", `{"version":"2.0","headers":{"content-type":"application/json","mcp-method":"tools/list"},"requestContext":{"requestId":"r1","domainName":"a.execute-api.us-east-1.amazonaws.com","http":{"method":"POST"},"authorizer":{"jwt":{"claims":{"iss":"https://issuer.example","sub":"user-1"}}}},"body":"{}"}`,
			KindHTTPAPI, "POST", "jwt:https://issuer.example#user-1", map[string]string{"Mcp-Method": "tools/list", "Content-Type": "application/json"}, "{}"},
		{"http api, iam", `{"version":"2.0","requestContext":{"http":{"method":"POST"},"authorizer":{"iam":{"userArn":"arn:aws:iam::1:user/x"}}}}`,
			KindHTTPAPI, "POST", "iam:arn:aws:iam::1:user/x", nil, ""},
		{"http api, lambda authorizer", `{"version":"2.0","requestContext":{"http":{"method":"POST"},"authorizer":{"lambda":{"principalId":"p-9"}}}}`,
			KindHTTPAPI, "POST", "authorizer:p-9", nil, ""},
		{"function url", `{"version":"2.0","headers":{"host":"u.lambda-url.us-east-1.on.aws"},"requestContext":{"domainName":"u.lambda-url.us-east-1.on.aws","http":{"method":"GET"}}}`,
			KindFunctionURL, "GET", "", map[string]string{"Host": "u.lambda-url.us-east-1.on.aws"}, ""},
		{"rest, cognito, multi-value", `{"httpMethod":"POST","headers":{"Mcp-Name":"b"},"multiValueHeaders":{"Mcp-Name":["a","b"]},"requestContext":{"authorizer":{"claims":{"iss":"https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x","sub":"c-1"}}},"body":"x"}`,
			KindREST, "POST", "jwt:https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x#c-1", map[string]string{"Mcp-Name": "a"}, "x"},
		{"rest, lambda authorizer", `{"httpMethod":"POST","requestContext":{"authorizer":{"principalId":"p-2"}}}`, KindREST, "POST", "authorizer:p-2", nil, ""},
		{"rest, iam", `{"httpMethod":"POST","requestContext":{"identity":{"userArn":"arn:aws:iam::1:role/r"}}}`, KindREST, "POST", "iam:arn:aws:iam::1:role/r", nil, ""},
		{"base64 body", `{"version":"2.0","requestContext":{"http":{"method":"POST"}},"isBase64Encoded":true,"body":"` + base64.StdEncoding.EncodeToString([]byte(`{"a":1}`)) + `"}`,
			KindHTTPAPI, "POST", "", nil, `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Decode([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != tt.kind || r.Method != tt.method || r.Principal != tt.principal || r.Unidentified || string(r.Body) != tt.body {
				t.Errorf("got kind %v method %q principal %q body %q", r.Kind, r.Method, r.Principal, r.Body)
			}
			for k, v := range tt.header {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
	if _, err := Decode([]byte(`{"Records":[]}`)); !errors.Is(err, ErrNotHTTP) {
		t.Errorf("an SQS-like payload: %v", err)
	}
	if _, err := Decode([]byte(`not json`)); !errors.Is(err, ErrNotHTTP) {
		t.Errorf("garbage: %v", err)
	}
}

func TestInvoke(t *testing.T) {
	var reported []string
	h := &Handler{Server: stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Observe: func(ctx context.Context, o *stateless.Outcome) {
			reported = append(reported, o.Kind+" "+stateless.RequestID(ctx))
		}})}
	defer func() {
		// Both refusals of an unreadable body went through the server's
		// one exit, with the gateway's request id.
		if len(reported) < 2 || reported[0] != "parse_error r-64" || reported[1] != "parse_error " {
			t.Errorf("reported %q", reported)
		}
	}()
	// A body marked base64 that is not: a parse error, not a failed invocation.
	out, err := h.Invoke(context.Background(), []byte(`{"version":"2.0","requestContext":{"requestId":"r-64","http":{"method":"POST"}},"isBase64Encoded":true,"body":"!!"}`))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       string            `json:"body"`
	}
	json.Unmarshal(out, &resp)
	if resp.StatusCode != 400 || resp.Headers["Content-Type"] != "application/json" {
		t.Errorf("bad base64: %s", out)
	}
	// A REST event's is answered in the REST shape, with multi-value headers.
	out, err = h.Invoke(context.Background(), []byte(`{"httpMethod":"POST","requestContext":{},"isBase64Encoded":true,"body":"!!"}`))
	if err != nil || !strings.Contains(string(out), `"multiValueHeaders"`) || !strings.Contains(string(out), `"statusCode":400`) {
		t.Errorf("bad base64 in a REST event: %s %v", out, err)
	}
	if _, err := h.Invoke(context.Background(), []byte(`{"Records":[]}`)); err == nil {
		t.Error("a non-HTTP event was answered")
	}
	// REST responses carry multi-value headers too.
	out, _ = h.Invoke(context.Background(), []byte(`{"httpMethod":"GET","requestContext":{}}`))
	var rest struct {
		StatusCode        int                 `json:"statusCode"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	}
	json.Unmarshal(out, &rest)
	if rest.StatusCode != 405 || rest.MultiValueHeaders["Allow"][0] != "POST" {
		t.Errorf("REST GET: %s", out)
	}
}

func TestHeadersKeptAndDropped(t *testing.T) {
	r, err := Decode([]byte(`{"version":"2.0","cookies":["a=1","b=2"],"headers":{"content-type":"application/json","authorization":"Bearer t","x-amzn-trace-id":"Root=1","mcp-param-region":"eu","MCP-NAME":"echo","mcp-method":"tools\u002fcall"},"requestContext":{"http":{"method":"POST"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Content-Type": "application/json", "Mcp-Param-Region": "eu", "Mcp-Name": "echo", "Mcp-Method": "tools/call", "Cookie": "a=1; b=2", "Authorization": "Bearer t"}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if r.Header.Get("X-Amzn-Trace-Id") != "" || len(r.Header) != len(want) {
		t.Errorf("headers %v", r.Header)
	}
}

// TestEndpointFromTheGateway pins the canonical URL derived per request:
// the domain name and path the gateway reports (stage included), never
// the client's Host header, and nothing when they are unusable.
func TestEndpointFromTheGateway(t *testing.T) {
	tests := []struct{ name, payload, want string }{
		{"http api", `{"version":"2.0","headers":{"host":"evil.example"},"requestContext":{"domainName":"a1.execute-api.eu-west-1.amazonaws.com","http":{"method":"POST","path":"/mcp"}}}`,
			"https://a1.execute-api.eu-west-1.amazonaws.com/mcp"},
		{"http api, named stage, custom domain", `{"version":"2.0","requestContext":{"domainName":"MCP.Example.com","http":{"method":"POST","path":"/v1/mcp"}}}`,
			"https://mcp.example.com/v1/mcp"},
		{"rest, stage in the context's path", `{"httpMethod":"POST","path":"/mcp","requestContext":{"domainName":"r.execute-api.us-east-1.amazonaws.com","path":"/prod/mcp"}}`,
			"https://r.execute-api.us-east-1.amazonaws.com/prod/mcp"},
		{"function url", `{"version":"2.0","requestContext":{"domainName":"u.lambda-url.us-east-1.on.aws","http":{"method":"POST","path":"/"}}}`,
			"https://u.lambda-url.us-east-1.on.aws/"},
		{"no domain", `{"version":"2.0","headers":{"host":"h.example"},"requestContext":{"http":{"method":"POST","path":"/mcp"}}}`, ""},
		{"domain with a slash", `{"version":"2.0","requestContext":{"domainName":"a/b","http":{"method":"POST","path":"/mcp"}}}`, ""},
		{"a local front's port", `{"version":"2.0","requestContext":{"domainName":"127.0.0.1:8443","http":{"method":"POST","path":"/mcp"}}}`, "https://127.0.0.1:8443/mcp"},
		{"a port that is not one", `{"version":"2.0","requestContext":{"domainName":"a.example:80a","http":{"method":"POST","path":"/mcp"}}}`, ""},
		{"an empty port", `{"version":"2.0","requestContext":{"domainName":"a.example:","http":{"method":"POST","path":"/mcp"}}}`, ""},
		{"a port alone", `{"version":"2.0","requestContext":{"domainName":":443","http":{"method":"POST","path":"/mcp"}}}`, ""},
		{"path with a space", `{"version":"2.0","requestContext":{"domainName":"a.example","http":{"method":"POST","path":"/m cp"}}}`, ""},
		{"relative path", `{"version":"2.0","requestContext":{"domainName":"a.example","http":{"method":"POST","path":"mcp"}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Decode([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if r.Endpoint != tt.want {
				t.Errorf("Endpoint = %q, want %q", r.Endpoint, tt.want)
			}
		})
	}
}

// TestMetadataRoute: a GET of the protected-resource metadata, with or
// without the endpoint's path and behind a stage prefix, is answered with
// the document of the endpoint the gateway names; anything else is not
// taken for it.
func TestMetadataRoute(t *testing.T) {
	res := &auth.Resource{AuthorizationServers: []string{"https://issuer.example.com"}}
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Auth: &stateless.AuthOptions{
		Authenticator: res,
	}})
	h := &Handler{Server: srv, Documents: &auth.Documents{Server: srv, Resource: res}}
	ev := func(method, path string) []byte {
		return []byte(`{"version":"2.0","requestContext":{"domainName":"a1.execute-api.eu-west-1.amazonaws.com","http":{"method":"` + method + `","path":"` + path + `"}}}`)
	}
	tests := []struct {
		method, path string
		resource     string // "" when it is not the metadata
	}{
		{"GET", "/.well-known/oauth-protected-resource/mcp", "https://a1.execute-api.eu-west-1.amazonaws.com/mcp"},
		{"GET", "/.well-known/oauth-protected-resource", "https://a1.execute-api.eu-west-1.amazonaws.com/mcp"},
		{"GET", "/v1/.well-known/oauth-protected-resource/mcp", "https://a1.execute-api.eu-west-1.amazonaws.com/v1/mcp"},
		{"POST", "/.well-known/oauth-protected-resource/mcp", ""},
		{"GET", "/.well-known/oauth-protected-resourcex", ""},
		{"GET", "/mcp", ""},
	}
	for _, tt := range tests {
		out, err := h.Invoke(context.Background(), ev(tt.method, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			StatusCode int
			Body       string
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		var doc struct{ Resource string }
		_ = json.Unmarshal([]byte(resp.Body), &doc)
		if tt.resource == "" {
			if doc.Resource != "" {
				t.Errorf("%s %s was taken for the metadata: %s", tt.method, tt.path, resp.Body)
			}
			continue
		}
		if resp.StatusCode != 200 || doc.Resource != tt.resource {
			t.Errorf("%s %s: %d %s, want resource %s", tt.method, tt.path, resp.StatusCode, resp.Body, tt.resource)
		}
	}
	// A configured endpoint wins over the gateway's names.
	h.Endpoint = "https://mcp.example.com/mcp"
	out, _ := h.Invoke(context.Background(), ev("GET", "/.well-known/oauth-protected-resource/mcp"))
	if !strings.Contains(string(out), `\"resource\":\"https://mcp.example.com/mcp\"`) {
		t.Errorf("configured endpoint: %s", out)
	}
}
