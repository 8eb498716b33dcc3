package claims_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestReservedWriteRefusesTheCall: a tool that enlists a write under a
// key this module reserves (here over a task's) has its call answered as
// a server fault, claim-first or in one step, and nothing is kept: the
// same key's retry is refused alike, not replayed nor held in progress.
func TestReservedWriteRefusesTheCall(t *testing.T) {
	var faults []error
	srv := stateless.NewServer(stateless.Implementation{Name: "reserved", Version: "1"}, &stateless.Options{
		Interceptors: []stateless.Interceptor{claims.New(claims.NewMemory(), nil).Interceptor()},
		Observe: func(_ context.Context, o *stateless.Outcome) {
			if o.Fault {
				faults = append(faults, o.Err)
			}
		}})
	handler := func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, map[string]bool, error) {
		over := types.TransactWriteItem{Put: &types.Put{TableName: aws.String("claims"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "task#someone-elses"}, "status": &types.AttributeValueMemberS{Value: "completed"}}}}
		if !claims.Enlist(ctx, over) {
			t.Error("the reserved write was not taken: the tool would write it itself")
		}
		return nil, map[string]bool{"done": true}, nil
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "claim_first"}, handler)
	stateless.AddTool(srv, &stateless.Tool{Name: "one_step", EnlistedEffectsOnly: true}, handler)
	c := mcptest.New(t, srv)
	for _, tool := range []string{"claim_first", "one_step"} {
		for try := range 2 {
			a := c.CallTool(tool, nil, mcptest.IdempotencyKey("k-"+tool))
			if a.Error == nil || a.Error.Code != -32603 || a.Replayed() {
				t.Fatalf("%s, try %d: %d %s", tool, try, a.Status, a.Raw)
			}
		}
	}
	if len(faults) != 4 {
		t.Fatalf("%d faults: %v", len(faults), faults)
	}
	for _, err := range faults {
		if !errors.Is(err, claims.ErrReservedKey) || !strings.Contains(err.Error(), "task#") || strings.Contains(err.Error(), "someone-elses") {
			t.Errorf("the fault does not name the prefix alone: %v", err)
		}
	}
}
