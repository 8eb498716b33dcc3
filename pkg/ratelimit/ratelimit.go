// Package ratelimit limits each caller's requests, as a
// [stateless.Interceptor]: at most Limit requests in each Window per
// principal, counted in a Counter every instance of the function shares,
// so that a caller cannot multiply its allowance by the number of warm
// instances. A request over the limit is refused with a retryable
// RateLimited error whose retry-after is the time left in the window
// (error.data.retryAfterMs, and the Retry-After header); it is answered
// and reported as any refusal, and counts against the window like any
// other attempt. It is off unless a function adds it to
// [stateless.Options.Interceptors].
//
// A counter that cannot be reached fails the request closed, with a
// retryable dependency failure: a limit that let everything through
// when its store is down would be no limit.
//
// Cost: DynamoDB counts with one UpdateItem per limited request, one
// write request unit (its item is under 1 KB): $0.625 per million
// requests at us-east-1's on-demand price (docs/deploy.md, "What it
// costs"). Each window's item expires by the table's TTL a window after
// the window ends.
package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Counter counts requests per key, shared by every instance.
type Counter interface {
	// Increment adds one to key's count and returns the count after it;
	// expires is when the count may be forgotten.
	Increment(ctx context.Context, key string, expires time.Time) (int64, error)
}

// Limiter is a fixed-window rate limit per principal.
type Limiter struct {
	Counter Counter
	// Limit is how many requests a principal may make in one Window.
	Limit  int64
	Window time.Duration
	// Methods are the JSON-RPC methods limited; nil limits every method.
	Methods []string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// errLimited is the cause of a refusal over the limit.
var errLimited = errors.New("ratelimit: over the limit for this window")

// Interceptor returns the limit as a request interceptor.
func (l *Limiter) Interceptor() stateless.Interceptor {
	return stateless.Interceptor{Request: l.admit}
}

func (l *Limiter) admit(ctx context.Context, r *stateless.InterceptedRequest) (context.Context, *mcperr.Error) {
	if l.Methods != nil && !slices.Contains(l.Methods, r.Method) {
		return ctx, nil
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	start := now.Truncate(l.Window)
	end := start.Add(l.Window)
	n, err := l.Counter.Increment(ctx, Key(r.Call.Principal, start), end.Add(l.Window))
	if err != nil {
		return ctx, mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, fmt.Errorf("ratelimit: counting: %w", err))
	}
	if n > l.Limit {
		return ctx, mcperr.NewRetryable(mcperr.KindRateLimited, end.Sub(now), errLimited)
	}
	return ctx, nil
}

// Key is the counter key of principal's window that starts at start: a
// digest of the principal, so that the key's length is bounded and the
// table names no caller.
func Key(principal string, start time.Time) string {
	sum := sha256.Sum256([]byte(principal))
	return "rate#" + hex.EncodeToString(sum[:16]) + "#" + strconv.FormatInt(start.Unix(), 10)
}
