// Package opcount counts AWS SDK operations by name, with SDK middleware,
// so tests can assert how many round trips a request costs.
package opcount

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts operations. Add Counter.Middleware to a client's
// APIOptions.
type Counter struct {
	mu  sync.Mutex
	ops map[string]int
}

// Middleware registers the counting step on a client's stack.
func (c *Counter) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("opcount", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		c.mu.Lock()
		if c.ops == nil {
			c.ops = map[string]int{}
		}
		c.ops[awsmiddleware.GetOperationName(ctx)]++
		c.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

// Take returns the counts so far and starts again from zero.
func (c *Counter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = map[string]int{}
	if ops == nil {
		ops = map[string]int{}
	}
	return ops
}
