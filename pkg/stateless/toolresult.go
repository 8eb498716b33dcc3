package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// replier encodes the answers of one request: the server's encoder, the
// request's id and its era. A request's is its exchange's
// (exchange.replier); a tool run no request carries (Server.Invoke) has
// one of its own.
type replier struct {
	s      *Server
	id     json.RawMessage
	legacy bool
}

// replier is the request's.
func (x *exchange) replier() replier { return replier{x.s, x.d.id, x.legacy} }

// result is the answer with result v, decorated for the era.
func (r replier) result(v any, f *resultFields) Answer {
	f.modern = !r.legacy
	msg, res, err := appendResult(r.s, nil, r.id, v, f)
	if err != nil {
		return refused(mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("encoding result: %w", err)))
	}
	return Answer{msg: msg, res: res}
}

// toolAnswer is the answer to what a tool's handler returned, under ctx,
// the request's context: its result, the input it asks for (the round's
// state sealed, bound to k), or what its error makes of the call.
func (x *exchange) toolAnswer(ctx context.Context, t *registeredTool, k stateKey, res *CallToolResult, err error) Answer {
	var ir *InputRequired
	switch {
	case err == nil:
	case errors.As(err, &ir):
		if x.legacy {
			return x.replier().errorResult("This tool needs input from the user, which needs protocol revision " + Version20260728 + ".")
		}
		return x.inputRequired(ctx, k, ir)
	}
	return x.replier().toolResult(ctx, t, res, err)
}

// toolResult is the answer to a tool's result, or to its error when it
// is not a request for input: the caller's hang-up (whatever the handler
// made of it), the handler's own refusal, a tool failure (an isError
// result with its machine-readable form), a timeout, or any other error's
// text shown to the model as an isError result, as the spec asks.
func (r replier) toolResult(ctx context.Context, t *registeredTool, res *CallToolResult, err error) Answer {
	if err != nil {
		var me *mcperr.Error
		var te *mcperr.ToolError
		switch {
		case ctx.Err() == context.Canceled:
			return cancelled(ctx, err)
		case errors.As(err, &me):
			return refusedBy(me, nil, true)
		case errors.As(err, &te):
			return r.toolFailure(te)
		case ctx.Err() != nil:
			return refusedBy(mcperr.Wrap(mcperr.KindTimeout, err), nil, true)
		}
		a := r.errorResult(err.Error())
		a.kind, a.cause, a.fromTool = "tool_error", err, true
		return a
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.StructuredContent != nil && !res.IsError {
		// Marshal once: the same bytes are validated, sent as
		// structuredContent, and mirrored in a text block.
		raw, err := r.s.marshalCompact(res.StructuredContent)
		if err != nil {
			return refused(mcperr.Wrap(mcperr.KindInternal, err))
		}
		if t.output != nil {
			if err := t.output.validate(raw); err != nil {
				return refused(mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("tool %s: structured result does not match its output schema: %w", t.def.Name, err)))
			}
		}
		res.structured = raw
		if len(res.Content) == 0 {
			res.Content = []Content{Text(string(raw))}
		}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	a := r.result(res, &resultFields{meta: res.Meta})
	if res.IsError {
		a.kind = "tool_error"
	}
	return a
}

// toolFailure is the answer of an isError result describing te: a
// RetryLater failure is one a retry may change, and a fault of the
// server's when the failure says so.
func (r replier) toolFailure(te *mcperr.ToolError) Answer {
	res := &CallToolResult{Content: []Content{Text(te.Text())}, IsError: true}
	f := &resultFields{}
	if !r.legacy {
		f.meta = Meta{MetaToolFailure: te.Failure()}
	}
	a := r.result(res, f)
	a.kind, a.fault = te.Kind().String(), te.ServerFault()
	a.retryable = te.Kind() == mcperr.ToolKindRetryLater
	if c := te.Unwrap(); c != nil {
		a.cause, a.fromTool = c, true
	}
	return a
}

// toolFailure is the request's answer of an isError result describing
// te.
func (x *exchange) toolFailure(te *mcperr.ToolError) Answer { return x.replier().toolFailure(te) }

// errorResult is the answer of an isError result carrying text: a tool's
// own error, shown to the model as the spec asks.
func (r replier) errorResult(text string) Answer {
	return r.result(&CallToolResult{Content: []Content{Text(text)}, IsError: true}, &resultFields{})
}

// MetaToolFailure is the result _meta key carrying the machine-readable
// form of a tool failure ([mcperr.ToolFailure]).
const MetaToolFailure = "io.github.serverless-mcp/failure"
