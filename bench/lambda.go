package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/gosdk"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/lambdahttp"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/mcpgo"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/ours"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
)

// LambdaHandler is what Lambda calls: one event payload in, one response
// payload out. It has lambda.Handler's method set, without importing
// aws-lambda-go.
type LambdaHandler interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// LambdaImpl is one implementation on the Lambda path.
type LambdaImpl struct {
	// Name is the benchmark key: impl=<Name>. Findings apply by this name.
	Name string
	// New builds a ready handler serving the echo and add tools.
	New func() LambdaHandler
}

// LambdaImpls lists the implementations on the Lambda path: ours through
// our production adapter (pkg/apigw, no net/http), then ours and the peers
// behind the same minimal net/http adapter (bench/impl/lambdahttp), which
// is what a peer's user would have to write.
var LambdaImpls = []LambdaImpl{
	{"ours", func() LambdaHandler { return earlyHandler{&apigw.Handler{Server: ours.NewServer()}} }},
	{"ours-inline", func() LambdaHandler { return earlyHandler{&apigw.Handler{Server: ours.NewInlineServer()}} }},
	{"ours-nethttp", func() LambdaHandler { return lambdahttp.New(ours.New()) }},
	{"gosdk", func() LambdaHandler { return lambdahttp.New(gosdk.New()) }},
	{"mcpgo", func() LambdaHandler { return lambdahttp.New(mcpgo.New()) }},
}

// earlyHandler calls an apigw.Handler as the project's Lambda runtime
// does (pkg/runner): through InvokeEarly, the tool handlers on the
// invocation's goroutine, an overrun answered through a callback, which
// no case here makes.
type earlyHandler struct{ h *apigw.Handler }

func (e earlyHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return e.h.InvokeEarly(ctx, payload, overran)
}

// overran is the bench's early answer: none is expected.
func overran([]byte, error) { panic("bench: a call answered at its deadline") }

// v2Event is an API Gateway HTTP API (payload format 2.0) event with the
// members a real one carries, so that decoding it costs what it would.
type v2Event struct {
	Version         string            `json:"version"`
	RouteKey        string            `json:"routeKey"`
	RawPath         string            `json:"rawPath"`
	RawQueryString  string            `json:"rawQueryString"`
	Headers         map[string]string `json:"headers"`
	RequestContext  v2Context         `json:"requestContext"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
	Body            string            `json:"body"`
}

type v2Context struct {
	AccountID    string `json:"accountId"`
	APIID        string `json:"apiId"`
	DomainName   string `json:"domainName"`
	DomainPrefix string `json:"domainPrefix"`
	HTTP         struct {
		Method    string `json:"method"`
		Path      string `json:"path"`
		Protocol  string `json:"protocol"`
		SourceIP  string `json:"sourceIp"`
		UserAgent string `json:"userAgent"`
	} `json:"http"`
	RequestID string `json:"requestId"`
	RouteKey  string `json:"routeKey"`
	Stage     string `json:"stage"`
	Time      string `json:"time"`
	TimeEpoch int64  `json:"timeEpoch"`
}

// lambdaEvent returns the case as API Gateway would deliver it to Lambda:
// header names lower-cased, the body a JSON string.
func lambdaEvent(c *Case) []byte {
	const domain = "abc123.execute-api.us-east-1.amazonaws.com"
	ev := v2Event{Version: "2.0", RouteKey: "POST /mcp", RawPath: "/mcp", Body: string(c.Body),
		Headers: map[string]string{"host": domain, "user-agent": "bench-client/1.0", "content-length": fmt.Sprint(len(c.Body))}}
	for k, vs := range c.Header {
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	rc := &ev.RequestContext
	rc.AccountID, rc.APIID, rc.DomainName, rc.DomainPrefix = "123456789012", "abc123", domain, "abc123"
	rc.HTTP.Method, rc.HTTP.Path, rc.HTTP.Protocol = http.MethodPost, "/mcp", "HTTP/1.1"
	rc.HTTP.SourceIP, rc.HTTP.UserAgent = "203.0.113.10", "bench-client/1.0"
	rc.RequestID, rc.RouteKey, rc.Stage = "bench-"+c.Name, "POST /mcp", "$default"
	rc.Time, rc.TimeEpoch = "30/Nov/2026:00:00:00 +0000", 1796083200000
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return b
}

// v2Response is the HTTP API 2.0 response payload.
type v2Response struct {
	StatusCode      *int              `json:"statusCode"`
	Headers         map[string]string `json:"headers"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

// DecodeLambda turns a 2.0 response payload into an Answer, its body
// decoded as for HTTP, so that [Case.Check] judges both paths alike.
func DecodeLambda(payload []byte) (*Answer, error) {
	var r v2Response
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("not an HTTP API response payload: %v: %.200s", err, payload)
	}
	if r.StatusCode == nil {
		return nil, fmt.Errorf("response payload has no statusCode: %.200s", payload)
	}
	a := &Answer{Status: *r.StatusCode, Header: http.Header{}, Body: []byte(r.Body)}
	for k, v := range r.Headers {
		a.Header.Set(k, v)
	}
	if r.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(r.Body)
		if err != nil {
			return nil, fmt.Errorf("body marked base64 does not decode: %v", err)
		}
		a.Body = b
	}
	a.Msg, a.DecodeErr = decodeResponse(a.Header, a.Body)
	return a, nil
}

// Invoke sends the case's event to h and decodes the answer.
func (c *Case) Invoke(h LambdaHandler) (*Answer, error) {
	out, err := h.Invoke(context.Background(), c.Event)
	if err != nil {
		return nil, fmt.Errorf("invocation failed: %v", err)
	}
	return DecodeLambda(out)
}
