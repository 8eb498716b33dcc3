package claims_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// ledger is a tool's own state, in memory here; on DynamoDB the write is
// a types.TransactWriteItem in claims.Write.Item instead.
type ledger struct {
	mu      sync.Mutex
	balance int
}

type depositIn struct {
	Amount int `json:"amount"`
}

// ExampleEnlistWrites: a tool whose only effect is its enlisted write
// commits it with its call's claim and stored result, all or nothing, so
// a retry with the same idempotency key replays the first answer and
// deposits nothing more.
func ExampleEnlistWrites() {
	guard := claims.New(claims.NewMemory(), nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "bank", Version: "1"},
		&stateless.Options{Interceptors: []stateless.Interceptor{guard.Interceptor()}})
	l := &ledger{}
	stateless.AddTool(srv, &stateless.Tool{Name: "deposit", EnlistedEffectsOnly: true},
		func(ctx context.Context, req *stateless.ToolRequest, in depositIn) (*stateless.CallToolResult, map[string]int, error) {
			deposit := claims.Write{Apply: func(commit func() bool) error {
				l.mu.Lock()
				defer l.mu.Unlock()
				if commit() {
					l.balance += in.Amount
				}
				return nil
			}}
			if !claims.EnlistWrites(ctx, deposit) {
				return nil, nil, fmt.Errorf("deposit needs an idempotency key")
			}
			return nil, map[string]int{"deposited": in.Amount}, nil
		})

	c := mcptest.New(nil, srv)
	first := c.CallTool("deposit", depositIn{Amount: 10}, mcptest.IdempotencyKey("k-1"))
	retry := c.CallTool("deposit", depositIn{Amount: 10}, mcptest.IdempotencyKey("k-1"))
	fmt.Println(first.Text(), retry.Text(), retry.Replayed())
	l.mu.Lock()
	fmt.Println("balance:", l.balance)
	l.mu.Unlock()
	// Output:
	// {"deposited":10} {"deposited":10} true
	// balance: 10
}
