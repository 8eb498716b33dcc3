package stateless

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

// InputRequired is returned as the error of a tool, prompt or resource
// handler that needs the client's input before it can finish: the
// multi-round-trip pattern of revision 2026-07-28. The server answers
// with resultType "input_required"; the client fulfils Requests and
// retries the same request with the answers and the sealed State, which
// the handler reads back with [Call.InputResponse] and [Call.State].
//
// Accumulate earlier rounds' answers in State: a retry carries only the
// latest round's responses.
type InputRequired struct {
	// Requests are the input requests, by key. Keys are the handler's
	// choice and unique within the result.
	Requests map[string]InputRequest
	// State is sealed by the server and returned on the retry. nil sends
	// no requestState.
	State []byte
	// SingleUse makes State redeemable once: the first retry that carries
	// it is served, every later one is refused as an invalid state. It
	// needs Options.Redeemer. Binding a state to its request does not stop
	// a client from sending the same retry twice; this does.
	SingleUse bool
}

// Redeemer records redemptions of single-use states; package claims
// implements it with the same conditional writes as a claim.
//
// A redemption is tentative while the call that carries the state runs,
// and settled with the call's outcome: made final when the call completes
// (a result, or a failure that is not retryable), released when it fails
// in a way its retry may not (a RetryLater tool failure, a retryable
// refusal, a timeout, a panic), so that the same state can be used again.
// While one is in progress, the state is refused to every other call.
type Redeemer interface {
	// Redeem starts redeeming id: a Redemption to settle once the call
	// has its outcome; nil when id was redeemed already; or an error
	// wrapping a *RedemptionHeld when another call is redeeming it. A
	// tentative redemption lapses, like a claim, at the deadline of the
	// call's handler (ctx's) and a margin — when a tools/call claims a key
	// too, with the claim's lease — so that its caller can no longer be
	// running. A final one must outlive the state (until).
	Redeem(ctx context.Context, id string, until time.Time) (Redemption, error)
}

// RedemptionHeld reports that another call is redeeming a single-use
// state: it is not spent, and may be usable after RetryAfter (that call's
// lease), if that call fails retryably or dies.
type RedemptionHeld struct {
	RetryAfter time.Duration
}

func (e *RedemptionHeld) Error() string {
	return fmt.Sprintf("single-use state being redeemed by another call, for up to %v", e.RetryAfter.Round(time.Millisecond))
}

// Redemption settles one tentative redemption.
type Redemption interface {
	// Complete makes the redemption final: the state is spent.
	Complete(ctx context.Context) error
	// Release gives the redemption up: the state may be used again.
	Release(ctx context.Context) error
}

// State flags, the first byte of every sealed state.
const (
	stateMultiUse  byte = 0
	stateSingleUse byte = 1
)

// redemptionWindow is how long a redemption is remembered: longer than any
// state's validity.
const redemptionWindow = 24 * time.Hour

func (*InputRequired) Error() string { return "stateless: input required" }

// InputRequest is one request embedded in an input_required result:
// elicitation/create, sampling/createMessage or roots/list.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// ElicitForm asks the user to fill a flat form. schema is the
// requestedSchema: an object with primitive properties.
func ElicitForm(message string, schema any) InputRequest {
	return InputRequest{Method: "elicitation/create", Params: map[string]any{
		"mode": "form", "message": message, "requestedSchema": schema,
	}}
}

// ElicitURL asks the user to visit url. Correlate the outcome through an
// id of your own kept in the state.
func ElicitURL(message, url string) InputRequest {
	return InputRequest{Method: "elicitation/create", Params: map[string]any{
		"mode": "url", "message": message, "url": url,
	}}
}

// CreateMessage asks the client to sample its model. params is a
// CreateMessageRequestParams object.
func CreateMessage(params any) InputRequest {
	return InputRequest{Method: "sampling/createMessage", Params: params}
}

// ListRoots asks the client for its roots.
func ListRoots() InputRequest { return InputRequest{Method: "roots/list"} }

// requiredCapability returns, for an input request the client has not
// declared the capability for, the ClientCapabilities member it needs;
// nil when the client can take it.
func requiredCapability(caps *ClientCapabilities, r InputRequest) map[string]any {
	switch r.Method {
	case "elicitation/create":
		url := false
		if p, ok := r.Params.(map[string]any); ok {
			url = p["mode"] == "url"
		}
		e := caps.Elicitation
		if url {
			if e == nil || e.URL == nil {
				return map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
			}
			return nil
		}
		// An empty elicitation object means form mode.
		if e == nil || (e.Form == nil && e.URL != nil) {
			return map[string]any{"elicitation": map[string]any{}}
		}
	case "sampling/createMessage":
		if caps.Sampling == nil {
			return map[string]any{"sampling": map[string]any{}}
		}
	case "roots/list":
		if caps.Roots == nil {
			return map[string]any{"roots": map[string]any{}}
		}
	}
	return nil
}

// inputRequiredResult renders ir for the client: capability-gated, with
// the state sealed under the request's binding.
func (s *Server) sealInputRequired(ctx context.Context, c *Call, k stateKey, ir *InputRequired) (map[string]any, *mcperr.Error) {
	if len(ir.Requests) == 0 && ir.State == nil {
		return nil, mcperr.Wrap(mcperr.Internal, fmt.Errorf("handler returned InputRequired with neither requests nor state"))
	}
	caps := c.Capabilities()
	missing := map[string]any{}
	for _, r := range ir.Requests {
		for k, v := range requiredCapability(caps, r) {
			missing[k] = v
		}
	}
	if len(missing) > 0 {
		return nil, mcperr.NewMissingCapability(missing)
	}
	out := map[string]any{}
	if len(ir.Requests) > 0 {
		out["inputRequests"] = ir.Requests
	}
	if ir.State != nil {
		flag := stateMultiUse
		if ir.SingleUse {
			if s.opts.Redeemer == nil {
				return nil, mcperr.Wrap(mcperr.Internal, fmt.Errorf("a single-use state needs Options.Redeemer"))
			}
			flag = stateSingleUse
		}
		tok, err := stateSealer(s).Seal(ctx, k.binding(), append([]byte{flag}, ir.State...))
		if err != nil {
			if reqstate.IsInvalid(err) {
				return nil, mcperr.Wrap(mcperr.Internal, err)
			}
			return nil, mcperr.NewRetryable(mcperr.DependencyFailure, 0, err)
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

// openState opens the state of a retry before any handler runs. For a
// single-use state it returns the id to redeem (redeemState), once the
// call is known not to be a replay.
func (s *Server) openSealedState(ctx context.Context, c *Call, k stateKey, token *string) (redeemID string, e *mcperr.Error) {
	if token == nil {
		return "", nil
	}
	st, err := stateSealer(s).Open(ctx, k.binding(), *token)
	if err != nil {
		if reqstate.IsInvalid(err) {
			return "", mcperr.Wrap(mcperr.TamperedState, err)
		}
		return "", mcperr.NewRetryable(mcperr.DependencyFailure, 0, err)
	}
	if len(st) == 0 || st[0] > stateSingleUse {
		return "", mcperr.Wrap(mcperr.TamperedState, errors.New("state without its flags"))
	}
	if st[0] == stateSingleUse {
		if s.opts.Redeemer == nil {
			return "", mcperr.Wrap(mcperr.TamperedState, errors.New("single-use state and no redeemer"))
		}
		sum := sha256.Sum256([]byte(*token))
		redeemID = hex.EncodeToString(sum[:])
	}
	c.state, c.hasState = st[1:], true
	return redeemID, nil
}

// redeemState starts redeeming the request's single-use state, if it
// carries one, just before its handler runs: after the idempotency claim,
// so that a keyed retry of a call that completed gets its replay rather
// than the refusal of a spent state. A state spent, or being redeemed by
// another call, is refused as any invalid state is.
func (x *exchange) redeemState(ctx context.Context) *mcperr.Error {
	if x.redeemID == "" {
		return nil
	}
	start := time.Now()
	r, err := x.s.opts.Redeemer.Redeem(x.bounded(ctx), x.redeemID, time.Now().Add(redemptionWindow))
	x.o.Steps.State += time.Since(start)
	var held *RedemptionHeld
	switch {
	case errors.As(err, &held):
		// Not spent: its holder may fail, or die, and the state be
		// usable again. The retry-after is the holder's lease.
		x.o.StateOpened = false
		return mcperr.NewRetryable(mcperr.StateInUse, max(held.RetryAfter, 100*time.Millisecond), err)
	case err != nil:
		return mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, err)
	case r == nil:
		x.o.StateOpened = false
		return mcperr.Wrap(mcperr.TamperedState, errors.New("single-use state redeemed already"))
	}
	x.redemption = r
	return nil
}

// finishState settles the redemption with the call's outcome: released
// when the call was answered with something its retry may change (the
// exchange's retryable), final otherwise. Like finishClaim, it runs past
// the request's deadline; a failure is a server fault for the operator.
func (x *exchange) finishState(ctx context.Context) {
	r := x.redemption
	if r == nil {
		return
	}
	x.redemption = nil
	settle := r.Complete
	if x.retryable {
		settle = r.Release
	}
	ctx, cancel := x.finishContext(ctx)
	defer cancel()
	if err := settle(ctx); err != nil {
		x.o.Fault = true
		x.o.Err = fmt.Errorf("settling the single-use state's redemption: %w", err)
		x.o.ErrFromTool = false
	}
}

// releaseState, deferred once a redemption started, releases one the call
// left without an outcome: its handler panicked.
func (x *exchange) releaseState(ctx context.Context) {
	if x.redemption != nil {
		x.retryable = true
		x.finishState(ctx)
	}
}
