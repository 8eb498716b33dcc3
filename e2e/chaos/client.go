package chaos

import (
	"bufio"
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
)

// ProtocolVersion is the MCP revision the load speaks.
const ProtocolVersion = "2026-07-28"

// The _meta keys of the protocol and of this server.
const (
	metaVersion = "io.modelcontextprotocol/protocolVersion"
	metaCaps    = "io.modelcontextprotocol/clientCapabilities"
	metaReplay  = "io.github.serverless-mcp/replay"
	metaFailure = "io.github.serverless-mcp/failure"
	// extTasks is the tasks extension's name among the capabilities.
	extTasks = "io.modelcontextprotocol/tasks"
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
	Error  *RPCError
	Body   []byte
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// Do sends c and reads its answer.
func (cl *Client) Do(ctx context.Context, c Call) *Answer {
	params := map[string]any{}
	for k, v := range c.Params {
		params[k] = v
	}
	caps := map[string]any{}
	if c.Elicitation {
		caps["elicitation"] = map[string]any{}
	}
	if c.Tasks {
		caps["extensions"] = map[string]any{extTasks: map[string]any{}}
	}
	params["_meta"] = map[string]any{metaVersion: ProtocolVersion, metaCaps: caps}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": cl.ids.Add(1), "method": c.Method, "params": params})
	if err != nil {
		return &Answer{Err: fmt.Errorf("encoding the request: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.URL, bytes.NewReader(body))
	if err != nil {
		return &Answer{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Method", c.Method)
	if c.Name != "" {
		req.Header.Set("Mcp-Name", c.Name)
	}
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
		return &Answer{Err: err, Latency: time.Since(start)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	a := &Answer{Status: resp.StatusCode, Latency: time.Since(start), Body: raw,
		RequestID: resp.Header.Get(HeaderRequestID), Instance: resp.Header.Get(HeaderInstance),
		Injected: resp.Header.Get(HeaderInjected) != ""}
	if err != nil {
		a.Err = fmt.Errorf("reading the answer: %w", err)
		return a
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		a.RetryAfter = time.Duration(s) * time.Second
	}
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = lastMessage(raw)
	}
	var out struct {
		Result map[string]any `json:"result"`
		Error  *RPCError      `json:"error"`
	}
	if json.Unmarshal(msg, &out) == nil {
		a.Result, a.Error = out.Result, out.Error
	}
	return a
}

// lastMessage is the response in an event stream: the last data line
// that holds a result or an error (notifications come before it).
func lastMessage(stream []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			d = bytes.TrimSpace(d)
			if bytes.Contains(d, []byte(`"result"`)) || bytes.Contains(d, []byte(`"error"`)) {
				last = append([]byte(nil), d...)
			}
		}
	}
	return last
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
	if a.Status != 0 {
		fmt.Fprintf(&b, " http=%d", a.Status)
	}
	if a.RequestID != "" {
		fmt.Fprintf(&b, " req=%s on %s", a.RequestID, a.Instance)
	}
	switch {
	case a.Err != nil:
		fmt.Fprintf(&b, " err=%v", a.Err)
	case a.Error != nil:
		d, _ := json.Marshal(a.Error.Data)
		fmt.Fprintf(&b, " code=%d data=%s", a.Error.Code, d)
	case a.Result["isError"] == true:
		f, _ := json.Marshal(a.Failure())
		fmt.Fprintf(&b, " failure=%s", f)
	case a.Result == nil && len(a.Body) > 0:
		fmt.Fprintf(&b, " body=%.200q", a.Body)
	}
	return b.String()
}
