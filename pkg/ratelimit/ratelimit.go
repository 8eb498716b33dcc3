// Package ratelimit bounds what one caller can make the endpoint do, as
// per-principal quotas: a rate of calls (Limiter: at most Limit calls in
// each Window) and a number of things held at once (Slots: live tasks,
// open streams). Both are counted where every instance of the function
// sees them (DynamoDB) when a table is configured, so that a caller
// cannot multiply its allowance by the number of warm instances, and in
// the process otherwise.
//
// Who is charged is [stateless.Call.QuotaKey]: the principal, or for an
// anonymous caller the address the transport verified, so that anonymous
// callers do not share one allowance.
//
// The Limiter counts only what costs: by default tools/call, prompts/get
// and resources/read (CallMethods). Reading or cancelling one's own task,
// server/discover, the lists and the metadata documents are not counted,
// so a limited client can still discover the server and poll or cancel
// the task it started. A call over the limit is refused with a retryable
// RateLimited error whose retry-after is the time left in the window
// (error.data.retryAfterMs, and the Retry-After header), and it costs no
// write: the instance that saw the window exhausted remembers it and
// refuses the principal locally until the window ends, so that a flood
// of refused calls costs at most one table write per principal, window
// and instance.
//
// A counter that cannot be reached fails the call closed, with a
// retryable dependency failure: a limit that let everything through
// when its store is down would be no limit.
//
// Cost: DynamoDB counts with one UpdateItem per admitted call, one
// write request unit (its item is under 1 KB): $0.625 per million calls
// at us-east-1's on-demand price (docs/operations.md, "Quotas"). Each
// window's item expires by the table's TTL a window after the window
// ends.
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

// CallMethods are the methods a Limiter counts when its Methods are nil:
// the ones that run a handler of the server's (a tool, a prompt, a
// resource), which is what a caller's flood costs.
var CallMethods = []string{"tools/call", "prompts/get", "resources/read"}

// Limiter is a fixed-window rate limit per principal.
type Limiter struct {
	Counter Counter
	// Limit is how many calls a principal may make in one Window.
	Limit  int64
	Window time.Duration
	// Methods are the JSON-RPC methods limited; nil is CallMethods.
	Methods []string
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	// exhausted remembers the windows this instance saw used up, until
	// each ends: calls in them are refused without counting.
	exhausted memo[window]
}

// maxExhausted bounds the windows a Limiter remembers as used up; past it
// the expired ones are forgotten, and if none has expired a refusal
// counts again (one write) rather than the memory growing with the
// number of callers.
const maxExhausted = 1 << 16

// errLimited is the cause of a refusal over the limit.
var errLimited = errors.New("ratelimit: over the limit for this window")

// Interceptor returns the limit as a request interceptor.
func (l *Limiter) Interceptor() stateless.Interceptor {
	return stateless.Interceptor{Request: l.intercept}
}

// intercept answers the request if the caller's window allows it, and
// refuses it otherwise.
func (l *Limiter) intercept(ctx context.Context, r *stateless.InterceptedRequest, next func(context.Context) *stateless.Answer) *stateless.Answer {
	if e := l.admit(ctx, r); e != nil {
		return stateless.Refusal(e)
	}
	return next(ctx)
}

// admit counts the request against its caller's window, and refuses it
// when the window is used up.
func (l *Limiter) admit(ctx context.Context, r *stateless.InterceptedRequest) *mcperr.Error {
	methods := l.Methods
	if methods == nil {
		methods = CallMethods
	}
	if !slices.Contains(methods, r.Method) {
		return nil
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	start := now.Truncate(l.Window)
	end := start.Add(l.Window)
	w := window{caller: r.Call.QuotaKey(), start: start.Unix()}
	if l.exhausted.has(w, now) {
		return mcperr.NewRetryable(mcperr.KindRateLimited, end.Sub(now), errLimited)
	}
	var n int64
	var err error
	if m, ok := l.Counter.(*Memory); ok {
		// In this process nothing needs the digest or the key's string.
		n = m.incrementWindow(w, end.Add(l.Window))
	} else {
		n, err = l.Counter.Increment(ctx, Key(w.caller, start), end.Add(l.Window))
	}
	if err != nil {
		return mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, fmt.Errorf("ratelimit: counting: %w", err))
	}
	if n > l.Limit {
		l.exhausted.keep(w, end, now, maxExhausted)
		return mcperr.NewRetryable(mcperr.KindRateLimited, end.Sub(now), errLimited)
	}
	return nil
}

// window is one caller's window: its quota key and the window's start
// (Unix seconds).
type window struct {
	caller string
	start  int64
}

// Key is the counter key of principal's window that starts at start: a
// digest of the principal, so that the key's length is bounded and the
// table names no caller. It is built in one allocation: it is made for
// every limited call.
func Key(principal string, start time.Time) string {
	var b [64]byte
	k := append(b[:0], "rate#"...)
	k = appendDigest(k, principal)
	k = append(k, '#')
	k = strconv.AppendInt(k, start.Unix(), 10)
	return string(k)
}

// appendDigest appends the name of a principal in a key that does not
// name it: 128 bits of its SHA-256, hex.
func appendDigest(dst []byte, principal string) []byte {
	sum := sha256.Sum256([]byte(principal))
	return hex.AppendEncode(dst, sum[:16])
}
