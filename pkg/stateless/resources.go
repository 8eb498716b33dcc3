package stateless

import (
	"context"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// serveReadResource answers resources/read: a resource, or the first
// template whose pattern matches the URI.
func (x *exchange) serveReadResource(ctx context.Context, p *readResourceParams) *Response {
	d := x.d
	if p.URI == nil {
		return x.refuse(d.id, mcperr.New(mcperr.KindMalformedParams))
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
	if e := x.readInputResponses(&p.roundTrip); e != nil {
		return x.refuse(d.id, e)
	}
	b := stateKeyOf(x, "resources/read", uri, nil)
	if e := x.openState(ctx, b, p.RequestState); e != nil {
		return x.refuse(d.id, e)
	}
	run := func(ctx context.Context) *Response {
		handlerStart := time.Now()
		res, err := h(ctx, &ResourceRequest{Call: &x.call, URI: uri, Vars: vars})
		x.o.Steps.Handler = time.Since(handlerStart)
		return x.readAnswer(ctx, b, uri, res, err)
	}
	if !x.s.executes {
		return run(ctx)
	}
	return x.execute(ctx, &Execution{Method: "resources/read", Target: uri, Principal: x.call.Principal, Call: &x.call,
		Deadline: x.deadline, SingleUse: x.redeemID, x: x}, run)
}

// readAnswer answers what a resource's handler returned.
func (x *exchange) readAnswer(ctx context.Context, b stateKey, uri string, res *ReadResourceResult, err error) *Response {
	d := x.d
	if err != nil {
		return x.nonToolInput(ctx, b, err)
	}
	if res == nil || len(res.Contents) == 0 {
		return x.refuse(d.id, mcperr.NewUnknownResource(uri))
	}
	hint := readCache(x.s)
	if res.Cache != nil {
		hint = *res.Cache
	}
	return x.result(res, &resultFields{cache: &hint, meta: res.Meta})
}

// serveComplete answers completion/complete from the completion handler.
func (x *exchange) serveComplete(ctx context.Context, p *completeParams) *Response {
	d := x.d
	if p.Ref == nil || p.Argument == nil {
		return x.refuse(d.id, mcperr.New(mcperr.KindMalformedParams))
	}
	req := &CompleteRequest{Call: &x.call, RefType: p.Ref.Type, Argument: p.Argument.Name, Value: p.Argument.Value}
	switch p.Ref.Type {
	case "ref/prompt":
		req.RefName = p.Ref.Name
	case "ref/resource":
		req.RefName = p.Ref.URI
	default:
		return x.refuse(d.id, mcperr.New(mcperr.KindMalformedParams))
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
