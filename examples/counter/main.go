// Command counter is a function of your own on this module's public
// packages: one side-effecting tool made exactly-once by idempotency
// claims, one read-only tool behind a scope, one that runs as a task, and
// every production part (claims in DynamoDB, request state sealed under
// KMS, tasks, the observer's log lines and metrics, bearer-token
// authorization, a rate limit and a circuit breaker when configured, the
// Lambda runner) configured from the environment as template.yaml
// configures the demo. Its tools keep their state with the endpoint's
// items (package items: the claims table on Lambda, memory locally), so a
// keyed count_add adds once. It deploys through the kit cmd/mcp-sam wrote
// beside it (template.yaml, mcp.mk: docs/deploy.md, "A function in your
// own module").
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
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
	c := &counter{items: ep.Items}
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "count_add", Description: "Adds n to your count.",
		Scopes: []string{"count:write"}, EnlistedEffectsOnly: true, Annotations: &stateless.ToolAnnotations{DestructiveHint: ptr(false)}}, c.add)
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "count_get", Description: "Your count.",
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

// counter keeps each caller's count as one item of ep.Items (package
// items): in the claims table on DynamoDB, in memory locally. count_add
// writes it through items.Table.Write, so a keyed call adds once
// whatever fails: its write commits with its claim, in one DynamoDB
// request (Tool.EnlistedEffectsOnly), and a retry replays the count.
type counter struct{ items items.Table }

type addIn struct {
	N int64 `json:"n" jsonschema:"how much to add"`
}

type countOut struct {
	Count int64 `json:"count"`
}

// countKey is the caller's count: under a digest of its principal, so
// that principals do not appear in keys, and under a prefix of the
// counter's own (claims.Reserved lists the ones the library keeps).
func countKey(principal string) items.Key {
	d := sha256.Sum256([]byte(principal))
	return items.Key{PK: "count#" + hex.EncodeToString(d[:]), SK: "#count"}
}

// add reads the count and writes the sum on the condition that the count
// is still what it read: the answer is exact, and a call that met
// another's change is answered state_changed, nothing written, for the
// model to call again. The write is made after add returns when the call
// is keyed, so add answers from what it read, never from the write.
func (c *counter) add(ctx context.Context, req *stateless.ToolRequest, in addIn) (*stateless.CallToolResult, countOut, error) {
	k := countKey(req.Principal)
	cur, err := c.read(ctx, k)
	if err != nil {
		return nil, countOut{}, err
	}
	unchanged := items.Absent()
	if cur != 0 {
		unchanged = items.Equal("n", items.Int(cur))
	}
	err = c.items.Write(ctx, items.Update(k).Add("n", in.N).If(unchanged).OrFail(mcperr.NewStateChanged("count")))
	if err != nil {
		return nil, countOut{}, err
	}
	return nil, countOut{Count: cur + in.N}, nil
}

func (c *counter) get(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, countOut, error) {
	n, err := c.read(ctx, countKey(req.Principal))
	return nil, countOut{Count: n}, err
}

// read is the count under k, 0 when there is none.
func (c *counter) read(ctx context.Context, k items.Key) (int64, error) {
	it, ok, err := c.items.Get(ctx, k)
	if err != nil || !ok {
		return 0, err
	}
	n, _ := it["n"].(*types.AttributeValueMemberN)
	if n == nil {
		return 0, fmt.Errorf("the count item has no number n")
	}
	return strconv.ParseInt(n.Value, 10, 64)
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
