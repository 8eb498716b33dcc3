package stateless

import (
	"context"
	"maps"
	"net/http"
	"time"
)

// Interceptor is one seam around the server's work, in the spirit of
// go-sdk's receiving middleware and connect-go's interceptors: a rate
// limit, a quota, a circuit breaker, tracing, auditing, idempotency and
// tasks go here rather than into the core. Interceptors run in the order
// they were added ([Options.Interceptors], then [Server.Use]), the first
// outermost. Each hook wraps: it sees what goes in and what came out, and
// may answer in its place. The core names none of its implementations:
// what an interceptor gives the server beyond wrapping is its Provides.
type Interceptor struct {
	// Request, if set, wraps the answering of every request once it has
	// passed the transport's checks, been decoded and authenticated, and
	// its method is known to be served (a legacy initialize, which sets
	// up no call, excepted): it sees the request, calls next (with the
	// context the method's handler is to run under) and sees its answer,
	// or answers without calling it — a retryable RateLimited refusal
	// with a retry-after ([Refusal]), say — which is then answered and
	// reported as any answer.
	Request func(ctx context.Context, r *InterceptedRequest, next func(context.Context) *Answer) *Answer
	// Tool, if set, wraps each tool's handler, once, when the tool is
	// registered, given the tool's definition: the wrapper sees every
	// call's request and its arguments, validated, and what the handler
	// returns, and may answer in its place. It runs inside the call's
	// execution interceptors (an idempotency claim): what it returns is
	// what a keyed retry replays.
	Tool func(tool *Tool, next ToolHandler) ToolHandler
	// Execute, if set, runs around the execution of every tools/call,
	// prompts/get and resources/read that passed the server's checks: it
	// sees what is about to run ([Execution]) and what next answered, as
	// it will be sent, and may answer in its place — a replay of a stored
	// result, a refusal, a result of its own — or settle what it holds
	// with the answer. It runs outside the tool interceptors.
	Execute func(ctx context.Context, e *Execution, next func(context.Context) *Answer) *Answer
	// Provides is what the interceptor gives the server besides its
	// hooks.
	Provides Provides
}

// Provides is what an interceptor gives the server beyond wrapping its
// work: what the server advertises for it, what it adds to a tool's
// definition, and the features of the core that only work with it.
type Provides struct {
	// Extensions are advertised in the server's capabilities
	// (capabilities.extensions of server/discover), by identifier, with
	// their settings objects: package claims advertises
	// [MetaIdempotency].
	Extensions map[string]any
	// ToolMeta, if set, returns the _meta members a tool's definition is
	// listed with for this interceptor (nil for none), asked once per
	// tool: package claims marks the tools whose calls it makes
	// exactly-once.
	ToolMeta func(t *Tool) Meta
	// SingleUseState says the interceptor redeems single-use request
	// state (Execution.SingleUse) before next and settles the redemption
	// with the answer: a handler may ask for one (InputRequired.SingleUse)
	// only on a server with such an interceptor.
	SingleUseState bool
	// TaskRuns says the interceptor turns calls into tasks: the calls of
	// tools with a TaskSupport become tasks when their client declares
	// the extension (Execution.Task), and when the tool's BeforeTask lets
	// one through (Answer.StartsTask) the interceptor creates the task
	// and answers with it (Execution.Result). A tool with a TaskSupport
	// may be registered only once such an interceptor is in use.
	TaskRuns bool
	// ListenFilters are the members of a listen request's notifications
	// the interceptor's extension defines, and how each is honoured
	// (package tasks: "taskIds").
	ListenFilters []ListenFilter
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
	// Deadline is when the request is answered at the latest: its
	// deadline, or for a listen stream the stream's end.
	Deadline time.Time
}

// Use adds interceptors to the server, after those it has, the first
// outermost: an extension that needs more than one hook (its execution
// interceptor, its methods) installs itself in one call that makes this
// one. It must be called before the server answers its first request
// (registration is safe at any time; the chain of interceptors is not):
// it panics after.
func (s *Server) Use(ics ...Interceptor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answering.Load() {
		panic("stateless: Use after the server answered a request")
	}
	s.interceptors = append(s.interceptors, ics...)
	for _, ic := range ics {
		p := &ic.Provides
		s.executes = s.executes || ic.Execute != nil
		s.singleUse = s.singleUse || p.SingleUseState
		s.taskRuns = s.taskRuns || p.TaskRuns
		s.listenFilters = append(s.listenFilters, p.ListenFilters...)
		if p.ToolMeta != nil {
			s.toolMeta = append(s.toolMeta, p.ToolMeta)
		}
		if len(p.Extensions) > 0 {
			// Advertised by the registry, which server/discover reads.
			r := s.reg.Load().clone()
			r.advertised = maps.Clone(r.advertised)
			if r.advertised == nil {
				r.advertised = map[string]any{}
			}
			maps.Copy(r.advertised, p.Extensions)
			s.reg.Store(r)
		}
	}
	for _, ic := range ics {
		if ic.Tool == nil {
			continue
		}
		// The tools registered before this interceptor are wrapped again,
		// it innermost: no request has seen them yet.
		for _, t := range s.reg.Load().tools {
			t.handler = interceptTool(s, &t.def, t.raw)
		}
		break
	}
}

// listedMeta is the _meta a tool's definition is listed with: its own,
// with what the interceptors add (Provides.ToolMeta); nil when nothing
// is added.
func (s *Server) listedMeta(t *Tool) Meta {
	var meta Meta
	for _, f := range s.toolMeta {
		add := f(t)
		if len(add) == 0 {
			continue
		}
		if meta == nil {
			meta = make(Meta, len(t.Meta)+len(add))
			maps.Copy(meta, t.Meta)
		}
		maps.Copy(meta, add)
	}
	return meta
}

// intercept answers the request by its method's handler (serveMethod),
// inside the request interceptors, the first outermost.
func (x *exchange) intercept(ctx context.Context) Answer {
	// The chain is built inside out. The outermost interceptor is called
	// here rather than wrapped, which spares each request one closure.
	ics := x.s.interceptors
	var next func(context.Context) *Answer
	var outer func(context.Context, *InterceptedRequest, func(context.Context) *Answer) *Answer
	for i := len(ics) - 1; i >= 0; i-- {
		ic := ics[i].Request
		if ic == nil {
			continue
		}
		if outer != nil {
			wrapped, inner, r := outer, next, &x.interception().intercepted
			next = func(ctx context.Context) *Answer { return wrapped(ctx, r, inner) }
		} else {
			part := x.interception()
			r := &part.intercepted
			*r = InterceptedRequest{Method: x.d.method, Call: &x.call, Header: x.r.Header, Deadline: x.deadline}
			if x.row.name == MethodListen {
				r.Deadline = x.listenEnd(ctx)
			}
			if t := x.d.target(); t != nil {
				r.Target = *t
			}
			next = func(ctx context.Context) *Answer {
				part.held = x.serveMethod(ctx)
				return &part.held
			}
		}
		outer = ic
	}
	if outer == nil {
		return x.serveMethod(ctx)
	}
	a := outer(ctx, &x.interception().intercepted, next)
	if a == nil {
		panic("stateless: a request interceptor answered nil")
	}
	return *a
}

// interceptTool wraps a tool's handler in the tool interceptors, the
// first outermost.
func interceptTool(s *Server, def *Tool, h ToolHandler) ToolHandler {
	ics := s.interceptors
	for i := len(ics) - 1; i >= 0; i-- {
		if ics[i].Tool != nil {
			h = ics[i].Tool(def, h)
		}
	}
	return h
}
