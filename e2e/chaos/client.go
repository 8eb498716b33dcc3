package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// The _meta keys of this server's results.
const (
	metaReplay  = "io.github.serverless-mcp/replay"
	metaFailure = "io.github.serverless-mcp/failure"
)

// Client speaks MCP over HTTP to the front, as a 2026-07-28 client does:
// every request carries the version and the client's capabilities in
// params._meta and mirrors the version, method and target in headers.
type Client struct {
	URL  string
	HTTP *http.Client
	ids  atomic.Int64
}

// Call is one request to send.
type Call struct {
	// Principal is the caller, as the gateway's authorizer would name it.
	Principal string
	Method    string
	// Name is the Mcp-Name header: the tool or prompt name, or the URI.
	Name string
	// Params, without _meta (added here).
	Params map[string]any
	// Elicitation advertises the elicitation capability (a confirmed
	// delete needs it).
	Elicitation bool
	// Tasks declares the tasks extension (notes_export and tasks/* need
	// it).
	Tasks bool
	// Stream sends the request through the function's streaming door
	// (HeaderDoor). KeepDoor says the flow chose the door for all its
	// requests (a confirmation is sealed for the endpoint of the door
	// that asked for it); otherwise each logical request draws its own.
	Stream, KeepDoor bool
	// Header holds more headers for the front (HeaderPin).
	Header map[string]string
}

// Answer is what came back for one request.
type Answer struct {
	// ID is the request's JSON-RPC id (a listen stream's subscription
	// id).
	ID int64
	// Err is a transport error: no HTTP answer at all.
	Err error
	// Status, and the front's headers.
	Status    int
	RequestID string
	Instance  string
	Injected  bool
	// RetryAfter is the Retry-After header, if any.
	RetryAfter time.Duration
	Latency    time.Duration
	// Result or Error, decoded; Body as it came.
	Result map[string]any
	Error  *harness.RPCError
	Body   []byte
}

// Do sends c and reads its answer.
func (cl *Client) Do(ctx context.Context, c Call) *Answer {
	id := cl.ids.Add(1)
	body, err := harness.Encode(id, c.Method, c.Params, harness.Caps{Elicitation: c.Elicitation, Tasks: c.Tasks})
	if err != nil {
		return &Answer{Err: fmt.Errorf("encoding the request: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.URL, bytes.NewReader(body))
	if err != nil {
		return &Answer{Err: err}
	}
	harness.SetHeaders(req.Header, c.Method, c.Name)
	if c.Principal != "" {
		req.Header.Set(HeaderPrincipal, c.Principal)
	}
	if c.Stream {
		req.Header.Set(HeaderDoor, DoorStream)
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		return &Answer{ID: id, Err: err, Latency: time.Since(start)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	a := &Answer{ID: id, Status: resp.StatusCode, Latency: time.Since(start), Body: raw,
		RequestID: resp.Header.Get(HeaderRequestID), Instance: resp.Header.Get(HeaderInstance),
		Injected: resp.Header.Get(HeaderInjected) != ""}
	if err != nil {
		a.Err = fmt.Errorf("reading the answer: %w", err)
		return a
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		a.RetryAfter = time.Duration(s) * time.Second
	}
	if m, err := harness.Decode(resp.Header.Get("Content-Type"), raw); err == nil {
		a.Result, a.Error = m.Result, m.Error
	}
	return a
}

// Class is how the load generator reads an answer.
type Class int

// The classes of answers.
const (
	// OK is a result that is not a tool error (input_required included).
	OK Class = iota + 1
	// ToolRetryable is a tool error marked retryable in its failure.
	ToolRetryable
	// ToolError is any other tool error (isError).
	ToolError
	// RefusedRetryable is a JSON-RPC error whose data says retryable.
	RefusedRetryable
	// RPCError is any other JSON-RPC error.
	Refused
	// Transport is no HTTP answer: a connection reset, a timeout.
	Transport
	// Injected is a gateway error caused by a deliberate kill.
	Injected
	// Gateway is a 5xx, or an answer that is no JSON-RPC response, not
	// caused by a deliberate fault: never expected.
	Gateway
)

var classNames = map[Class]string{OK: "ok", ToolRetryable: "tool-retryable", ToolError: "tool-error",
	RefusedRetryable: "rpc-retryable", Refused: "rpc-error", Transport: "transport", Injected: "injected-gateway", Gateway: "gateway"}

func (c Class) String() string { return classNames[c] }

// Retryable reports whether the request should be sent again as it was.
func (c Class) Retryable() bool {
	switch c {
	case ToolRetryable, RefusedRetryable, Transport, Injected, Gateway:
		return true
	}
	return false
}

// Classify reads an answer.
func (a *Answer) Classify() Class {
	switch {
	case a.Err != nil && a.Status == 0:
		return Transport
	case a.Injected:
		return Injected
	case a.Err != nil, a.Status >= 500, a.Result == nil && a.Error == nil:
		return Gateway
	case a.Error != nil && a.Error.Data["retryable"] == true:
		return RefusedRetryable
	case a.Error != nil:
		return Refused
	case a.Result["isError"] == true && a.Failure()["retryable"] == true:
		return ToolRetryable
	case a.Result["isError"] == true:
		return ToolError
	}
	return OK
}

// Failure is a tool error's machine-readable failure, or nil.
func (a *Answer) Failure() map[string]any {
	meta, _ := a.Result["_meta"].(map[string]any)
	f, _ := meta[metaFailure].(map[string]any)
	return f
}

// Structured is the result's structuredContent, or nil.
func (a *Answer) Structured() map[string]any {
	s, _ := a.Result["structuredContent"].(map[string]any)
	return s
}

// Replay reports whether the result is a replay of a completed call.
func (a *Answer) Replay() bool {
	meta, _ := a.Result["_meta"].(map[string]any)
	return meta[metaReplay] == true
}

// RetryHint is how long the answer asks the client to wait: data's or the
// failure's retryAfterMs, else Retry-After; zero for none.
func (a *Answer) RetryHint() time.Duration {
	ms := func(v any) time.Duration {
		f, _ := v.(float64)
		return time.Duration(f) * time.Millisecond
	}
	if a.Error != nil {
		if d := ms(a.Error.Data["retryAfterMs"]); d > 0 {
			return d
		}
	}
	if d := ms(a.Failure()["retryAfterMs"]); d > 0 {
		return d
	}
	return a.RetryAfter
}

// Describe is a short account of the answer for reports.
func (a *Answer) Describe() string {
	c := a.Classify()
	var b strings.Builder
	fmt.Fprintf(&b, "%s", c)
	r := harness.Reply{Status: a.Status, RequestID: a.RequestID, Instance: a.Instance, Err: a.Err, Error: a.Error}
	switch {
	case r.Describe(&b):
	case a.Result["isError"] == true:
		f, _ := json.Marshal(a.Failure())
		fmt.Fprintf(&b, " failure=%s", f)
	case a.Result == nil && len(a.Body) > 0:
		fmt.Fprintf(&b, " body=%.200q", a.Body)
	}
	return b.String()
}
