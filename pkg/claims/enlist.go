package claims

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Write is one write a tool enlists in its call's claim (EnlistWrites):
// a DynamoDB write (Item), committed in the claim's own transaction, or,
// when the claims are kept in memory, a change to state in the process's
// memory (Apply), made under the claim store's lock. Exactly one of Item
// and Apply is set.
type Write struct {
	// Item is a DynamoDB write with its own condition, to a table the
	// claims store's client can reach. It must not name the claim's item.
	Item *types.TransactWriteItem
	// Apply is a change in the process's memory, which the Memory store
	// commits with the call's claim as DynamoDB commits an Item: all or
	// nothing with the stored result, so that a local run behaves as one
	// on DynamoDB. It is called once, at commit, with the claim store's
	// lock held: it takes its own lock, checks its condition and, if that
	// holds, calls commit, which makes the rest of the commit (the writes
	// enlisted after it and the claim's record) and reports whether it
	// was made; it makes its own change only if so, and returns nil. If
	// its condition does not hold it returns an error without calling
	// commit, and nothing is committed. It must not block, call into the
	// claims, or fail once commit reported true. The Memory store takes
	// Apply writes only from a call that commits in one step (a tool
	// declared stateless.Tool.EnlistedEffectsOnly).
	Apply func(commit func() bool) error
	// OnConditionFailed is the tool failure the call is answered with
	// when Item's condition fails at commit, or Apply refuses with an
	// error that is not a *mcperr.ToolError (one that is, is answered as
	// it is): nothing is written and no result is stored, so a retry with
	// the same key runs the tool again, and may find the condition met.
	// Without it such a call is answered as not committed
	// (idempotency_not_committed, retryable). Only a call that commits in
	// one step answers it; one whose key was claimed first (a tool not
	// declared EnlistedEffectsOnly, a task, a call that spends a
	// single-use state) answers a failed condition as not committed.
	OnConditionFailed *mcperr.ToolError
}

// Enlist adds writes to the completion of the claimed call whose handler
// context is ctx, as EnlistWrites does: they are committed in one
// DynamoDB transaction with the claim's completion and the call's stored
// result, fenced by the claim's owner token, or not at all. A tool whose
// side effect is such a write therefore executes exactly once per
// idempotency key even if its process dies at any point: until the
// transaction commits nothing happened, and once it has, the key replays
// the result.
//
// The writes are made after the handler returns, so the handler must not
// depend on their outcome: it gives each write the condition that must
// still hold, and, for a call that commits in one step, the failure to
// answer when it does not (EnlistWrites, Write.OnConditionFailed). If a
// condition fails at commit, nothing is written; the client is answered
// with that failure, or else with a retryable refusal, whose retry runs
// the tool again and meets the new state. If the call ends without a
// result to keep (the tool failed retryably, asked for input, or
// panicked), the writes are dropped.
//
// Enlist reports false, and enlists nothing, when the call holds no
// claim (it carries no idempotency key, or its tool is read-only), when
// the claims are not kept in a DynamoDB table (Transactor), or when the
// call's writes would exceed MaxEnlisted: the tool then makes its writes
// itself, and is exactly-once only as far as its own conditions make it.
// A write into the claims' table under a key this module keeps its own
// items under (Reserved: "claim#", "task#", "event#", …) is taken, and
// refuses the call as a server fault naming the prefix, with nothing
// written.
func Enlist(ctx context.Context, writes ...types.TransactWriteItem) bool {
	ws := make([]Write, len(writes))
	for i := range writes {
		w := writes[i]
		ws[i] = Write{Item: &w}
	}
	return enlist(ctx, ws)
}

// EnlistWrites adds writes to the completion of the claimed call whose
// handler context is ctx, all or none: DynamoDB writes when the claims
// are in DynamoDB, in-memory ones (Write.Apply) when they are in memory
// and the call commits in one step. It reports false, and enlists
// nothing, when the call holds no claim, when a write is of a kind its
// claims store cannot commit, or past MaxEnlisted writes: the tool then
// makes its writes itself. See Enlist.
func EnlistWrites(ctx context.Context, writes ...Write) bool { return enlist(ctx, writes) }

// Enlisting reports whether Enlist would take DynamoDB writes for the call
// whose handler context is ctx. A tool that reads what its writes'
// conditions will check, to answer at once rather than at commit, checks
// it first and reads only then.
func Enlisting(ctx context.Context) bool {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t != nil && t.takes(Write{Item: &types.TransactWriteItem{}}) && t.room(0)
}

// OnCommit arranges for f to run once the claimed call whose handler
// context is ctx is known to have had its effect and is answered with its
// own result: after its result and the writes it enlisted are committed,
// or, when it enlisted none, its result recorded (or not, in the time
// left: its effect happened all the same). It does not run when the call
// is answered otherwise: a replay of an earlier call's result, a failed
// condition, a refusal. A tool whose handler runs before its call is
// claimed (stateless.Tool.EnlistedEffectsOnly) records what it did this
// way — a log record, a metric — so that a replay, which runs the handler
// too, records nothing. It reports false when ctx's call holds no claim,
// or its result is being recorded already: then nothing will run f, and
// the caller runs it itself.
func OnCommit(ctx context.Context, f func()) bool {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return false
	}
	t.after = append(t.after, f)
	return true
}

// enlist adds writes to the ticket of ctx's call, if it holds one that can
// commit them.
func enlist(ctx context.Context, writes []Write) bool {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t != nil && t.enlist(writes)
}

// enlist adds a tool's writes to the ticket, all or none, if its store
// can commit them and there is room. A write under a reserved key
// (Reserved) into the store's table is taken and refuses the call at
// commit, so that the tool neither writes it itself nor has it written.
func (t *ticket) enlist(writes []Write) bool {
	table := ""
	if ts, ok := t.g.store.(TableStore); ok {
		table = ts.Table()
	}
	if err := reservedWrite(table, writes); err != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.refused == nil {
			t.refused = err
		}
		return true
	}
	return t.add(writes)
}

// refusal is why the call may not commit (a write under a reserved key),
// or nil.
func (t *ticket) refusal() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

// add adds writes to the ticket, all or none, if its store can commit
// them and there is room: the tool's (enlist), or this module's own
// (enlistChanges), which may be under reserved keys.
func (t *ticket) add(writes []Write) bool {
	for _, w := range writes {
		if !t.takes(w) {
			return false
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed || len(t.writes)+len(writes) > MaxEnlisted {
		return false
	}
	t.writes = append(t.writes, writes...)
	return true
}

// enlistChanges enlists the change events c's handler notified, recorded
// by the Guard's ChangeRecorder, in the call's commit, and has the server
// hand them to this process's listen streams once it is made (Options.
// Changes). It does nothing when there is no recorder, no event, or no
// room: the server then records them after the call.
func (t *ticket) enlistChanges(c *stateless.Call) {
	rec := t.g.opts.Changes
	if rec == nil {
		return
	}
	deliver := c.CommitChanges(func(events []stateless.Event) bool {
		items, err := rec.TransactItems(events)
		if err != nil {
			return false
		}
		ws := make([]Write, len(items))
		for i := range items {
			ws[i] = Write{Item: &items[i]}
		}
		return t.add(ws)
	})
	if deliver != nil {
		t.mu.Lock()
		t.after = append(t.after, deliver)
		t.mu.Unlock()
	}
}

// takes reports whether the ticket's store can commit w: a DynamoDB write
// a Transactor can (and, for a call in one step, its Commit); an
// in-memory one the Memory store can, in one step.
func (t *ticket) takes(w Write) bool {
	switch {
	case w.Item != nil && w.Apply == nil:
		_, ok := t.g.store.(Transactor)
		return ok
	case w.Apply != nil && w.Item == nil:
		_, ok := t.g.store.(*Memory)
		return ok && t.step != nil
	}
	return false
}

// room reports whether n more writes may join the ticket.
func (t *ticket) room(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.sealed && len(t.writes)+n <= MaxEnlisted
}
