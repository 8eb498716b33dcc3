package stateless

import (
	"context"
	"errors"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

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

// nonToolInput is the answer to the error of a prompt or resource
// handler: the input it asks for (the round's state sealed, bound to k),
// or a refusal.
func (x *exchange) nonToolInput(ctx context.Context, k stateKey, err error) Answer {
	var ir *InputRequired
	if !errors.As(err, &ir) {
		return handlerFailure(ctx, err)
	}
	if x.legacy {
		return refused(mcperr.NewMissingCapability(map[string]any{"elicitation": map[string]any{}}).
			WithData(map[string]any{"requiredCapabilities": map[string]any{}, "requiredProtocolVersion": Version20260728}))
	}
	out, e := x.inputRequiredResult(ctx, k, ir)
	if e != nil {
		return refused(e)
	}
	a := x.result(out, &resultFields{resultTyp: "input_required"})
	a.inputRequired = true
	return a
}
