package stateless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// serveGetPrompt answers prompts/get: the visible prompt, its required
// arguments, its request state, its handler.
func (x *exchange) serveGetPrompt(ctx context.Context, p *getPromptParams) *Response {
	d := x.d
	if p.Name == nil {
		return x.refuse(d.id, mcperr.New(mcperr.KindMalformedParams))
	}
	pr := x.reg.prompt(*p.Name)
	if pr == nil || (pr.def.Visible != nil && !pr.def.Visible(ctx, x.call.Principal)) {
		return x.refuse(d.id, mcperr.New(mcperr.KindUnknownPrompt))
	}
	x.o.Target = pr.def.Name
	var args map[string]string
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && string(a) != "null" {
		if err := jsonv2.Unmarshal(a, &args); err != nil {
			return x.refuse(d.id, mcperr.Wrap(mcperr.KindMalformedParams, err))
		}
	}
	for _, a := range pr.def.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return x.refuse(d.id, mcperr.Wrap(mcperr.KindMalformedParams, errors.New("missing a required prompt argument")))
		}
	}
	if e := x.readInputResponses(&p.roundTrip); e != nil {
		return x.refuse(d.id, e)
	}
	b := stateKeyOf(x, "prompts/get", pr.def.Name, json.RawMessage(p.Arguments))
	if e := x.openState(ctx, b, p.RequestState); e != nil {
		return x.refuse(d.id, e)
	}
	run := func(ctx context.Context) *Response {
		handlerStart := time.Now()
		res, err := pr.handler(ctx, &PromptRequest{Call: &x.call, Name: pr.def.Name, Arguments: args})
		x.o.Steps.Handler = time.Since(handlerStart)
		return x.promptAnswer(ctx, b, res, err)
	}
	if !x.s.executes {
		return run(ctx)
	}
	return x.execute(ctx, &Execution{Method: "prompts/get", Target: pr.def.Name, Principal: x.call.Principal, Call: &x.call,
		Deadline: x.deadline, SingleUse: x.redeemID, x: x}, run)
}

// promptAnswer answers what a prompt's handler returned.
func (x *exchange) promptAnswer(ctx context.Context, b stateKey, res *GetPromptResult, err error) *Response {
	d := x.d
	if err != nil {
		return x.nonToolInput(ctx, b, err)
	}
	if res == nil {
		return x.refuse(d.id, mcperr.Wrap(mcperr.KindInternal, errors.New("prompt handler returned no result")))
	}
	if res.Messages == nil {
		res.Messages = []PromptMessage{}
	}
	return x.result(res, &resultFields{meta: res.Meta})
}
