package stateless

// The request state of a multi-round trip: sealed with a round's
// input_required answer, bound to its request, opened and verified
// before any handler of the retry runs.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/canon"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
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

// inputRequired is the answer that asks for the input ir requests, its
// state sealed bound to k (recorded in the Outcome), or the refusal of a
// request the client cannot answer (a capability it did not declare).
func (x *exchange) inputRequired(ctx context.Context, k stateKey, ir *InputRequired) Answer {
	out, e := x.s.sealInputRequired(x.bounded(ctx), &x.call, k, ir)
	if e != nil {
		return refused(e)
	}
	if _, sealed := out["requestState"]; sealed {
		x.o.StateSealed = true
	}
	a := x.result(out, &resultFields{resultTyp: "input_required"})
	a.inputRequired = true
	return a
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
	return x.inputRequired(ctx, k, ir)
}

// inputRequiredResult renders ir for the client: capability-gated, with
// the state sealed under the request's binding.
func (s *Server) sealInputRequired(ctx context.Context, c *Call, k stateKey, ir *InputRequired) (map[string]any, *mcperr.Error) {
	if len(ir.Requests) == 0 && ir.State == nil {
		return nil, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("handler returned InputRequired with neither requests nor state"))
	}
	if missing := c.MissingCapabilities(ir.Requests); missing != nil {
		return nil, mcperr.NewMissingCapability(missing)
	}
	out := map[string]any{}
	if len(ir.Requests) > 0 {
		out["inputRequests"] = ir.Requests
	}
	if ir.State != nil {
		flag := stateMultiUse
		if ir.SingleUse {
			if !s.singleUse {
				return nil, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("a single-use state needs an interceptor that redeems it (claims.Guard's)"))
			}
			flag = stateSingleUse
		}
		tok, err := stateSealer(s).Seal(ctx, k.binding(), append([]byte{flag}, ir.State...))
		if err != nil {
			if reqstate.IsInvalid(err) {
				return nil, mcperr.Wrap(mcperr.KindInternal, err)
			}
			return nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, err)
		}
		out["requestState"] = tok
	}
	return out, nil
}

// stateKey names the request a state belongs to. Its binding, which
// digests the arguments, is computed only when a state is sealed or
// opened: most requests have none.
type stateKey struct {
	principal, method, target string
	args                      json.RawMessage
	endpoint                  string // Request.Endpoint
}

func (k stateKey) binding() reqstate.Binding {
	return reqstate.Binding{Principal: k.principal, Method: k.method, Target: k.target, ArgsDigest: canon.Digest(k.args), Endpoint: k.endpoint}
}

// openSealedState opens the state of a retry before any handler runs.
// For a single-use state it returns the id to redeem (Execution.SingleUse),
// which the redeeming interceptor does once the call is known not to be a
// replay.
func (s *Server) openSealedState(ctx context.Context, c *Call, k stateKey, token *string) (redeemID string, e *mcperr.Error) {
	if token == nil {
		return "", nil
	}
	st, err := stateSealer(s).Open(ctx, k.binding(), *token)
	if err != nil {
		if reqstate.IsInvalid(err) {
			return "", mcperr.Wrap(mcperr.KindTamperedState, err)
		}
		return "", mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, err)
	}
	if len(st) == 0 || st[0] > stateSingleUse {
		return "", mcperr.Wrap(mcperr.KindTamperedState, errors.New("state without its flags"))
	}
	if st[0] == stateSingleUse {
		if !s.singleUse {
			return "", mcperr.Wrap(mcperr.KindTamperedState, errors.New("single-use state and no redeemer"))
		}
		sum := sha256.Sum256([]byte(*token))
		redeemID = hex.EncodeToString(sum[:])
	}
	c.state, c.hasState = st[1:], true
	return redeemID, nil
}
