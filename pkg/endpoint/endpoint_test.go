package endpoint_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestComposedInterceptors: MCP_CIRCUIT_BREAKER and MCP_RATE_LIMIT put the
// breaker and the limit on the composed server, after the endpoint's own
// interceptors, and neither is there without them.
func TestComposedInterceptors(t *testing.T) {
	compose := func(env map[string]string) *mcptest.Client {
		cfg, err := endpoint.LoadConfig(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		ep, err := endpoint.New(cfg, endpoint.Options{Implementation: stateless.Implementation{Name: "t", Version: "1"}, Stdout: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		stateless.AddTool(ep.Server, &stateless.Tool{Name: "flaky", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
				return nil, struct{}{}, mcperr.NewRetryLater(time.Second, errors.New("upstream down"))
			})
		return mcptest.New(t, ep.Server)
	}
	kinds := func(c *mcptest.Client, n int) string {
		var got []string
		for range n {
			a := c.CallTool("flaky", nil)
			switch {
			case a.Error != nil && strings.Contains(string(a.Error.Data), "circuit_open"):
				got = append(got, "open")
			case a.Error != nil && strings.Contains(string(a.Error.Data), "rate_limited"):
				got = append(got, "limited")
			case a.IsError():
				got = append(got, "failed")
			default:
				got = append(got, "ok")
			}
		}
		return strings.Join(got, " ")
	}
	if got := kinds(compose(nil), 4); got != "failed failed failed failed" {
		t.Errorf("nothing configured: %s", got)
	}
	if got := kinds(compose(map[string]string{"MCP_CIRCUIT_BREAKER": "2/1m"}), 4); got != "failed failed open open" {
		t.Errorf("MCP_CIRCUIT_BREAKER=2/1m: %s", got)
	}
	if got := kinds(compose(map[string]string{"MCP_RATE_LIMIT": "3/1h"}), 4); got != "failed failed failed limited" {
		t.Errorf("MCP_RATE_LIMIT=3/1h: %s", got)
	}
}
