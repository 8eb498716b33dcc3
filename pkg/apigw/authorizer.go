package apigw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// A REST API's Lambda REQUEST authorizer (API Gateway developer guide,
// "Input to an API Gateway Lambda authorizer" and "Output from an API
// Gateway Lambda authorizer") is the same function, invoked with the
// request's headers and no body before the request itself. Its answers,
// from [stateless.Server.Admit]:
//
//   - let through: an IAM policy allowing execute-api:Invoke on the
//     method's ARN, with the token's principal as principalId;
//   - no token or a bad one: the invocation fails with the message
//     "Unauthorized", which API Gateway answers 401 (its UNAUTHORIZED
//     gateway response, whose headers carry the challenge);
//   - a token without a scope the tool needs: a policy denying it, which
//     API Gateway answers 403 (ACCESS_DENIED), with the scopes the tool
//     needs in the context (requiredScopes, space-separated) for the
//     gateway response's body;
//   - the token could not be checked: the invocation fails with another
//     message, which API Gateway answers 500
//     (AUTHORIZER_CONFIGURATION_ERROR; the template's gateway response
//     makes it a 503); the request fails closed.
//
// Lambda counts each failed invocation, the routine "Unauthorized" among
// them, in the function's Errors: the template deploys the authorizer as
// a function of its own (the same binary), so that those are not the MCP
// function's. Each decision is reported as an answer is
// ([stateless.Server.Admit]: a request line and its metrics, Outcome
// unauthorized, forbidden or unavailable), which is what tells an
// issuer's outage from expiring tokens.
//
// With caching off (a TTL of 0, as the template deploys it), each request
// is judged on its own headers: the decision depends on Mcp-Name, which
// an authorizer's cache key could not hold for every method.

// ErrUnauthorized is the failure whose message API Gateway answers 401:
// the message must be exactly "Unauthorized", capital included.
var ErrUnauthorized = errors.New("Unauthorized")

// authorizerEvent is the part of a REQUEST authorizer's event Authorize
// reads. Its headers are kept raw, to be read as Decode reads a proxy
// event's (headerObject), so that the authorizer decides on the values the
// function will read: a header under two spellings has the same value
// for both.
type authorizerEvent struct {
	Type              string         `json:"type"`
	MethodArn         string         `json:"methodArn"`
	Headers           jsontext.Value `json:"headers"`
	MultiValueHeaders jsontext.Value `json:"multiValueHeaders"`
	RequestContext    struct {
		RequestID  string `json:"requestId"`
		DomainName string `json:"domainName"`
		Path       string `json:"path"`
	} `json:"requestContext"`
}

// authorizerOptions read an authorizer's event as Decode reads a proxy
// event's strings (invalid UTF-8 accepted), but a name twice at one level
// refused: API Gateway sends none, and a decision on one of two would be
// a guess.
var authorizerOptions = jsontext.AllowInvalidUTF8(true)

// IsAuthorizerEvent reports whether payload is a Lambda REQUEST
// authorizer's event: top-level members "type", REQUEST, and "methodArn"
// (proxy events have neither). A proxy event is told apart by a byte
// search alone, unless a client put those strings in a header's name; it
// is then decoded, so that no request can pass for an authorizer's event.
func IsAuthorizerEvent(payload []byte) bool {
	if !bytes.Contains(payload, []byte(`"methodArn"`)) || !bytes.Contains(payload, []byte(`"REQUEST"`)) {
		return false
	}
	var top struct {
		Type      string `json:"type"`
		MethodArn string `json:"methodArn"`
	}
	return jsonv2.Unmarshal(payload, &top, authorizerOptions) == nil && top.Type == "REQUEST" && top.MethodArn != ""
}

// policy is an authorizer's answer.
type policy struct {
	PrincipalID    string `json:"principalId"`
	PolicyDocument struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	} `json:"policyDocument"`
	Context map[string]string `json:"context,omitempty"`
}

type statement struct {
	Action   string `json:"Action"`
	Effect   string `json:"Effect"`
	Resource string `json:"Resource"`
}

// Authorize answers a REST API Lambda REQUEST authorizer's event (see
// above). The endpoint is h.Endpoint, else the one the event names (the
// domain name and path API Gateway reports).
func (h *Handler) Authorize(ctx context.Context, payload []byte) ([]byte, error) {
	var ev authorizerEvent
	if err := jsonv2.Unmarshal(payload, &ev, authorizerOptions); err != nil || ev.Type != "REQUEST" || ev.MethodArn == "" {
		return nil, fmt.Errorf("%w: not a REQUEST authorizer event", ErrNotHTTP)
	}
	// multiValueHeaders holds every value and wins; headers only the
	// last, each name's first spelling (as Decode keeps them).
	header := make(http.Header, 8)
	for _, o := range [...]struct {
		obj *headerObject
		raw jsontext.Value
	}{{&headerObject{h: header, multi: true}, ev.MultiValueHeaders}, {&headerObject{h: header}, ev.Headers}} {
		if err := o.obj.UnmarshalJSON(o.raw); err != nil {
			return nil, fmt.Errorf("%w: an authorizer event's headers: %v", ErrNotHTTP, err)
		}
	}
	endpoint := h.Endpoint
	if endpoint == "" {
		endpoint = endpointURL(ev.RequestContext.DomainName, ev.RequestContext.Path)
	}
	adm := h.Server.Admit(stateless.WithRequestID(ctx, &ev.RequestContext.RequestID), endpoint, header)
	effect := "Allow"
	var facts map[string]string
	switch adm.Decision() {
	case stateless.DecisionAllow:
	case stateless.DecisionUnauthorized:
		return nil, ErrUnauthorized
	case stateless.DecisionForbidden:
		effect = "Deny"
		facts = map[string]string{"requiredScopes": strings.Join(adm.RequiredScopes, " ")}
	default:
		// The message reaches only the function's log and API Gateway's;
		// it names the kind, never the token or what the issuer said.
		return nil, fmt.Errorf("apigw: the authorizer could not check the token: %s", adm.Refusal.Kind())
	}
	var p policy
	p.PrincipalID = adm.Principal
	p.PolicyDocument.Version = "2012-10-17"
	p.PolicyDocument.Statement = []statement{{Action: "execute-api:Invoke", Effect: effect, Resource: ev.MethodArn}}
	p.Context = facts
	return jsonv2.Marshal(p)
}
