package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// toolOutcome answers what a tool's handler returned, under ctx, the
// request's context (or, for Invoke, the handler's).
func (x *exchange) toolOutcome(ctx context.Context, t *registeredTool, b stateKey, res *CallToolResult, err error) *Response {
	if err != nil {
		var ir *InputRequired
		var me *mcperr.Error
		var te *mcperr.ToolError
		switch {
		case errors.As(err, &ir):
			if x.legacy {
				return errorResult(x, "This tool needs input from the user, which needs protocol revision "+Version20260728+".")
			}
			out, e := x.inputRequiredResult(ctx, b, ir)
			if e != nil {
				return x.refuse(x.d.id, e)
			}
			x.inputRequired = true
			return x.result(out, &resultFields{resultTyp: "input_required"})
		case ctx.Err() == context.Canceled:
			return x.cancelled(ctx, err)
		case errors.As(err, &me):
			x.o.ErrFromTool = true
			return x.refuse(x.d.id, me)
		case errors.As(err, &te):
			return toolFailure(x, te)
		case ctx.Err() != nil:
			x.o.ErrFromTool = true
			return x.refuse(x.d.id, mcperr.Wrap(mcperr.KindTimeout, err))
		}
		x.o.Err, x.o.ErrFromTool = err, true
		x.o.Kind = "tool_error"
		return errorResult(x, err.Error())
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.StructuredContent != nil && !res.IsError {
		// Marshal once: the same bytes are validated, sent as
		// structuredContent, and mirrored in a text block.
		raw, err := marshalCompact(res.StructuredContent)
		if err != nil {
			return x.refuse(x.d.id, mcperr.Wrap(mcperr.KindInternal, err))
		}
		if t.output != nil {
			if err := t.output.validate(raw); err != nil {
				return x.refuse(x.d.id, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("tool %s: structured result does not match its output schema: %w", t.def.Name, err)))
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
	if ctx.Err() == context.Canceled {
		return x.cancelled(ctx, err)
	}
	x.o.Err, x.o.ErrFromTool = err, true
	return x.refuse(x.d.id, handlerError(ctx, err))
}

// cancelled answers a request whose caller went away (hung up, cancelled
// its task) before its handler answered, with err: whatever the handler
// made of it, the request ends as the caller's doing — cancelled, not a
// fault, its line at INFO with the context's cause rather than err, whose
// text is the handler's.
func (x *exchange) cancelled(ctx context.Context, err error) *Response {
	if x.o.Err == nil {
		x.o.Err = context.Cause(ctx)
	}
	return x.refuse(x.d.id, mcperr.Wrap(mcperr.KindCancelled, err))
}

// toolFailure answers with an isError result describing te.
func toolFailure(x *exchange, te *mcperr.ToolError) *Response {
	x.retryable = te.Kind() == mcperr.ToolKindRetryLater
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
func errorResult(x *exchange, text string) *Response {
	return x.result(&CallToolResult{Content: []Content{Text(text)}, IsError: true}, &resultFields{})
}

// MetaToolFailure is the result _meta key carrying the machine-readable
// form of a tool failure ([mcperr.ToolFailure]).
const MetaToolFailure = "io.github.serverless-mcp/failure"
