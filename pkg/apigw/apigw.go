// Package apigw serves a [stateless.Server] to AWS Lambda invocations from
// API Gateway HTTP APIs (payload format 2.0), REST API proxy integrations
// (payload format 1.0) and Lambda function URLs.
//
// It is kept apart from the protocol core so that the core never imports
// Lambda types: this package turns an event into a [stateless.Request] —
// method, the headers the protocol reads with canonical names (gateways
// lower-case them; REST APIs also send multi-value headers; cookies are
// joined into one Cookie header), the base64-decoded body, the host, and
// the caller's principal from the request context's authorizer — and the
// [stateless.Response] back into the event's response shape.
//
// [Handler] implements lambda.Handler on raw payloads, so one function
// serves all three event shapes without reflection.
package apigw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Kind is the shape of an event.
type Kind uint8

// The event shapes served.
const (
	Unknown     Kind = iota
	HTTPAPI          // API Gateway HTTP API, payload format 2.0
	REST             // API Gateway REST API proxy integration, payload format 1.0
	FunctionURL      // Lambda function URL (payload format 2.0)
)

func (k Kind) String() string {
	switch k {
	case HTTPAPI:
		return "http-api"
	case REST:
		return "rest"
	case FunctionURL:
		return "function-url"
	}
	return "unknown"
}

// event is the union of the three request shapes, decoded in one pass.
type event struct {
	Version           string        `json:"version"`
	HTTPMethod        string        `json:"httpMethod"`        // 1.0
	MultiValueHeaders *headerObject `json:"multiValueHeaders"` // 1.0, decoded first
	Headers           *headerObject `json:"headers"`
	Cookies           []string      `json:"cookies"` // 2.0
	Body              body          `json:"body"`
	IsBase64Encoded   bool          `json:"isBase64Encoded"`
	RequestContext    struct {
		RequestID  string `json:"requestId"`
		DomainName string `json:"domainName"`
		HTTPMethod string `json:"httpMethod"` // 1.0
		Path       string `json:"path"`       // 1.0, with the stage
		HTTP       struct {
			Method string `json:"method"`
			Path   string `json:"path"`
		} `json:"http"` // 2.0
		Identity struct {
			UserArn string `json:"userArn"`
		} `json:"identity"` // 1.0 IAM
		Authorizer json.RawMessage `json:"authorizer"`
	} `json:"requestContext"`
}

// body is an event's body: the JSON string's text, unescaped straight
// into bytes (one copy, where a string and a conversion would make two).
type body []byte

// UnmarshalJSON implements json.Unmarshaler.
func (b *body) UnmarshalJSON(q []byte) error {
	if len(q) == 0 || q[0] != '"' {
		if string(q) == "null" {
			return nil
		}
		return errors.New("apigw: body is not a string")
	}
	*b = jsonscan.AppendUnquoted(make([]byte, 0, len(q)-2), q)
	return nil
}

// Request is an event turned into a protocol request.
type Request struct {
	Kind      Kind
	RequestID string // API Gateway's request id, for logs
	*stateless.Request
}

// ErrNotHTTP is returned for a payload that is none of the served event
// shapes: a direct invocation with some other payload. The function fails
// the invocation rather than guessing.
var ErrNotHTTP = errors.New("apigw: payload is not an API Gateway or function URL event")

// Decode turns an event payload into a request.
func Decode(payload []byte) (*Request, error) {
	h := make(http.Header, 8)
	// Headers are decoded straight into h, keeping only the protocol's
	// (see protocolHeaders); multiValueHeaders win over headers, which
	// hold only the last of repeated values.
	ev := event{MultiValueHeaders: &headerObject{h: h, multi: true}, Headers: &headerObject{h: h}}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotHTTP, err)
	}
	r := &Request{Request: &stateless.Request{}}
	switch {
	case ev.Version == "2.0" && ev.RequestContext.HTTP.Method != "":
		r.Kind = HTTPAPI
		if strings.Contains(ev.RequestContext.DomainName, ".lambda-url.") {
			r.Kind = FunctionURL
		}
		r.Method = ev.RequestContext.HTTP.Method
	case ev.HTTPMethod != "":
		r.Kind = REST
		r.Method = ev.HTTPMethod
	default:
		return nil, ErrNotHTTP
	}
	r.RequestID = ev.RequestContext.RequestID
	r.Header = h
	if len(ev.Cookies) > 0 {
		r.Header["Cookie"] = []string{strings.Join(ev.Cookies, "; ")}
	}
	r.Host = r.Header.Get("Host")
	if r.Host == "" {
		r.Host = ev.RequestContext.DomainName
	}
	path := ev.RequestContext.HTTP.Path
	if r.Kind == REST {
		path = ev.RequestContext.Path
	}
	r.Endpoint = endpointURL(ev.RequestContext.DomainName, path)
	r.Body = ev.Body
	if ev.IsBase64Encoded {
		dec := make([]byte, base64.StdEncoding.DecodedLen(len(ev.Body)))
		n, err := base64.StdEncoding.Decode(dec, ev.Body)
		if err != nil {
			return nil, fmt.Errorf("apigw: body marked base64 does not decode: %w", err)
		}
		r.Body = dec[:n]
	}
	r.Principal = principal(r.Kind, ev.RequestContext.Authorizer, ev.RequestContext.Identity.UserArn)
	return r, nil
}

// endpointURL is the canonical URL of the endpoint an event was addressed
// to, from what the gateway reports (its domain name, custom or not, and
// the path with the stage), never from the client's Host header. "" when
// the gateway reports no usable domain name or path.
func endpointURL(domain, path string) string {
	if domain == "" || len(domain) > 253 || path == "" || path[0] != '/' {
		return ""
	}
	for i := 0; i < len(domain); i++ {
		if c := domain[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return ""
		}
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '?' || c == '#' {
			return ""
		}
	}
	return "https://" + strings.ToLower(domain) + path
}

// authorizer is the union of the authorizer contexts.
type authorizer struct {
	// HTTP API and function URL (2.0).
	JWT *struct {
		Claims map[string]any `json:"claims"`
	} `json:"jwt"`
	IAM *struct {
		UserArn string `json:"userArn"`
	} `json:"iam"`
	Lambda map[string]any `json:"lambda"`
	// REST API (1.0): a Cognito user pool authorizer's claims, or a Lambda
	// authorizer's principal.
	Claims      map[string]any `json:"claims"`
	PrincipalID string         `json:"principalId"`
}

// principal names the caller as the gateway's authorizer established it:
// a JWT's subject (HTTP API JWT authorizer, REST Cognito authorizer), an
// IAM caller's ARN, or a Lambda authorizer's principal. "" when the
// route has no authorizer.
func principal(k Kind, raw json.RawMessage, restIAM string) string {
	var a authorizer
	if len(raw) > 0 && json.Unmarshal(raw, &a) != nil {
		return ""
	}
	switch {
	case a.JWT != nil && str(a.JWT.Claims["sub"]) != "":
		return str(a.JWT.Claims["sub"])
	case a.IAM != nil && a.IAM.UserArn != "":
		return a.IAM.UserArn
	case str(a.Lambda["principalId"]) != "":
		return str(a.Lambda["principalId"])
	case str(a.Lambda["sub"]) != "":
		return str(a.Lambda["sub"])
	case str(a.Claims["sub"]) != "":
		return str(a.Claims["sub"])
	case a.PrincipalID != "":
		return a.PrincipalID
	case k == REST && restIAM != "":
		return restIAM
	}
	return ""
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// Encode turns a response into the response payload for an event of kind
// k. Bodies are JSON or an event stream, both text, so never base64. The
// payload is written by hand: it is on every invocation's path.
func Encode(k Kind, resp *stateless.Response) ([]byte, error) {
	names := make([]string, 0, len(resp.Header))
	for name := range resp.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]byte, 0, len(resp.Body)+len(resp.Body)/8+128)
	out = append(out, `{"statusCode":`...)
	out = strconv.AppendInt(out, int64(resp.Status), 10)
	if len(names) > 0 {
		out = append(out, `,"headers":{`...)
		for i, name := range names {
			if i > 0 {
				out = append(out, ',')
			}
			out = jsonscan.AppendString(out, name)
			out = append(out, ':')
			out = jsonscan.AppendString(out, strings.Join(resp.Header[name], ", "))
		}
		out = append(out, '}')
		if k == REST {
			// REST APIs read multiValueHeaders as well; the 2.0 shapes
			// ignore it.
			out = append(out, `,"multiValueHeaders":{`...)
			for i, name := range names {
				if i > 0 {
					out = append(out, ',')
				}
				out = jsonscan.AppendString(out, name)
				out = append(out, ':', '[')
				for j, v := range resp.Header[name] {
					if j > 0 {
						out = append(out, ',')
					}
					out = jsonscan.AppendString(out, v)
				}
				out = append(out, ']')
			}
			out = append(out, '}')
		}
	}
	out = append(out, `,"body":`...)
	out = jsonscan.AppendString(out, string(resp.Body))
	return append(out, `,"isBase64Encoded":false}`...), nil
}

// Handler serves a stateless.Server to Lambda. It implements
// lambda.Handler.
type Handler struct {
	Server *stateless.Server
	// Endpoint, if set, is the endpoint's canonical URL (a custom
	// domain's, say), which request state is bound to. Unset, each
	// request's is derived from the event: the domain name and path API
	// Gateway reports.
	Endpoint string
}

// Invoke implements lambda.Handler. The context carries the invocation's
// deadline, which the request inherits.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	r, err := Decode(payload)
	if err != nil {
		if errors.Is(err, ErrNotHTTP) {
			return nil, err
		}
		// A gateway event whose body cannot be read is the client's
		// fault: answer it as a malformed body.
		return Encode(kindOf(payload), h.Server.Refusal(mcperr.Wrap(mcperr.ParseError, err)))
	}
	ctx = WithRequestID(ctx, r.RequestID)
	if h.Endpoint != "" {
		r.Endpoint = h.Endpoint
	}
	return Encode(r.Kind, h.Server.Handle(ctx, r.Request))
}

func kindOf(payload []byte) Kind {
	var peek struct {
		Version    string `json:"version"`
		HTTPMethod string `json:"httpMethod"`
	}
	_ = json.Unmarshal(payload, &peek)
	if peek.HTTPMethod != "" {
		return REST
	}
	return HTTPAPI
}

type requestIDKey struct{}

// WithRequestID returns a context carrying the gateway's request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the gateway request id in ctx, or "".
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey{}).(string)
	return s
}
