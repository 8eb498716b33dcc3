package stateless

import (
	"context"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// serveReadResource answers resources/read: a resource, or the first
// template whose pattern matches the URI.
func (x *exchange) serveReadResource(ctx context.Context, p *readResourceParams) Answer {
	if p.URI == nil {
		return refused(mcperr.New(mcperr.KindMalformedParams))
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
		return refused(mcperr.NewUnknownResource(uri))
	}
	x.exec = executable{method: "resources/read", target: uri, round: &p.roundTrip, resource: h, vars: vars}
	return x.execute(ctx, &x.exec)
}

// runResource runs a resource's handler for uri and answers what it
// returned.
func (x *exchange) runResource(ctx context.Context, h ResourceHandler, uri string, vars map[string]string, k stateKey) Answer {
	handlerStart := time.Now()
	res, err := h(ctx, &ResourceRequest{Call: &x.call, URI: uri, Vars: vars})
	x.o.Steps.Handler = time.Since(handlerStart)
	return x.readAnswer(ctx, k, uri, res, err)
}

// readAnswer answers what a resource's handler returned.
func (x *exchange) readAnswer(ctx context.Context, k stateKey, uri string, res *ReadResourceResult, err error) Answer {
	if err != nil {
		return x.nonToolInput(ctx, k, err)
	}
	if res == nil || len(res.Contents) == 0 {
		return refused(mcperr.NewUnknownResource(uri))
	}
	hint := readCache(x.s)
	if res.Cache != nil {
		hint = *res.Cache
	}
	return x.result(res, &resultFields{cache: &hint, meta: res.Meta})
}

// serveComplete answers completion/complete from the completion handler.
func (x *exchange) serveComplete(ctx context.Context, p *completeParams) Answer {
	if p.Ref == nil || p.Argument == nil {
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	req := &CompleteRequest{Call: &x.call, RefType: p.Ref.Type, Argument: p.Argument.Name, Value: p.Argument.Value}
	switch p.Ref.Type {
	case "ref/prompt":
		req.RefName = p.Ref.Name
	case "ref/resource":
		req.RefName = p.Ref.URI
	default:
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	if p.Context != nil {
		req.Context = p.Context.Arguments
	}
	res, err := x.reg.complete(ctx, req)
	if err != nil {
		return handlerFailure(ctx, err)
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
