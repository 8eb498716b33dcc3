package stateless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

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
	// needs an interceptor that redeems single-use states (claims.Guard's).
	// Binding a state to its request does not stop a client from sending
	// the same retry twice; this does.
	SingleUse bool
}

// State flags, the first byte of every sealed state.
const (
	stateMultiUse  byte = 0
	stateSingleUse byte = 1
)

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
