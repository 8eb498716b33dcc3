package stateless

import (
	"context"
	"fmt"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// MethodRequest is what a custom method's handler knows of its request.
type MethodRequest struct {
	*Call
	// Method is the method's name.
	Method string

	o *Outcome
}

// Note records n in the request's Outcome: the Target the request
// concerns (a metric dimension: a name of the server's, never the
// peer's bytes), a Kind, a Fault the handler met that did not refuse the
// request.
func (r *MethodRequest) Note(n Note) { note(r.o, n) }

// MethodHandler answers a custom method: params are the request's params
// decoded into P (member names exactly; _meta is the server's and not
// P's business), the result any value that encodes as a JSON object. A
// *mcperr.Error it returns is the refusal answered; any other error is a
// handler failure (-32603), its text in the message.
type MethodHandler[P, R any] func(ctx context.Context, req *MethodRequest, params P) (R, error)

// MethodOptions say how a custom method is served.
type MethodOptions struct {
	// Legacy serves the method to the 2025 revisions as well; by default
	// only to 2026-07-28 requests.
	Legacy bool
	// Target names the string member of the params that a request's
	// Mcp-Name header must equal, as tools/call's name does ("taskId" for
	// the tasks extension's methods); "" names none.
	Target string
	// Extension is the identifier of the extension the method is of: the
	// server advertises it in its capabilities' extensions once one of
	// its methods is registered. A request that does not declare it is
	// not refused for that: the handler decides ([Call.Declares]).
	Extension string
}

// AddMethod registers a method of the server's own: an extension's
// ("io.example.weather/forecast") or a custom one. It is served like the
// protocol's methods (the same checks before it, the interceptors, the
// era's result decoration, the one exit that reports the answer), per
// server, and answered -32601 on a server that has not registered it. A
// name the protocol defines, or an empty one, panics; so does a name
// registered twice.
func AddMethod[P, R any](s *Server, name string, h MethodHandler[P, R], o *MethodOptions) {
	if name == "" || strings.HasPrefix(name, "notifications/") || IsProtocolMethod(name) {
		panic(fmt.Sprintf("stateless: AddMethod %q: the name is the protocol's (or empty)", name))
	}
	if h == nil {
		panic(fmt.Sprintf("stateless: AddMethod %q: nil handler", name))
	}
	var opts MethodOptions
	if o != nil {
		opts = *o
	}
	era := modernEra
	if opts.Legacy {
		era = everyEra
	}
	served := row(era, "", opts.Target != "", func(x *exchange, ctx context.Context, _ *baseParams) Answer {
		var p P
		if raw := x.d.rawParams; raw != nil {
			if err := jsonv2.Unmarshal(raw, &p); err != nil {
				return refused(mcperr.Wrap(mcperr.KindMalformedParams, err))
			}
		}
		res, err := h(ctx, &MethodRequest{Call: &x.call, Method: name, o: x.o}, p)
		if err != nil {
			x.o.Err = err
			return refused(handlerError(ctx, err))
		}
		return x.result(res, &resultFields{})
	})
	served.name, served.targetMember, served.extension, served.own, served.handlers = name, opts.Target, opts.Extension, true, true
	update(s, func(r *registry) {
		if r.custom == nil {
			r.custom = map[string]*methodInfo{}
		}
		if r.custom[name] != nil {
			panic(fmt.Sprintf("stateless: method %q registered twice", name))
		}
		r.custom[name] = served
	})
}
