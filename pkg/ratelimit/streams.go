package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// StreamLimit bounds the streamed calls one principal holds open at once:
// a tools/call, prompts/get or resources/read answered through a stream
// ([stateless.Call.Streamed]) holds its connection, and on Lambda its
// invocation, until it is answered — up to the function's timeout — so
// that how many run at once, not how many start, is what such a caller
// costs. Each such call holds a slot, named at random, until it is
// answered or its deadline passes; a call past Max is refused RateLimited,
// retryably, before anything runs. Calls answered whole (the buffered
// doors) are bounded by the Limiter and the gateway's own timeout, and
// hold no slot. A listen stream (subscriptions/listen) holds a slot from
// the same allowance until it ends: what one principal holds open is its
// streamed calls and its listen streams together.
type StreamLimit struct {
	Slots Slots
	// Max is how many streamed calls a principal may hold open at once.
	Max int

	names slotNames
}

// slotNames names the slots of one StreamLimit: a random prefix, made
// once, and a count, so that a name is unique across instances and costs
// one allocation.
type slotNames struct {
	once   sync.Once
	prefix [16]byte // hex of 64 random bits
	n      atomic.Uint64
}

func (s *slotNames) next() string {
	s.once.Do(func() {
		var r [8]byte
		rand.Read(r[:])
		hex.Encode(s.prefix[:], r[:])
	})
	var b [40]byte
	k := append(b[:0], s.prefix[:]...)
	k = append(k, '.')
	k = strconv.AppendUint(k, s.n.Add(1), 10)
	return string(k)
}

// streamRetryAfter is the retry-after of a refused stream: a slot frees
// when another of the caller's calls is answered, which is not known.
const streamRetryAfter = 5 * time.Second

var errStreams = errors.New("ratelimit: the caller holds its quota of open streams")

// Interceptor returns the limit as an execution interceptor; put it
// before the claims Guard's, so that a refused call touches no claim.
func (s *StreamLimit) Interceptor() stateless.Interceptor {
	return stateless.Interceptor{Execute: s.execute, Request: s.listen}
}

// listen holds a slot for a listen stream while it is open.
func (s *StreamLimit) listen(ctx context.Context, r *stateless.InterceptedRequest, next func(context.Context) *stateless.Answer) *stateless.Answer {
	if r.Method != stateless.MethodListen || !r.Call.Streamed() {
		return next(ctx)
	}
	key, id := r.Call.QuotaKey(), s.names.next()
	if refusal := s.take(ctx, key, id, r.Deadline); refusal != nil {
		return refusal
	}
	defer s.giveBack(ctx, r.Deadline, key, id)
	return next(ctx)
}

// take takes a slot named id of key's, until deadline; the answer is the
// refusal when it cannot.
func (s *StreamLimit) take(ctx context.Context, key, id string, deadline time.Time) *stateless.Answer {
	switch err := s.Slots.Take(ctx, key, id, deadline, s.Max); {
	case errors.Is(err, ErrFull):
		return stateless.Refusal(mcperr.NewRetryable(mcperr.KindRateLimited, streamRetryAfter, fmt.Errorf("%w (%d)", errStreams, s.Max)))
	case err != nil:
		return stateless.Refusal(mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, fmt.Errorf("ratelimit: counting open streams: %w", err)))
	}
	return nil
}

// giveBack gives a listen stream's slot back once it ended, in a context
// its client's hang-up does not end, bounded; a slot that could not be
// given back lapses at the stream's deadline.
func (s *StreamLimit) giveBack(ctx context.Context, deadline time.Time, key, id string) {
	if _, ok := s.Slots.(interface{ inProcess() }); ok {
		_ = s.Slots.Give(ctx, key, id)
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = s.Slots.Give(sctx, key, id)
}

func (s *StreamLimit) execute(ctx context.Context, e *stateless.Execution, next func(context.Context) *stateless.Answer) *stateless.Answer {
	if !e.Call.Streamed() {
		return next(ctx)
	}
	key, id := e.Call.QuotaKey(), s.names.next()
	if refusal := s.take(ctx, key, id, e.Deadline); refusal != nil {
		return refusal
	}
	// Given back however next ends, a panic included; a slot that could
	// not be given back lapses at the call's deadline.
	defer s.give(ctx, e, key, id)
	return next(ctx)
}

// give gives a call's slot back once it is answered: in a context that
// the caller's hang-up does not end and the settle bound does, unless the
// slots are in this process and wait on nothing.
func (s *StreamLimit) give(ctx context.Context, e *stateless.Execution, key, id string) {
	if _, ok := s.Slots.(interface{ inProcess() }); ok {
		_ = s.Slots.Give(ctx, key, id)
		return
	}
	sctx, cancel := e.SettleContext(ctx)
	defer cancel()
	_ = s.Slots.Give(sctx, key, id)
}
