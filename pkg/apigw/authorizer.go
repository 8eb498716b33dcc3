package apigw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
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
//     (AUTHORIZER_CONFIGURATION_ERROR); the request fails closed.
//
// With caching off (a TTL of 0, as the template deploys it), each request
// is judged on its own headers: the decision depends on Mcp-Name, which
// an authorizer's cache key could not hold for every method.

// ErrUnauthorized is the failure whose message API Gateway answers 401:
// the message must be exactly "Unauthorized", capital included.
var ErrUnauthorized = errors.New("Unauthorized")

// authorizerEvent is the part of a REQUEST authorizer's event Authorize
// reads.
type authorizerEvent struct {
	Type              string              `json:"type"`
	MethodArn         string              `json:"methodArn"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	RequestContext    struct {
		DomainName string `json:"domainName"`
		Path       string `json:"path"`
	} `json:"requestContext"`
}

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
	return jsonv2.Unmarshal(payload, &top) == nil && top.Type == "REQUEST" && top.MethodArn != ""
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
	if err := jsonv2.Unmarshal(payload, &ev); err != nil || ev.Type != "REQUEST" || ev.MethodArn == "" {
		return nil, fmt.Errorf("%w: not a REQUEST authorizer event", ErrNotHTTP)
	}
	header := http.Header{}
	for k, v := range ev.Headers {
		header[textproto.CanonicalMIMEHeaderKey(k)] = []string{v}
	}
	// multiValueHeaders holds every value; headers only the last.
	for k, vs := range ev.MultiValueHeaders {
		header[textproto.CanonicalMIMEHeaderKey(k)] = vs
	}
	endpoint := h.Endpoint
	if endpoint == "" {
		endpoint = endpointURL(ev.RequestContext.DomainName, ev.RequestContext.Path)
	}
	adm := h.Server.Admit(ctx, endpoint, header)
	effect := "Allow"
	var facts map[string]string
	switch refusal := adm.Refusal; {
	case refusal == nil:
	case refusal.Kind() == mcperr.KindUnauthorized:
		return nil, ErrUnauthorized
	case refusal.Kind() == mcperr.KindInsufficientScope:
		effect = "Deny"
		facts = map[string]string{"requiredScopes": strings.Join(adm.RequiredScopes, " ")}
	default:
		// The message reaches only the function's log and API Gateway's;
		// it names the kind, never the token or what the issuer said.
		return nil, fmt.Errorf("apigw: the authorizer could not check the token: %s", refusal.Kind())
	}
	var p policy
	p.PrincipalID = adm.Principal
	p.PolicyDocument.Version = "2012-10-17"
	p.PolicyDocument.Statement = []statement{{Action: "execute-api:Invoke", Effect: effect, Resource: ev.MethodArn}}
	p.Context = facts
	return jsonv2.Marshal(p)
}
