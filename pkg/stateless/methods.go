package stateless

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// preEncoded is a result the server assembled as JSON itself; it is
// spliced into the response without another encoding pass.
type preEncoded []byte

func (x *exchange) discover() *Response {
	caps := x.reg.capabilities()
	res := struct {
		SupportedVersions []string           `json:"supportedVersions"`
		Capabilities      ServerCapabilities `json:"capabilities"`
		Instructions      string             `json:"instructions,omitempty"`
	}{supportedVersions, caps, x.s.opts.Instructions}
	h := x.s.discoverCache()
	return x.result(res, &resultFields{cache: &h})
}

// initialize answers the legacy handshake without keeping a session: the
// client's version if it is a served legacy revision, else the latest
// legacy revision — never 2026-07-28, which has no handshake.
func (x *exchange) initialize() *Response {
	d := x.d
	if !d.hasParams || d.paramsErr != nil {
		return x.refuse(d.id, mcperr.Wrap(mcperr.MalformedInitialize, d.paramsErr))
	}
	if d.params.ProtocolVersion == nil {
		return x.refuse(d.id, mcperr.New(mcperr.UnnegotiableVersion))
	}
	v := *d.params.ProtocolVersion
	if !isLegacy(v) {
		v = LatestLegacyVersion
	}
	x.version, x.o.Version = v, v
	caps := x.reg.capabilities()
	caps.Extensions = nil // a 2026-07-28 member
	res := struct {
		ProtocolVersion string             `json:"protocolVersion"`
		Capabilities    ServerCapabilities `json:"capabilities"`
		ServerInfo      Implementation     `json:"serverInfo"`
		Instructions    string             `json:"instructions,omitempty"`
	}{v, caps, x.s.info, x.s.opts.Instructions}
	return x.result(res, &resultFields{})
}

// Cursor kinds, so that a cursor of one list is refused by another.
const (
	cursorTools     = 't'
	cursorPrompts   = 'p'
	cursorResources = 'r'
	cursorTemplates = 'T'
)

// startAfter decodes a cursor: the key of the last item of the previous
// page. nil or "" starts at the beginning.
func startAfter(cursor *string, kind byte) (string, bool, *mcperr.Error) {
	if cursor == nil || *cursor == "" {
		return "", false, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(*cursor)
	if err != nil || len(b) < 2 || b[0] != kind {
		return "", false, mcperr.New(mcperr.InvalidCursor)
	}
	return string(b[1:]), true, nil
}

func makeCursor(kind byte, key string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, key...))
}

// listPage writes one page of a list result: the visible items after the
// cursor, at most the page size, in the list's deterministic order.
func listPage[T any](x *exchange, ctx context.Context, field string, kind byte, items []T,
	key func(T) string, visible func(T) Visibility, enc func(T) []byte, hidden bool) *Response {
	after, has, e := startAfter(x.d.params.Cursor, kind)
	if e != nil {
		return x.refuse(x.d.id, e)
	}
	var b bytes.Buffer
	b.WriteString(`{"`)
	b.WriteString(field)
	b.WriteString(`":[`)
	n, more := 0, false
	for _, it := range items {
		k := key(it)
		if has && k <= after {
			continue
		}
		if v := visible(it); v != nil && !v(ctx, x.call.Principal) {
			continue
		}
		if n == x.s.opts.PageSize {
			more = true
			break
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(enc(it))
		after, n = k, n+1
	}
	b.WriteByte(']')
	if more {
		b.WriteString(`,"nextCursor":"`)
		b.WriteString(makeCursor(kind, after))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	h := x.s.listCache(hidden)
	return x.result(preEncoded(b.Bytes()), &resultFields{cache: &h})
}

func (x *exchange) listTools(ctx context.Context) *Response {
	return listPage(x, ctx, "tools", cursorTools, x.reg.tools,
		func(t *registeredTool) string { return t.def.Name },
		func(t *registeredTool) Visibility { return t.def.Visible },
		func(t *registeredTool) []byte { return t.encoded }, x.reg.toolsHidden)
}

func (x *exchange) listPrompts(ctx context.Context) *Response {
	return listPage(x, ctx, "prompts", cursorPrompts, x.reg.prompts,
		func(p *registeredPrompt) string { return p.def.Name },
		func(p *registeredPrompt) Visibility { return p.def.Visible },
		func(p *registeredPrompt) []byte { return p.encoded }, x.reg.promptsHidden)
}

func (x *exchange) listResources(ctx context.Context) *Response {
	return listPage(x, ctx, "resources", cursorResources, x.reg.resources,
		func(r *registeredResource) string { return r.def.URI },
		func(r *registeredResource) Visibility { return r.def.Visible },
		func(r *registeredResource) []byte { return r.encoded }, x.reg.resourcesHidden)
}

func (x *exchange) listTemplates(ctx context.Context) *Response {
	// Templates keep registration order (it is also match order); the
	// cursor key is the position, zero-padded so keys compare in order.
	type indexed struct {
		i int
		t *registeredTemplate
	}
	items := make([]indexed, len(x.reg.templates))
	for i, t := range x.reg.templates {
		items[i] = indexed{i, t}
	}
	return listPage(x, ctx, "resourceTemplates", cursorTemplates, items,
		func(it indexed) string { return fmt.Sprintf("%08d", it.i) },
		func(it indexed) Visibility { return it.t.def.Visible },
		func(it indexed) []byte { return it.t.encoded }, x.reg.resourcesHidden)
}

// visibleToolNames lists the names this caller may see, for suggestions.
func (x *exchange) visibleToolNames(ctx context.Context) []string {
	names := make([]string, 0, len(x.reg.tools))
	for _, t := range x.reg.tools {
		if t.def.Visible == nil || t.def.Visible(ctx, x.call.Principal) {
			names = append(names, t.def.Name)
		}
	}
	return names
}

func (x *exchange) callTool(ctx context.Context) *Response {
	d, p := x.d, &x.d.params
	if p.Name == nil {
		return x.refuse(d.id, mcperr.New(mcperr.MalformedParams))
	}
	name := *p.Name
	t := x.reg.tool(name)
	if t == nil || (t.def.Visible != nil && !t.def.Visible(ctx, x.call.Principal)) {
		return x.refuse(d.id, mcperr.NewUnknownTool(suggest(name, x.visibleToolNames(ctx))))
	}
	x.o.Target = t.def.Name
	if !x.legacy && !checkParamHeaders(x.r.Header, t.params, p.Arguments) {
		return x.refuse(d.id, mcperr.New(mcperr.HeaderMismatch))
	}
	if e := x.checkScopes(t); e != nil {
		return x.refuse(d.id, e)
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return x.refuse(d.id, mcperr.Wrap(mcperr.MalformedParams, errors.New("arguments is not an object")))
	}
	if e := x.inputResponses(); e != nil {
		return x.refuse(d.id, e)
	}
	// An unusable key is refused whether or not the tool takes claims:
	// dropping it would run a side-effecting call unclaimed.
	key, e := idempotencyKey(p.IdempotencyKey, x.r.Header)
	if e != nil {
		return x.refuse(d.id, e)
	}
	x.call.IdempotencyKey = key
	b := x.stateKey("tools/call", t.def.Name, args)
	if e := x.openState(ctx, b, p.RequestState); e != nil {
		return x.refuse(d.id, e)
	}
	if err := t.input.validate(args); err != nil {
		return x.toolFailure(mcperr.NewInvalidArguments(err.Error()))
	}
	// The handler's deadline: the earlier of the tool's MaxDuration and
	// the request's deadline less the margin, by which the call is
	// answered whether the handler has returned or not.
	claimStart := time.Now()
	deadline := claimStart.Add(t.def.maxDuration())
	if rd, ok := ctx.Deadline(); ok {
		if rd = rd.Add(-x.s.opts.DeadlineMargin); rd.Before(deadline) {
			deadline = rd
		}
	}
	if !deadline.After(claimStart) {
		return x.refuse(d.id, mcperr.NewRetryable(mcperr.Timeout, time.Second, errors.New("no time left to run the tool before the request's deadline")))
	}
	if n := x.s.overdue.Load(); int(n) >= x.s.opts.MaxOverdue {
		return x.refuse(d.id, mcperr.NewRetryable(mcperr.Timeout, time.Second, fmt.Errorf("%d tool handlers are still running past their deadline", n)))
	}
	var ticket Ticket
	if idem := x.s.opts.Idempotency; idem != nil && !t.def.ReadOnly() && (x.call.IdempotencyKey != "" || t.def.IdempotentByArguments) {
		replay, tk, refusal := idem.Begin(ctx, &IdempotentCall{Principal: x.call.Principal, Tool: t.def.Name, Key: x.call.IdempotencyKey, Arguments: args,
			Lease: deadline.Sub(claimStart)})
		x.o.Steps.Claim = time.Since(claimStart)
		if refusal != nil {
			x.o.Claim = claimDecision(refusal.Kind())
			return x.refuse(d.id, refusal)
		}
		if replay != nil {
			x.o.Claim = ClaimReplay
			marked, err := markReplay(replay)
			if err != nil {
				return x.refuse(d.id, mcperr.Wrap(mcperr.Internal, fmt.Errorf("stored result does not decode: %w", err)))
			}
			x.o.Kind = "replay"
			return x.respond(appendRawResult(nil, d.id, marked))
		}
		x.o.Claim = ClaimNew
		ticket = tk
		defer func() {
			// A handler that panicked, or a path that left without a
			// result, gives the claim up so a retry can run.
			if ticket != nil {
				x.finishClaim(ctx, ticket.Release)
			}
		}()
	}
	// A single-use state is redeemed after the claim (a replay wins),
	// under the handler's deadline, so that its lease is the claim's, and
	// settled with the outcome.
	if x.redeemID != "" {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		e := x.redeemState(rctx)
		cancel()
		if e != nil {
			return x.refuse(d.id, e)
		}
	}
	defer x.releaseState(ctx)
	handlerStart := time.Now()
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if ticket != nil {
		hctx = context.WithValue(hctx, ticketKey{}, ticket)
	}
	r, returned := x.runTool(hctx, t, args)
	x.o.Steps.Handler = time.Since(handlerStart)
	if !returned {
		// Abandoned: the claim is neither completed nor released, by
		// this request or by the handler when it returns. It stays in
		// progress until its lease ends, which outlasts the handler's
		// deadline, so a retry cannot run the tool beside it. A
		// single-use state stays held the same way, until its lease ends.
		ticket = nil
		x.redemption = nil
		return x.refuse(d.id, mcperr.NewRetryable(mcperr.Timeout, time.Second,
			fmt.Errorf("tool %s did not return within %v of its deadline", t.def.Name, time.Since(deadline).Round(time.Millisecond))))
	}
	if r.panic != nil {
		// The deferred release gives the claim up.
		x.o.Panic, x.o.Err, x.o.ErrFromTool = r.panic, errPanic, true
		return x.refuse(d.id, mcperr.New(mcperr.Internal))
	}
	res, err := r.res, r.err
	if err != nil && hctx.Err() != nil && ctx.Err() == nil && errors.Is(err, hctx.Err()) {
		// The handler gave up at its own deadline, before the request's.
		x.o.ErrFromTool = true
		return x.refuse(d.id, mcperr.Wrap(mcperr.Timeout, err))
	}
	resp := x.toolOutcome(ctx, t, b, res, err)
	if ticket != nil {
		// A retryable failure is not kept: its retry runs the tool.
		if x.resultBytes != nil && !x.inputRequired && !x.retryable {
			resp = x.completeClaim(ctx, ticket, resp)
		} else {
			_ = x.finishClaim(ctx, ticket.Release)
		}
		ticket = nil
	}
	// The claim first: a result that was not committed is answered as a
	// retryable refusal, and then the state is released for the retry.
	x.finishState(ctx)
	return resp
}

// completeClaim records the call's result with its claim, together with
// the writes the tool enlisted and, when the ticket can join it, the
// redemption of the call's single-use state. It returns the answer: resp,
// unless the tool's enlisted effect was not committed, which the client
// must retry.
func (x *exchange) completeClaim(ctx context.Context, t Ticket, resp *Response) *Response {
	joined := false
	if j, ok := t.(RedemptionJoiner); ok && x.redemption != nil {
		joined = j.JoinRedemption(x.redemption)
	}
	result := x.resultBytes
	err := x.finishClaim(ctx, func(ctx context.Context) error { return t.Complete(ctx, result) })
	switch {
	case err == nil:
		if joined {
			x.redemption = nil // spent with the claim
		}
		return resp
	case errors.Is(err, ErrNotCommitted):
		x.o.Claim = ClaimNotCommitted
		x.call.notes = nil // nothing happened: no progress to report
		return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.NotCommitted, time.Second, err))
	}
	// The tool's effect happened; its result goes to the client even
	// though a retry after the lease would run the tool again.
	x.o.Claim = ClaimLost
	return resp
}

// toolRun is what a tool handler returned, or how it panicked.
type toolRun struct {
	res   *CallToolResult
	err   error
	panic *Panic
	call  Call
}

// runTool runs t's handler in its own goroutine and waits for it until
// ctx, the handler's context, is done (and a short grace after). It
// reports false when the handler has not returned by then: the handler is abandoned, its eventual result
// discarded, and it is counted in the server's overdue handlers until it
// returns. The handler works on a copy of the request's Call, so that one
// left running cannot touch the answered exchange.
func (x *exchange) runTool(ctx context.Context, t *registeredTool, args json.RawMessage) (toolRun, bool) {
	const running, returned, abandoned = 0, 1, 2
	var state atomic.Int32
	done := make(chan toolRun, 1)
	c := x.call
	s := x.s
	go func() {
		var r toolRun
		defer func() {
			if p := recover(); p != nil {
				r.panic = &Panic{Value: p, Stack: debug.Stack()}
			}
			if !state.CompareAndSwap(running, returned) {
				s.overdue.Add(-1)
				return
			}
			r.call = c
			done <- r
		}()
		r.res, r.err = t.handler(ctx, &ToolRequest{Call: &c, Name: t.def.Name, Arguments: args})
	}()
	select {
	case r := <-done:
		x.call = r.call
		return r, true
	case <-ctx.Done():
	}
	// A handler that honours its context returns now: give it a fifth of
	// the margin to be answered as it returned.
	grace := time.NewTimer(s.opts.DeadlineMargin / 5)
	defer grace.Stop()
	select {
	case r := <-done:
		x.call = r.call
		return r, true
	case <-grace.C:
	}
	s.overdue.Add(1)
	if state.CompareAndSwap(running, abandoned) {
		return toolRun{}, false
	}
	// It returned at the deadline: its answer stands.
	s.overdue.Add(-1)
	r := <-done
	x.call = r.call
	return r, true
}

// finishClaim completes or releases a claim, f retrying a failing store
// within finishContext's time. A failure is a server fault for the
// operator.
func (x *exchange) finishClaim(ctx context.Context, f func(context.Context) error) error {
	start := time.Now()
	ctx, cancel := x.finishContext(ctx)
	defer cancel()
	err := f(ctx)
	x.o.Steps.Finish += time.Since(start)
	if err != nil {
		x.o.Fault = true
		x.o.Err = fmt.Errorf("finishing the idempotency claim: %w", err)
		x.o.ErrFromTool = false
	}
	return err
}

// maxFinish bounds the time spent recording a call's outcome.
const maxFinish = 10 * time.Second

// finishContext is the context in which a call's claim and state are
// settled: not cancelled with the request (the result exists and must be
// recorded, or the claim freed), and ending a fifth of the DeadlineMargin
// before the request's deadline — the invocation's, on Lambda — so that
// the answer still leaves in time, and at most maxFinish from now.
func (x *exchange) finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	end := time.Now().Add(maxFinish)
	if d, ok := ctx.Deadline(); ok {
		if d = d.Add(-x.s.opts.DeadlineMargin / 5); d.Before(end) {
			end = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

// claimDecision names the claim decision a refusal of kind k records.
func claimDecision(k mcperr.Kind) string {
	switch k {
	case mcperr.DuplicateInFlight:
		return ClaimInProgress
	case mcperr.IdempotencyConflict:
		return ClaimConflict
	}
	return ClaimUnavailable
}

func (x *exchange) toolOutcome(ctx context.Context, t *registeredTool, b stateKey, res *CallToolResult, err error) *Response {
	if err != nil {
		var ir *InputRequired
		var me *mcperr.Error
		var te *mcperr.ToolError
		switch {
		case errors.As(err, &ir):
			if x.legacy {
				return x.errorResult("This tool needs input from the user, which needs protocol revision " + Version20260728 + ".")
			}
			out, e := x.inputRequiredResult(ctx, b, ir)
			if e != nil {
				return x.refuse(x.d.id, e)
			}
			x.inputRequired = true
			return x.result(out, &resultFields{resultTyp: "input_required"})
		case errors.As(err, &me):
			x.o.ErrFromTool = true
			return x.refuse(x.d.id, me)
		case errors.As(err, &te):
			return x.toolFailure(te)
		case ctx.Err() != nil:
			x.o.ErrFromTool = true
			return x.refuse(x.d.id, mcperr.Wrap(mcperr.Timeout, err))
		}
		x.o.Err, x.o.ErrFromTool = err, true
		x.o.Kind = "tool_error"
		return x.errorResult(err.Error())
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.StructuredContent != nil && !res.IsError {
		// Marshal once: the same bytes are validated, sent as
		// structuredContent, and mirrored in a text block.
		raw, err := marshalCompact(res.StructuredContent)
		if err != nil {
			return x.refuse(x.d.id, mcperr.Wrap(mcperr.Internal, err))
		}
		if t.output != nil {
			if err := t.output.validate(raw); err != nil {
				return x.refuse(x.d.id, mcperr.Wrap(mcperr.Internal, fmt.Errorf("tool %s: structured result does not match its output schema: %w", t.def.Name, err)))
			}
		}
		res.StructuredContent = json.RawMessage(raw)
		if len(res.Content) == 0 {
			res.Content = []Content{Text(string(raw))}
		}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	if res.IsError {
		x.o.Kind = "tool_error"
	}
	return x.result(res, &resultFields{meta: res.Meta})
}

// handlerFailure refuses with what a prompt, resource or completion
// handler returned as its error. The error is the handler's, so its text
// is kept out of the logs (see Outcome.ErrFromTool).
func (x *exchange) handlerFailure(ctx context.Context, err error) *Response {
	x.o.Err, x.o.ErrFromTool = err, true
	return x.refuse(x.d.id, handlerError(ctx, err))
}

// stateKey names the request a state of this exchange belongs to: its
// caller, method, target and arguments, at this endpoint.
func (x *exchange) stateKey(method, target string, args json.RawMessage) stateKey {
	return stateKey{x.call.Principal, method, target, args, x.r.Endpoint}
}

// openState opens the request's state, if it carries one, before any
// handler runs, and records the decision.
func (x *exchange) openState(ctx context.Context, k stateKey, token *string) *mcperr.Error {
	if token == nil {
		return nil
	}
	start := time.Now()
	id, e := x.s.openState(ctx, &x.call, k, token)
	x.redeemID = id
	x.o.Steps.State = time.Since(start)
	x.o.StateOpened = e == nil
	return e
}

// inputRequiredResult renders ir and records whether a state was sealed.
func (x *exchange) inputRequiredResult(ctx context.Context, k stateKey, ir *InputRequired) (map[string]any, *mcperr.Error) {
	out, e := x.s.inputRequiredResult(ctx, &x.call, k, ir)
	if _, sealed := out["requestState"]; sealed {
		x.o.StateSealed = true
	}
	return out, e
}

// toolFailure answers with an isError result describing te.
func (x *exchange) toolFailure(te *mcperr.ToolError) *Response {
	x.retryable = te.Kind() == mcperr.RetryLater
	x.o.Kind = te.Kind().String()
	if te.ServerFault() {
		x.o.Fault = true
	}
	if c := te.Unwrap(); c != nil {
		x.o.Err, x.o.ErrFromTool = c, true
	}
	res := &CallToolResult{Content: []Content{Text(te.Text())}, IsError: true}
	f := &resultFields{}
	if !x.legacy {
		f.meta = Meta{MetaToolFailure: te.Failure()}
	}
	return x.result(res, f)
}

// errorResult answers with an isError result carrying text: a tool's own
// error, shown to the model as the spec asks.
func (x *exchange) errorResult(text string) *Response {
	return x.result(&CallToolResult{Content: []Content{Text(text)}, IsError: true}, &resultFields{})
}

// MetaToolFailure is the result _meta key carrying the machine-readable
// form of a tool failure ([mcperr.ToolFailure]).
const MetaToolFailure = "io.github.serverless-mcp/failure"

func (x *exchange) getPrompt(ctx context.Context) *Response {
	d, p := x.d, &x.d.params
	if p.Name == nil {
		return x.refuse(d.id, mcperr.New(mcperr.MalformedParams))
	}
	pr := x.reg.prompt(*p.Name)
	if pr == nil || (pr.def.Visible != nil && !pr.def.Visible(ctx, x.call.Principal)) {
		return x.refuse(d.id, mcperr.New(mcperr.UnknownPrompt))
	}
	x.o.Target = pr.def.Name
	var args map[string]string
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && string(a) != "null" {
		if err := json.Unmarshal(a, &args); err != nil {
			return x.refuse(d.id, mcperr.Wrap(mcperr.MalformedParams, err))
		}
	}
	for _, a := range pr.def.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return x.refuse(d.id, mcperr.Wrap(mcperr.MalformedParams, errors.New("missing a required prompt argument")))
		}
	}
	if e := x.inputResponses(); e != nil {
		return x.refuse(d.id, e)
	}
	b := x.stateKey("prompts/get", pr.def.Name, p.Arguments)
	if e := x.openState(ctx, b, p.RequestState); e != nil {
		return x.refuse(d.id, e)
	}
	if e := x.redeemState(ctx); e != nil {
		return x.refuse(d.id, e)
	}
	defer x.releaseState(ctx)
	handlerStart := time.Now()
	res, err := pr.handler(ctx, &PromptRequest{Call: &x.call, Name: pr.def.Name, Arguments: args})
	x.o.Steps.Handler = time.Since(handlerStart)
	defer x.finishState(ctx) // with the answer, once the handler returned
	if err != nil {
		return x.nonToolInput(ctx, b, err)
	}
	if res == nil {
		return x.refuse(d.id, mcperr.Wrap(mcperr.Internal, errors.New("prompt handler returned no result")))
	}
	if res.Messages == nil {
		res.Messages = []PromptMessage{}
	}
	return x.result(res, &resultFields{meta: res.Meta})
}

// inputResponses reads the retry's inputResponses into the call.
func (x *exchange) inputResponses() *mcperr.Error {
	m, err := parseInputResponses(x.d.params.InputResponses)
	if err != nil {
		return mcperr.Wrap(mcperr.MalformedParams, err)
	}
	x.call.inputResponses = m
	return nil
}

// nonToolInput maps the error of a prompt or resource handler.
func (x *exchange) nonToolInput(ctx context.Context, b stateKey, err error) *Response {
	var ir *InputRequired
	if errors.As(err, &ir) {
		if x.legacy {
			return x.refuse(x.d.id, mcperr.NewMissingCapability(map[string]any{"elicitation": map[string]any{}}).
				WithData(map[string]any{"requiredCapabilities": map[string]any{}, "requiredProtocolVersion": Version20260728}))
		}
		out, e := x.inputRequiredResult(ctx, b, ir)
		if e != nil {
			return x.refuse(x.d.id, e)
		}
		return x.result(out, &resultFields{resultTyp: "input_required"})
	}
	return x.handlerFailure(ctx, err)
}

func (x *exchange) readResource(ctx context.Context) *Response {
	d, p := x.d, &x.d.params
	if p.URI == nil {
		return x.refuse(d.id, mcperr.New(mcperr.MalformedParams))
	}
	uri := *p.URI
	var h ResourceHandler
	var vars map[string]string
	if r := x.reg.resource(uri); r != nil && (r.def.Visible == nil || r.def.Visible(ctx, x.call.Principal)) {
		h = r.handler
	} else {
		for _, t := range x.reg.templates {
			if t.def.Visible != nil && !t.def.Visible(ctx, x.call.Principal) {
				continue
			}
			if v := t.match(uri); v != nil {
				h, vars = t.handler, v
				break
			}
		}
	}
	if h == nil {
		return x.refuse(d.id, mcperr.NewUnknownResource(uri))
	}
	if e := x.inputResponses(); e != nil {
		return x.refuse(d.id, e)
	}
	b := x.stateKey("resources/read", uri, nil)
	if e := x.openState(ctx, b, p.RequestState); e != nil {
		return x.refuse(d.id, e)
	}
	if e := x.redeemState(ctx); e != nil {
		return x.refuse(d.id, e)
	}
	defer x.releaseState(ctx)
	handlerStart := time.Now()
	res, err := h(ctx, &ResourceRequest{Call: &x.call, URI: uri, Vars: vars})
	x.o.Steps.Handler = time.Since(handlerStart)
	defer x.finishState(ctx) // with the answer, once the handler returned
	if err != nil {
		return x.nonToolInput(ctx, b, err)
	}
	if res == nil || len(res.Contents) == 0 {
		return x.refuse(d.id, mcperr.NewUnknownResource(uri))
	}
	hint := x.s.readCache()
	if res.Cache != nil {
		hint = *res.Cache
	}
	return x.result(res, &resultFields{cache: &hint, meta: res.Meta})
}

func (x *exchange) complete(ctx context.Context) *Response {
	d, p := x.d, &x.d.params
	if p.Ref == nil || p.Argument == nil {
		return x.refuse(d.id, mcperr.New(mcperr.MalformedParams))
	}
	req := &CompleteRequest{Call: &x.call, RefType: p.Ref.Type, Argument: p.Argument.Name, Value: p.Argument.Value}
	switch p.Ref.Type {
	case "ref/prompt":
		req.RefName = p.Ref.Name
	case "ref/resource":
		req.RefName = p.Ref.URI
	default:
		return x.refuse(d.id, mcperr.New(mcperr.MalformedParams))
	}
	if p.Context != nil {
		req.Context = p.Context.Arguments
	}
	res, err := x.reg.complete(ctx, req)
	if err != nil {
		return x.handlerFailure(ctx, err)
	}
	if res == nil {
		res = &CompleteResult{}
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	if len(res.Completion.Values) > 100 {
		res.Completion.Values = res.Completion.Values[:100]
		res.Completion.HasMore = true
	}
	return x.result(res, &resultFields{})
}

// marshalCompact is compact JSON without HTML escaping.
func marshalCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
