package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// stateKey names the request a state of this exchange belongs to: its
// caller, method, target and arguments, at this endpoint.
func stateKeyOf(x *exchange, method, target string, args json.RawMessage) stateKey {
	return stateKey{x.call.Principal, method, target, args, x.r.Endpoint}
}

// openState opens the request's state, if it carries one, before any
// handler runs, and records the decision.
func (x *exchange) openState(ctx context.Context, k stateKey, token *string) *mcperr.Error {
	if token == nil {
		return nil
	}
	start := time.Now()
	id, e := x.s.openSealedState(x.bounded(ctx), &x.call, k, token)
	x.redeemID = id
	x.o.Steps.State = time.Since(start)
	x.o.StateOpened = e == nil
	return e
}

// inputRequiredResult renders ir and records whether a state was sealed.
func (x *exchange) inputRequiredResult(ctx context.Context, k stateKey, ir *InputRequired) (map[string]any, *mcperr.Error) {
	out, e := x.s.sealInputRequired(x.bounded(ctx), &x.call, k, ir)
	if _, sealed := out["requestState"]; sealed {
		x.o.StateSealed = true
	}
	return out, e
}

// readInputResponses reads a retry's inputResponses into the call.
func (x *exchange) readInputResponses(rt *roundTrip) *mcperr.Error {
	m, err := parseInputResponses(rt.InputResponses)
	if err != nil {
		return mcperr.Wrap(mcperr.KindMalformedParams, err)
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
