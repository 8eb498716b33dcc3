package apigw

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// TestPreflightEvent checks that a preflight arriving as an event, where
// the gateway does not answer it (function URLs, REST APIs, an HTTP API
// without CorsConfiguration), gets the answer net/http gives, header for
// header.
func TestPreflightEvent(t *testing.T) {
	const app = "https://app.example"
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, AllowedOrigins: []string{app}})
	h := &Handler{Server: srv}
	allowed := map[string]string{
		"Access-Control-Allow-Origin":  app,
		"Access-Control-Allow-Methods": "GET, POST, DELETE",
		"Access-Control-Allow-Headers": "authorization, content-type, mcp-method, mcp-name, mcp-protocol-version, mcp-param-region",
		"Access-Control-Max-Age":       "600",
		"Vary":                         "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
	}
	const acrh = "authorization,content-type,mcp-method,mcp-name,mcp-protocol-version,mcp-param-region,x-other"
	tests := []struct {
		name, payload string
		status        int
		headers       map[string]string // exactly these, nothing else
	}{
		{"http api", `{"version":"2.0","headers":{"origin":"` + app + `","access-control-request-method":"POST","access-control-request-headers":"` + acrh + `","host":"api.example.com"},"requestContext":{"http":{"method":"OPTIONS"}}}`,
			204, allowed},
		{"function url", `{"version":"2.0","headers":{"origin":"` + app + `","access-control-request-method":"POST","access-control-request-headers":"` + acrh + `"},"requestContext":{"domainName":"u.lambda-url.us-east-1.on.aws","http":{"method":"OPTIONS"}}}`,
			204, allowed},
		{"rest, multi-value", `{"httpMethod":"OPTIONS","headers":{"Origin":"` + app + `"},"multiValueHeaders":{"Origin":["` + app + `"],"Access-Control-Request-Method":["POST"],"Access-Control-Request-Headers":["` + acrh + `"]},"requestContext":{}}`,
			204, allowed},
		{"refused origin", `{"version":"2.0","headers":{"origin":"https://evil.example","access-control-request-method":"POST","access-control-request-headers":"` + acrh + `"},"requestContext":{"http":{"method":"OPTIONS"}}}`,
			403, map[string]string{"Content-Type": "application/json"}},
		{"method not listed", `{"version":"2.0","headers":{"origin":"` + app + `","access-control-request-method":"PATCH"},"requestContext":{"http":{"method":"OPTIONS"}}}`,
			403, map[string]string{"Content-Type": "application/json"}},
		{"no requested method", `{"version":"2.0","headers":{"origin":"` + app + `"},"requestContext":{"http":{"method":"OPTIONS"}}}`,
			405, map[string]string{"Content-Type": "application/json", "Allow": "POST", "Access-Control-Allow-Origin": app,
				"Access-Control-Expose-Headers": "Mcp-Method, Mcp-Name, MCP-Protocol-Version, Retry-After, WWW-Authenticate", "Vary": "Origin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := h.Invoke(context.Background(), []byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				StatusCode int               `json:"statusCode"`
				Headers    map[string]string `json:"headers"`
				Body       string            `json:"body"`
			}
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if resp.StatusCode != tt.status || !maps.Equal(resp.Headers, tt.headers) {
				t.Errorf("got %d %v\nwant %d %v", resp.StatusCode, resp.Headers, tt.status, tt.headers)
			}
			if (resp.Body == "") != (tt.status == http.StatusNoContent) {
				t.Errorf("body %q", resp.Body)
			}
		})
	}
}
