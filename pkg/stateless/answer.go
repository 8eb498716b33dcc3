package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Answer is what a request's work came to, as one value: each stage of
// the server returns one, an interceptor around the work sees the one
// its next produced and may return another, and the server renders the
// final one once (its HTTP response) and derives the request's Outcome
// from it once (Outcome.classify). What an answer means — a result a
// retry must get again, a refusal, a handler left running, a call that
// is to become a task — is the answer's, and nowhere else.
//
// Answers are made by the server ([Replay], [Refusal] and
// [Execution.Result] for interceptors); the zero Answer is no answer.
type Answer struct {
	// msg is the encoded JSON-RPC response of a result, and res the
	// result object inside it.
	msg []byte
	res encodedResult
	// refusal is the error answered in place of a result.
	refusal *mcperr.Error
	// replay is a stored result (Answer.Result's form) answered again.
	replay json.RawMessage
	// status answers without a JSON-RPC message: 202 to a notification.
	status int

	// inputRequired marks a result that asks for input (not stored);
	// retryable an answer a retry may change (a RetryLater tool failure,
	// a retryable refusal, a panic); abandoned a handler left running at
	// its deadline; startsTask a call that is to become a task.
	inputRequired, retryable, abandoned, startsTask bool

	// kind is the Outcome.Kind of a result that reports a failure (a tool
	// failure's type, "tool_error"); fault says the server is at fault
	// though the answer is a result (a RetryLater failure, an Inline tool
	// that overran its deadline).
	kind  string
	fault bool
	// cause is the internal reason, for the log only; fromTool says it
	// (or the panic) came from a handler's code, whose text may quote the
	// call's arguments (Outcome.ErrFromTool).
	cause    error
	fromTool bool
	panic    *Panic
}

// Result is the result object answered, in the form a replay of it sends
// (marked with [MetaReplay]), for an interceptor to store (when Keep) or
// to see; for a replay, the stored result it replays; nil when the answer
// is not a result.
func (a *Answer) Result() []byte {
	if a.replay != nil {
		return a.replay
	}
	if a.res.obj == nil {
		return nil
	}
	return a.res.replayForm()
}

// Keep reports whether the answer is a result a retry of the request must
// get again: a result that neither asked for input nor reports a failure
// its retry may not meet (a RetryLater tool failure).
func (a *Answer) Keep() bool { return a.res.obj != nil && !a.inputRequired && !a.retryable }

// Retryable reports whether a retry of the request may be answered
// otherwise: a RetryLater tool failure, a retryable refusal (a timeout,
// say), or a handler that panicked.
func (a *Answer) Retryable() bool { return a.retryable }

// Abandoned reports that the handler had not returned by its deadline and
// may still be running: whatever it holds must stay held until it could
// no longer be (a claim's lease), so that a retry cannot run beside it.
func (a *Answer) Abandoned() bool { return a.abandoned }

// StartsTask reports that the call is to become a task: the tool's
// BeforeTask let it through, and the interceptor that runs tasks
// ([Provides.TaskRuns]) creates it and answers with it
// ([Execution.Result]).
func (a *Answer) StartsTask() bool { return a.startsTask }

// Refused is the refusal answered, or nil when the answer is not one.
func (a *Answer) Refused() *mcperr.Error { return a.refusal }

// Replay answers the request with a result stored by an earlier execution
// (Answer.Result's form), marked as a replay, in place of running the
// handler.
func Replay(stored json.RawMessage) *Answer { return &Answer{replay: stored} }

// Refusal answers the request with a refusal in place of what it would
// have answered (its progress notifications are dropped with it). A
// retryable refusal's retry may run the handler again.
func Refusal(e *mcperr.Error) *Answer {
	a := refused(e)
	return &a
}

// refused is the answer that refuses with e.
func refused(e *mcperr.Error) Answer { return Answer{refusal: e, retryable: e.Retryable()} }

// refusedBy is the answer that refuses with e for cause, an error of a
// handler's (fromTool) or of the server's.
func refusedBy(e *mcperr.Error, cause error, fromTool bool) Answer {
	a := refused(e)
	a.cause, a.fromTool = cause, fromTool
	return a
}

// panicked is the answer to a request whose handler panicked with p: an
// internal error, which a retry may not meet.
func panicked(p *Panic) Answer {
	a := refusedBy(mcperr.Wrap(mcperr.KindInternal, errPanic), errPanic, true)
	a.panic, a.retryable = p, true
	return a
}

// accepted is the answer to a notification: 202, no body.
var accepted = Answer{status: http.StatusAccepted}

// errPanic is the Err of a request whose handler panicked; the value and
// the stack are in Outcome.Panic.
var errPanic = errors.New("handler panicked")

// result is the answer with result v, decorated for the request's era.
func (x *exchange) result(v any, f *resultFields) Answer { return x.replier().result(v, f) }

// render is the HTTP response of a, the request's final answer, written
// to x.response (one allocation with the request's). A result leaves
// after the request's notifications, as an event stream, when there are
// any and the client accepts one; a refusal or a replay leaves alone, as
// JSON.
func (x *exchange) render(a *Answer) *Response {
	if resp := x.renderOf(a); resp != &x.response {
		x.response = *resp
	}
	return &x.response
}

func (x *exchange) renderOf(a *Answer) *Response {
	var id json.RawMessage
	if x.d != nil {
		id = x.d.id
	}
	switch {
	case a.status != 0:
		return &Response{Status: a.status, Header: http.Header{}}
	case a.replay != nil:
		marked, err := markedReplay(a.replay)
		if err == nil {
			return jsonResponse(appendRawResult(nil, id, marked))
		}
		*a = refusedBy(mcperr.New(mcperr.KindInternal), fmt.Errorf("stored result does not decode: %w", err), false)
	case a.startsTask:
		*a = refusedBy(mcperr.New(mcperr.KindInternal), errors.New("the call was to become a task, and no interceptor created it"), false)
	case a.refusal == nil && a.msg == nil:
		*a = refusedBy(mcperr.New(mcperr.KindInternal), errors.New("the request came to no answer"), false)
	}
	if a.refusal != nil {
		return refusalResponse(id, a.refusal, x.legacy)
	}
	return x.respond(a.msg)
}

// refusalResponse is the response that refuses the request with id (nil
// when it could not be read) with e, with the era's status.
func refusalResponse(id json.RawMessage, e *mcperr.Error, legacy bool) *Response {
	status := e.HTTPStatus()
	if legacy {
		status = e.LegacyHTTPStatus()
	}
	h := http.Header{"Content-Type": contentTypeJSON}
	switch e.Kind() {
	case mcperr.KindMethodNotAllowed:
		h.Set("Allow", http.MethodPost)
	case mcperr.KindInsufficientScope, mcperr.KindUnauthorized:
		if c := e.Challenge(); c != "" {
			h.Set("WWW-Authenticate", c)
			h.Set(ChallengeRelayHeader, c)
		}
	}
	if d := e.RetryAfter(); d > 0 {
		h.Set("Retry-After", fmt.Sprint(int((d+time.Second-1)/time.Second)))
	}
	return &Response{Status: status, Header: h, Body: appendError(nil, id, e)}
}

// jsonResponse is a 200 answer of msg as JSON.
func jsonResponse(msg []byte) *Response {
	return &Response{Status: http.StatusOK, Header: http.Header{"Content-Type": contentTypeJSON}, Body: msg}
}

// respond sends a response message, as a server-sent event stream after
// the request's notifications when there are any and the client accepts
// a stream, else as JSON.
func (x *exchange) respond(msg []byte) *Response {
	notes := x.call.notes
	if len(notes) == 0 || !x.acceptsSSE {
		x.response = Response{Status: http.StatusOK, Header: http.Header{"Content-Type": contentTypeJSON}, Body: msg}
		return &x.response
	}
	n := len(msg) + 32
	for _, m := range notes {
		n += len(m) + 32
	}
	body := make([]byte, 0, n)
	for _, m := range notes {
		body = appendEvent(body, m)
	}
	body = appendEvent(body, msg)
	return &Response{Status: http.StatusOK, Header: http.Header{
		"Content-Type":      {"text/event-stream"},
		"Cache-Control":     {"no-cache"},
		"X-Accel-Buffering": {"no"},
	}, Body: body}
}

// handlerError maps what a prompt, resource, completion or custom
// method's handler returned as its error to a refusal.
func handlerError(ctx context.Context, err error) *mcperr.Error {
	var me *mcperr.Error
	var te *mcperr.ToolError
	switch {
	case ctx.Err() == context.Canceled: // the caller went away
		return mcperr.Wrap(mcperr.KindCancelled, err)
	case errors.As(err, &me):
		return me
	case errors.As(err, &te):
		return mcperr.NewHandlerFailed(te.Text(), err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return mcperr.Wrap(mcperr.KindTimeout, err)
	}
	return mcperr.NewHandlerFailed(err.Error(), err)
}

// handlerFailure is the answer to a prompt, resource, completion or
// custom method's handler that returned err. The error is the handler's,
// so its text is kept out of the logs (see Outcome.ErrFromTool).
func handlerFailure(ctx context.Context, err error) Answer {
	if ctx.Err() == context.Canceled {
		return cancelled(ctx, err)
	}
	return refusedBy(handlerError(ctx, err), err, true)
}

// cancelled is the answer to a request whose caller went away (hung up,
// cancelled its task) before its handler answered, with err: whatever
// the handler made of it, the request ends as the caller's doing —
// cancelled, not a fault, its line at INFO with the context's cause
// rather than err, whose text is the handler's.
func cancelled(ctx context.Context, err error) Answer {
	return refusedBy(mcperr.Wrap(mcperr.KindCancelled, err), context.Cause(ctx), false)
}

// contentTypeJSON is the Content-Type of every JSON answer, shared: a
// header's value slice is never written in place (Header.Set replaces it,
// Add appends to a full slice, which copies it).
var contentTypeJSON = []string{"application/json"}
