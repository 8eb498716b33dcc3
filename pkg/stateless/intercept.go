package stateless

import (
	"context"
	"net/http"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Interceptor is one seam around the server's work, in the spirit of
// go-sdk's receiving middleware and connect-go's interceptors: a rate
// limit, a quota, a circuit breaker, tracing, auditing go here rather
// than into the core. [Options.Interceptors] run in order, the first
// outermost.
type Interceptor struct {
	// Request, if set, runs for every request once it has passed the
	// transport's checks, been decoded and authenticated, and its method
	// is known to be served, before the method's handler (a legacy
	// initialize, which sets up no call, excepted). It may refuse the
	// request (a retryable RateLimited with a retry-after, say), which is
	// then answered and reported as any refusal; or return the context
	// the handler runs under.
	Request func(ctx context.Context, r *InterceptedRequest) (context.Context, *mcperr.Error)
	// Tool, if set, wraps each tool's handler, once, when the tool is
	// registered, given the tool's definition: the wrapper sees every
	// call's request and its arguments, validated, and what the handler
	// returns, and may answer in its place. It runs inside the call's
	// idempotency claim: what it returns is what a keyed retry replays.
	Tool func(tool *Tool, next ToolHandler) ToolHandler
	// Execute, if set, runs around the execution of every tools/call,
	// prompts/get and resources/read that passed the server's checks: it
	// sees what is about to run ([Execution]) and what next answered, as
	// it will be sent, and may answer in its place — a replay of a stored
	// result, a refusal — or settle what it holds with the answer. It runs
	// outside the tool interceptors. Package claims makes idempotency
	// claims and single-use request state here.
	Execute func(ctx context.Context, e *Execution, next func(context.Context) *Answer) *Answer
	// Idempotent says Execute makes side-effecting tool calls
	// exactly-once by their idempotency keys: the server advertises it
	// ([MetaIdempotency], in its capabilities' extensions and in the
	// _meta of each tool it applies to).
	Idempotent bool
	// RedeemsState says Execute redeems single-use request state
	// (Execution.SingleUse): a handler may ask for one
	// (InputRequired.SingleUse) only when some interceptor does.
	RedeemsState bool
	// Tasks says Execute serves the tasks extension: the calls of tools
	// with a TaskSupport become tasks when their client declares it
	// (Execution.Task), and when the tool's BeforeTask lets one through
	// (Answer.StartsTask) Execute creates the task and answers with it
	// (Execution.Result). A tool with a TaskSupport may be registered only
	// on a server with such an interceptor (package tasks's).
	Tasks bool
}

// InterceptedRequest is what a request interceptor knows of a request.
type InterceptedRequest struct {
	// Method is the JSON-RPC method; Target the tool's or prompt's name
	// or the resource's URI it names ("" for the others).
	Method, Target string
	// Call is the request's caller, revision and capabilities.
	Call *Call
	// Header is the request's headers (read only).
	Header http.Header
}

// intercept runs the request interceptors; a refusal ends the request.
func (x *exchange) intercept(ctx context.Context) (context.Context, *mcperr.Error) {
	ics := x.s.opts.Interceptors
	if len(ics) == 0 {
		return ctx, nil
	}
	r := &x.intercepted
	*r = InterceptedRequest{Method: x.d.method, Call: &x.call, Header: x.r.Header}
	if t := x.d.target(); t != nil {
		r.Target = *t
	}
	for _, ic := range ics {
		if ic.Request == nil {
			continue
		}
		var e *mcperr.Error
		if ctx, e = ic.Request(ctx, r); e != nil {
			return ctx, e
		}
	}
	return ctx, nil
}

// interceptTool wraps a tool's handler in the tool interceptors, the
// first outermost.
func interceptTool(s *Server, def *Tool, h ToolHandler) ToolHandler {
	ics := s.opts.Interceptors
	for i := len(ics) - 1; i >= 0; i-- {
		if ics[i].Tool != nil {
			h = ics[i].Tool(def, h)
		}
	}
	return h
}
