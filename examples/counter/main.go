// Command counter is a function of your own on this module's public
// packages: one side-effecting tool made exactly-once by idempotency
// claims, one read-only tool behind a scope, one that runs as a task, and
// every production part (claims in DynamoDB, request state sealed under
// KMS, tasks, the observer's log lines and metrics, bearer-token
// authorization, a rate limit and a circuit breaker when configured, the
// Lambda runner) configured from the environment as template.yaml
// configures the demo. Build it as the demo is built (GOOS=linux
// GOARCH=arm64 -tags lambda.norpc) and deploy it in the demo's place.
package main

import (
	"context"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

func main() { endpoint.Main("counter", newEndpoint) }

// newEndpoint composes the endpoint and registers the tools.
func newEndpoint(cfg *endpoint.Config, o endpoint.Options) (*endpoint.Endpoint, error) {
	o.Implementation = stateless.Implementation{Name: "counter", Version: "1.0.0"}
	o.DefaultScopes = []string{"count:read", "count:write"}
	o.ScopeImplies = map[string][]string{"count:write": {"count:read"}}
	ep, err := endpoint.New(cfg, o)
	if err != nil {
		return nil, err
	}
	c := &counter{}
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "count_add", Description: "Adds n to the count.",
		Scopes: []string{"count:write"}, Annotations: &stateless.ToolAnnotations{DestructiveHint: ptr(false)}}, c.add)
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "count_get", Description: "The count.",
		Scopes: []string{"count:read"}, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}}, c.get)
	// A call longer than a gateway waits runs as a task of the tasks
	// extension: answered at once with a handle, run by a worker (on
	// Lambda an asynchronous invocation of this function), polled with
	// tasks/get.
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "count_audit", Description: "Audits the count, at length.",
		Scopes: []string{"count:read"}, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true},
		TaskSupport: stateless.TaskSupportRequired}, c.audit)
	return ep, nil
}

// counter is the tools' state: in memory here, where a real tool would
// write DynamoDB (ep.Clients, ep.Claims to commit with the claim).
type counter struct {
	mu sync.Mutex
	n  int
}

type addIn struct {
	N int `json:"n" jsonschema:"how much to add"`
}

type countOut struct {
	Count int `json:"count"`
}

func (c *counter) add(ctx context.Context, req *stateless.ToolRequest, in addIn) (*stateless.CallToolResult, countOut, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += in.N
	return nil, countOut{Count: c.n}, nil
}

func (c *counter) get(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, countOut, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return nil, countOut{Count: c.n}, nil
}

// audit stands for a long job: it runs as a task.
func (c *counter) audit(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, countOut, error) {
	select {
	case <-ctx.Done():
		return nil, countOut{}, ctx.Err()
	case <-time.After(50 * time.Millisecond):
	}
	return c.get(ctx, req, struct{}{})
}

func ptr[T any](v T) *T { return &v }
