package claims

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// A call commits in one step when its tool has no effect but the writes
// it enlists (stateless.Tool.EnlistedEffectsOnly) and its store is a
// Committer: its handler runs first, with nothing claimed, and the claim,
// the writes and the stored result are then one conditional write. The
// claim's condition decides between racing calls, and the loser — or a
// replay — learns the winner's record from the failed condition itself,
// so a first call costs one request and a replay one. Exactly-once holds
// because nothing the handler does escapes that write: the handler may
// run again (on a replay, beside a racing call), the write is all or
// nothing, and only the call whose write found the key free has an
// effect (docs/idempotency.md).
//
// The write is made inside the handler's call (the Guard's tool
// interceptor, wrapTool), before the server encodes the answer, so that
// a failed condition is answered as the tool failure its write names,
// a replay as the stored result, each as the server answers a handler's.
// The stored result is therefore the result the handler returned, as
// storedForm writes it, not its encoding: a replay encodes it again, for
// the era of the client that replays it.

// step is what a call that commits in one step shares between the
// Guard's execution interceptor, which sets it up and reports it, and
// its tool interceptor, which commits.
type step struct {
	committer Committer
	claim     Claim
	e         *stateless.Execution

	// Set under the ticket's lock. over says the execution interceptor
	// returned without the handler's answer (a handler left running at
	// its deadline): the call is answered, and its writes are never
	// committed.
	over bool
	// What the commit came to: the claim decision, how long it took, and
	// the refusal to answer in the handler's place.
	decision string
	took     time.Duration
	refusal  *mcperr.Error
}

// inOneStep says whether the claimed call e commits in one step, and with
// which store.
func (g *Guard) inOneStep(e *stateless.Execution) (Committer, bool) {
	if !e.Tool.EnlistedEffectsOnly || e.Task || e.SingleUse != "" {
		// A task's creation and a single-use state's redemption are
		// held under the claim: their calls claim first.
		return nil, false
	}
	c, ok := g.store.(Committer)
	return c, ok
}

// executeInOneStep is execute for a call that commits in one step: the
// handler runs, and commits (wrapTool), with a ticket that claims
// nothing yet.
func (g *Guard) executeInOneStep(ctx context.Context, e *stateless.Execution, next func(context.Context) *stateless.Answer, c Committer) *stateless.Answer {
	claim, refusal := g.claimFor(ctx, &call{principal: e.Principal, tool: e.Tool.Name, key: e.Key, args: e.Arguments})
	if refusal != nil {
		e.Note(stateless.Note{Claim: decision(refusal.Kind())})
		return stateless.Refusal(refusal)
	}
	t := &ticket{g: g, key: claim.Key, owner: claim.Owner, step: &step{committer: c, claim: claim, e: e}}
	a := next(context.WithValue(ctx, ticketKey{}, t))
	t.mu.Lock()
	s := *t.step
	if a.Abandoned() {
		// Left running: whatever it enlists from now on is dropped, and
		// it commits nothing (its ticket stays open, so that Enlist does
		// not tell it to make its writes itself).
		t.step.over = true
	} else {
		t.sealed = true
	}
	t.mu.Unlock()
	if s.decision == "" {
		return a // nothing was committed or claimed: a failure, input asked, a handler that panicked
	}
	n := stateless.Note{Claim: s.decision, ClaimTook: s.took}
	switch {
	case s.refusal != nil:
		e.Note(n)
		return stateless.Refusal(s.refusal)
	case s.decision == stateless.ClaimReplay:
		n.Kind = "replay"
	}
	e.Note(n)
	return a
}

// wrapTool is the Guard's tool interceptor: for a tool declared to have
// no effect but its enlisted writes, the handler whose call commits in
// one step commits when it returns a result (commitStep).
func (g *Guard) wrapTool(def *stateless.Tool, next stateless.ToolHandler) stateless.ToolHandler {
	if !def.EnlistedEffectsOnly {
		return next
	}
	return func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		t, _ := ctx.Value(ticketKey{}).(*ticket)
		if t == nil || t.step == nil {
			return next(ctx, req)
		}
		res, err := next(ctx, req)
		return t.commitStep(ctx, req.Call, res, err)
	}
}

// commitStep commits what the handler answered, in one conditional write
// with the call's claim, the writes it enlisted and the changes it
// notified (call is the handler's), and returns what the
// call is to answer: the handler's result once committed; the stored
// result of the call that holds the key, marked as a replay; the tool
// failure of a write whose condition failed; or a refusal (the key held
// by a call in progress or for another request, the commit not made or
// not known to be), which the execution interceptor answers in the
// handler's place. A failure is not committed: it had no effect, and its
// retry runs the tool again.
func (t *ticket) commitStep(ctx context.Context, call *stateless.Call, res *stateless.CallToolResult, herr error) (*stateless.CallToolResult, error) {
	t.mu.Lock()
	over, reserved := t.step.over, t.refused
	t.mu.Unlock()
	if reserved != nil && !over && herr == nil && (res == nil || !res.IsError) {
		// Nothing is written: the tool's error, the operator's to mend.
		t.mu.Lock()
		t.sealed = true
		t.mu.Unlock()
		return nil, mcperr.Wrap(mcperr.KindInternal, reserved)
	}
	if !over && herr == nil && (res == nil || !res.IsError) {
		t.enlistChanges(call)
	}
	t.mu.Lock()
	over, writes := t.step.over, t.writes
	t.sealed = true
	t.mu.Unlock()
	if over || herr != nil || res != nil && res.IsError {
		return res, herr
	}
	if res == nil {
		res = &stateless.CallToolResult{}
	}
	s, g := t.step, t.g
	stored, err := storedForm(res)
	if err != nil {
		return nil, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("claim %s: storing the result: %w", t.key, err))
	}
	response, oversize, err := g.deflate(stored)
	if err != nil {
		return nil, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("claim %s: compressing the result: %w", t.key, err))
	}
	// One instant for every attempt: a retry of the commit with the same
	// token must be the same request. The commit is the handler's last
	// step, made in its time: it is not cancelled with the request, but
	// ends at the handler's deadline, so that the call is answered (not
	// committed, at worst) rather than abandoned.
	now := g.opts.Now()
	cctx, cancel := s.e.SettleContext(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancelSettle context.CancelFunc
		cctx, cancelSettle = context.WithDeadline(cctx, dl)
		defer cancelSettle()
	}
	start := time.Now()
	err = commitBusy(cctx, func(ctx context.Context) error {
		return s.committer.Commit(ctx, t.owner, s.claim, response, oversize, writes, now)
	})
	cancel()
	took := time.Since(start)
	var held *HeldError
	var refused *WriteRefusedError
	var answer *stateless.CallToolResult
	var fail error
	decided := stateless.ClaimNew
	switch {
	case err == nil:
		answer = res
	case errors.As(err, &held):
		stored, refusal := g.held(s.claim, held.Holder, now)
		if refusal == nil {
			var rerr error
			if answer, rerr = replayed(stored); rerr != nil {
				refusal = mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("stored result of claim %s: %w", t.key, rerr))
			}
		}
		if refusal != nil {
			decided, fail = decision(refusal.Kind()), refusal
			break
		}
		decided = stateless.ClaimReplay
	case errors.As(err, &refused) && failureOf(writes, refused) != nil:
		// Nothing happened; the tool's own failure says why.
		decided, fail = stateless.ClaimNotCommitted, failureOf(writes, refused)
	default:
		// Nothing happened, or (the answers lost) it did and the retry
		// replays it: the client retries.
		decided, fail = stateless.ClaimNotCommitted, mcperr.NewRetryable(mcperr.KindNotCommitted, time.Second,
			fmt.Errorf("%w: claim %s: %w", ErrNotCommitted, t.key, err))
	}
	t.mu.Lock()
	s.decision, s.took = decided, took
	if me, ok := fail.(*mcperr.Error); ok {
		s.refusal = me
	}
	t.mu.Unlock()
	if err == nil {
		t.committed()
	}
	return answer, fail
}

// commitBusy makes a one-step commit: once — the SDK retries an attempt
// that fails to reach DynamoDB, with the same token — and again after a
// short wait while it meets another transaction on one of its items, at
// most maxBusy times and while ctx leaves time. Another failure is not
// tried again here: nothing is held that its retry would need freed, and
// the client's retry, told the commit was not made, makes it or finds it
// made (a replay).
func commitBusy(ctx context.Context, commit func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := commit(ctx)
		if !errors.Is(err, errBusy) || attempt >= maxBusy || !pause(ctx, attempt, maxBusy) {
			return err
		}
	}
}

// maxBusy is how many times a one-step commit that met another
// transaction is tried again.
const maxBusy = 6

// failureOf is the tool failure a refused write answers (nil: none): the
// one its Apply refused with, or its OnConditionFailed.
func failureOf(writes []Write, refused *WriteRefusedError) error {
	var te *mcperr.ToolError
	if errors.As(refused.Err, &te) {
		return te
	}
	if i := refused.Index; i >= 0 && i < len(writes) && writes[i].OnConditionFailed != nil {
		return writes[i].OnConditionFailed
	}
	return nil
}

// metaServerInfo is the _meta member in which a server names itself in a
// result (2026-07-28): a replay is named by the server that answers it.
const metaServerInfo = "io.modelcontextprotocol/serverInfo"

// storedCall is a result as a call that commits in one step stores it:
// the handler's result, which a replay answers again as the handler's
// (replayed). It is a result object a replay of a claim taken first can
// send as it is, too: resultType, a structured result's text mirror, the
// replay mark in _meta; only the server's name is left out.
type storedCall struct {
	ResultType        string                     `json:"resultType"`
	Content           []stateless.Content        `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent,omitempty"`
	IsError           bool                       `json:"isError,omitempty"`
	Meta              map[string]json.RawMessage `json:"_meta,omitempty"`
}

// storedForm encodes res as it is stored.
func storedForm(res *stateless.CallToolResult) ([]byte, error) {
	sc := storedCall{ResultType: "complete", Content: res.Content, Meta: map[string]json.RawMessage{stateless.MetaReplay: json.RawMessage("true")}}
	if sc.Content == nil {
		sc.Content = []stateless.Content{}
	}
	if res.StructuredContent != nil {
		raw, err := compactJSON(res.StructuredContent)
		if err != nil {
			return nil, err
		}
		sc.StructuredContent = raw
		if len(sc.Content) == 0 && !res.IsError {
			// The text block the server mirrors a structured result in,
			// as it will write it: so that a replay by a server that
			// sends the stored result as it is sends it too.
			sc.Content = []stateless.Content{stateless.Text(string(raw))}
		}
	}
	for k, v := range res.Meta {
		raw, err := compactJSON(v)
		if err != nil {
			return nil, err
		}
		sc.Meta[k] = raw
	}
	return compactJSON(&sc)
}

// replayed is the result a stored one is answered with again: the
// handler's, marked as a replay. It reads a result stored by a claim
// taken first too (the encoded result object): its resultType and its
// server's name are left for the server to write.
func replayed(stored json.RawMessage) (*stateless.CallToolResult, error) {
	var sc storedCall
	if err := json.Unmarshal(stored, &sc); err != nil {
		return nil, err
	}
	res := &stateless.CallToolResult{Content: sc.Content, IsError: sc.IsError, Meta: stateless.Meta{}}
	if len(sc.StructuredContent) > 0 && !bytes.Equal(sc.StructuredContent, []byte("null")) {
		res.StructuredContent = sc.StructuredContent
	}
	for k, v := range sc.Meta {
		if k != metaServerInfo {
			res.Meta[k] = v
		}
	}
	res.Meta[stateless.MetaReplay] = true
	return res, nil
}

// compactJSON is v as compact JSON, HTML characters left as they are (as
// the server encodes results).
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
