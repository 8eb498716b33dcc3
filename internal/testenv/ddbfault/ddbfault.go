// Package ddbfault breaks chosen AWS SDK operations of a client, for tests
// of what survives a failing network: an attempt can fail before it is
// sent, or be sent and applied and have its answer lost (the write that
// happened although its caller was told it failed). It works per attempt,
// inside the SDK's retry loop, so the SDK's own retries meet the faults
// too. It is a test tool, not part of the deployed product.
package ddbfault

import (
	"context"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// ErrRefused and ErrLost are the injected failures: the attempt was not
// sent; the attempt was sent and applied, and its answer lost. The SDK
// retries both, as it retries the connection errors they stand for.
var (
	ErrRefused error = injected("ddbfault: connection refused (injected)")
	ErrLost    error = injected("ddbfault: connection reset after the request was sent (injected)")
)

type injected string

func (e injected) Error() string { return string(e) }

// RetryableError tells the SDK's retryer to retry, as it would a
// connection error.
func (injected) RetryableError() bool { return true }

// All, as a count, breaks every attempt until the next Set.
const All = -1

// Faults is a set of faults to inject, by operation name (PutItem,
// TransactWriteItems, ...): how many attempts to break, or All.
type Faults struct {
	mu         sync.Mutex
	lose, fail map[string]int
	broken     atomic.Int32
}

// Set replaces the faults: attempts of the operations in lose are sent and
// their answers lost; those in fail are not sent. Nil maps break nothing.
func (f *Faults) Set(lose, fail map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose, f.fail = lose, fail
}

// Broken is how many attempts were broken so far.
func (f *Faults) Broken() int { return int(f.broken.Load()) }

func (f *Faults) take(lose bool, op string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.fail
	if lose {
		m = f.lose
	}
	n, ok := m[op]
	if !ok || n == 0 {
		return false
	}
	if n > 0 {
		m[op] = n - 1
	}
	f.broken.Add(1)
	return true
}

// Middleware adds the faults to an operation's stack: append it to
// aws.Config.APIOptions or a service client's Options.APIOptions.
func (f *Faults) Middleware(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("ddbfault", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		op := awsmiddleware.GetOperationName(ctx)
		if f.take(false, op) {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, ErrRefused
		}
		out, md, err := next.HandleFinalize(ctx, in)
		if err == nil && f.take(true, op) {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, ErrLost
		}
		return out, md, err
	}), middleware.After)
}
