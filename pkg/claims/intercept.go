package claims

import (
	"context"
	"errors"
	"fmt"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Interceptor is the Guard as a stateless server's interceptor: it claims
// the idempotency key of every tools/call that needs one and redeems the
// single-use request state of every request that carries one. Put it in
// stateless.Options.Interceptors; interceptors before it run outside the
// claim (a rate limit refuses before a key is claimed), interceptors
// after it inside (what they answer is what a keyed retry replays).
//
// A tools/call is claimed when it carries an idempotency key (or its tool
// is IdempotentByArguments) and its tool is not read-only, or its call
// becomes a task: a keyed retry of a lost CreateTaskResult must find the
// task the first call made, not start another. The order is fixed, here
// and nowhere else:
//
//  1. The claim is taken first: a replay wins over everything after it,
//     so that a keyed retry of a call that completed gets its result even
//     though the state it carried is spent by then.
//  2. The single-use state is redeemed next, under the handler's
//     deadline, so that its lease is the claim's.
//  3. The handler runs (next), with the claim's ticket in its context for
//     Enlist.
//  4. An abandoned handler (still running at its deadline) keeps both its
//     claim and its redemption held until their leases end, which outlast
//     the handler's deadline, so that a retry cannot run beside it.
//  5. The claim is settled before the state: completed with the result
//     (and the tool's enlisted writes, and, in one transaction, the
//     state's redemption) when the answer is one a retry must get again,
//     released otherwise. A result that was not committed is answered as
//     a retryable refusal.
//  6. The redemption is settled last: spent, unless the answer is one a
//     retry may change (then released, for the retry to use).
//  7. A panic anywhere inside releases both, so that a retry can run.
//
// A keyed call of a tool declared to have no effect but its enlisted
// writes (stateless.Tool.EnlistedEffectsOnly), on a Committer, that
// neither becomes a task nor spends a single-use state, commits in one
// step instead (onestep.go): its handler runs first, with nothing
// claimed, and when it returns a result the interceptor's tool wrapper
// makes the claim (completed), the writes and the stored result one
// conditional write, before the server encodes the answer; the claim's
// condition decides: committed, a replay of the winner's result, a
// conflict or an "in progress" refusal, or a write's own condition
// failed (its tool failure, nothing stored). A failure, a request for
// input or a panic commits nothing, and a handler left running commits
// nothing when it returns.
func (g *Guard) Interceptor() stateless.Interceptor {
	return stateless.Interceptor{Execute: g.execute, Tool: g.wrapTool, Provides: stateless.Provides{
		Extensions:     map[string]any{stateless.MetaIdempotency: map[string]any{}},
		ToolMeta:       toolMeta,
		SingleUseState: true,
	}}
}

// toolMeta marks, in a tool's listed definition, that its calls take an
// idempotency key ([stateless.MetaIdempotency]): a side-effecting tool's,
// and a task tool's (a keyed retry finds the task the first call made).
func toolMeta(t *stateless.Tool) stateless.Meta {
	if t.ReadOnly() && t.TaskSupport == stateless.TaskSupportForbidden {
		return nil
	}
	return stateless.Meta{stateless.MetaIdempotency: map[string]any{"byArguments": t.IdempotentByArguments}}
}

// redemptionWindow is how long a spent state's redemption is remembered:
// longer than any state's validity.
const redemptionWindow = 24 * time.Hour

type ticketKey struct{}

// execute is the Interceptor's Execute.
func (g *Guard) execute(ctx context.Context, e *stateless.Execution, next func(context.Context) *stateless.Answer) *stateless.Answer {
	var tk *ticket
	if claimed(e) {
		if c, ok := g.inOneStep(e); ok {
			return g.executeInOneStep(ctx, e, next, c)
		}
		start := time.Now()
		bctx, cancel := context.WithDeadline(ctx, e.Deadline)
		replay, t, refusal := g.begin(bctx, &call{principal: e.Principal, tool: e.Tool.Name, key: e.Key,
			args: e.Arguments, lease: time.Until(e.Deadline)})
		cancel()
		took := time.Since(start)
		switch {
		case refusal != nil:
			e.Note(stateless.Note{Claim: decision(refusal.Kind()), ClaimTook: took})
			return stateless.Refusal(refusal)
		case replay != nil:
			e.Note(stateless.Note{Claim: stateless.ClaimReplay, ClaimTook: took})
			return stateless.Replay(replay)
		}
		e.Note(stateless.Note{Claim: stateless.ClaimNew, ClaimTook: took})
		tk = t
		defer func() {
			if tk != nil { // left without settling: a panic
				g.settle(ctx, e, "releasing the idempotency claim", tk.Release)
			}
		}()
		ctx = context.WithValue(ctx, ticketKey{}, tk)
	}
	var rd *redemption
	if e.SingleUse != "" {
		r, refusal := g.redeemFor(ctx, e)
		if refusal != nil {
			if tk != nil {
				g.settle(ctx, e, "releasing the idempotency claim", tk.Release)
				tk = nil
			}
			return stateless.Refusal(refusal)
		}
		rd = r
		defer func() {
			if rd != nil { // left without settling: a panic
				g.settle(ctx, e, "releasing the single-use state's redemption", rd.Release)
			}
		}()
	}
	a := next(ctx)
	if a.Abandoned() {
		tk, rd = nil, nil
		return a
	}
	if tk != nil {
		a = g.finish(ctx, e, tk, &rd, a)
		tk = nil
	}
	if rd != nil {
		settle, what := rd.Complete, "spending the single-use state"
		if a.Retryable() {
			settle, what = rd.Release, "releasing the single-use state's redemption"
		}
		rd = nil
		g.settle(ctx, e, what, settle)
	}
	return a
}

// claimed says whether a call takes a claim.
func claimed(e *stateless.Execution) bool {
	return e.Tool != nil && (!e.Tool.ReadOnly() || e.Task) && (e.Key != "" || e.Tool.IdempotentByArguments)
}

// redeemFor starts redeeming the execution's single-use state, under the
// handler's deadline. A spent state is refused as any invalid state is;
// one being redeemed by another call is refused retryably
// (request_state_in_use), not spent.
func (g *Guard) redeemFor(ctx context.Context, e *stateless.Execution) (*redemption, *mcperr.Error) {
	start := time.Now()
	rctx, cancel := context.WithDeadline(ctx, e.Deadline)
	r, err := g.redeem(rctx, e.SingleUse, time.Now().Add(redemptionWindow))
	cancel()
	took := time.Since(start)
	var held *redemptionHeld
	switch {
	case errors.As(err, &held):
		// Not spent: its holder may fail, or die, and the state be usable
		// again. The retry-after is the holder's lease.
		e.Note(stateless.Note{StateTook: took, StateRefused: true})
		return nil, mcperr.NewRetryable(mcperr.KindStateInUse, max(held.retryAfter, 100*time.Millisecond), err)
	case err != nil:
		e.Note(stateless.Note{StateTook: took})
		return nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, err)
	case r == nil:
		e.Note(stateless.Note{StateTook: took, StateRefused: true})
		return nil, mcperr.Wrap(mcperr.KindTamperedState, errors.New("single-use state redeemed already"))
	}
	e.Note(stateless.Note{StateTook: took})
	return r, nil
}

// finish settles a claim with the call's answer: completed with the
// result a retry must get again — together with the writes the tool
// enlisted and, when the store can join it, the redemption of the call's
// single-use state (then *rd is spent with it and cleared) — else
// released. It returns the answer: a, unless the tool's enlisted effect
// was not committed, which the client must retry.
func (g *Guard) finish(ctx context.Context, e *stateless.Execution, t *ticket, rd **redemption, a *stateless.Answer) *stateless.Answer {
	if !a.Keep() {
		g.settle(ctx, e, "releasing the idempotency claim", t.Release)
		return a
	}
	if err := t.refusal(); err != nil {
		// Nothing is written: the tool's error, the operator's to mend.
		g.settle(ctx, e, "releasing the idempotency claim", t.Release)
		return stateless.Refusal(mcperr.Wrap(mcperr.KindInternal, err))
	}
	t.enlistChanges(e.Call)
	joined := *rd != nil && t.joinRedemption(*rd)
	result := a.Result()
	err := g.settle(ctx, e, "finishing the idempotency claim", func(ctx context.Context) error { return t.Complete(ctx, result) })
	switch {
	case err == nil:
		if joined {
			*rd = nil // spent with the claim
		}
		t.committed()
		return a
	case errors.Is(err, ErrNotCommitted):
		// Nothing happened: the client retries, and the state is
		// released for the retry.
		e.Note(stateless.Note{Claim: stateless.ClaimNotCommitted})
		return stateless.Refusal(mcperr.NewRetryable(mcperr.KindNotCommitted, time.Second, err))
	}
	// The tool's effect happened; its result goes to the client even
	// though a retry after the lease would run the tool again.
	e.Note(stateless.Note{Claim: stateless.ClaimLost})
	t.committed()
	return a
}

// settle runs f, which completes or releases something the call holds, in
// the execution's settle context, and records a failure as a server fault
// for the operator.
func (g *Guard) settle(ctx context.Context, e *stateless.Execution, what string, f func(context.Context) error) error {
	start := time.Now()
	sctx, cancel := e.SettleContext(ctx)
	defer cancel()
	err := f(sctx)
	n := stateless.Note{SettleTook: time.Since(start)}
	if err != nil {
		n.Fault = fmt.Errorf("%s: %w", what, err)
	}
	e.Note(n)
	return err
}

// decision names the claim decision a refusal of kind k records.
func decision(k mcperr.Kind) string {
	switch k {
	case mcperr.KindDuplicateInFlight:
		return stateless.ClaimInProgress
	case mcperr.KindIdempotencyConflict:
		return stateless.ClaimConflict
	}
	return stateless.ClaimUnavailable
}

// redemptionHeld reports that another call is redeeming a single-use
// state: it is not spent, and may be usable after retryAfter (that call's
// lease), if that call fails retryably or dies.
type redemptionHeld struct{ retryAfter time.Duration }

func (e *redemptionHeld) Error() string {
	return fmt.Sprintf("single-use state being redeemed by another call, for up to %v", e.retryAfter.Round(time.Millisecond))
}
