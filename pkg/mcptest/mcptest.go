// Package mcptest calls a [stateless.Server] in a test the way a client
// of revision 2026-07-28 calls it over the wire: each request gets its
// JSON-RPC envelope and id, the _meta every request carries (the
// protocol version and the client capabilities), and the headers the
// transport requires (Content-Type, Accept, MCP-Protocol-Version,
// Mcp-Method, Mcp-Name), so that a tool author tests a tool, not the
// envelope. The request goes through [stateless.Server.Handle], every
// check of the server included; nothing is mocked.
//
//	c := mcptest.New(t, srv)
//	res := c.CallTool("notes_add", map[string]any{"text": "hello"}, mcptest.IdempotencyKey("k1"))
//	if res.IsError() { t.Fatal(res.Text()) }
//
// A tool whose schema mirrors an argument into an Mcp-Param-* header
// (x-mcp-header) needs that header given with Header: the package does not
// read schemas.
package mcptest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// DefaultEndpoint is the endpoint URL requests are addressed to when the
// Client names none.
const DefaultEndpoint = "https://mcp.example.test/mcp"

// Client calls one server. Its fields apply to every call; set them
// before the first.
type Client struct {
	Server *stateless.Server
	// Principal is the caller as a transport established it (an
	// authorizer's subject); "" is anonymous.
	Principal string
	// Address is the caller's network address as the transport verified
	// it (stateless.Request.Address); "" is unknown.
	Address string
	// Token, if set, is sent as a bearer token (a server with
	// Options.Auth validates it).
	Token string
	// Endpoint is the URL requests are addressed to (request state is
	// bound to it); "" is DefaultEndpoint.
	Endpoint string
	// Capabilities are the client capabilities every request declares
	// (_meta io.modelcontextprotocol/clientCapabilities); nil declares
	// none.
	Capabilities map[string]any

	t   testing.TB
	ids atomic.Int64
}

// New returns a client of s that fails t on a request it cannot build
// or an answer that is not JSON-RPC. A nil t (an Example, a program)
// panics instead.
func New(t testing.TB, s *stateless.Server) *Client { return &Client{Server: s, t: t} }

// fatalf fails the client's test, or panics without one.
func (c *Client) fatalf(format string, args ...any) {
	if c.t == nil {
		panic(fmt.Sprintf(format, args...))
	}
	c.t.Helper()
	c.t.Fatalf(format, args...)
}

// Option adjusts one call.
type Option func(*call)

type call struct {
	header http.Header
	meta   map[string]any
	ctx    context.Context
}

// IdempotencyKey sends the tools/call with this idempotency key (the
// Idempotency-Key header).
func IdempotencyKey(key string) Option {
	return func(c *call) { c.header.Set("Idempotency-Key", key) }
}

// Header adds a request header (an Mcp-Param-* header, an Origin).
func Header(name, value string) Option {
	return func(c *call) { c.header.Add(name, value) }
}

// Meta adds a member to the request's _meta (a progressToken).
func Meta(name string, value any) Option {
	return func(c *call) { c.meta[name] = value }
}

// Context makes the call under ctx (a deadline, say).
func Context(ctx context.Context) Option {
	return func(c *call) { c.ctx = ctx }
}

// Answer is the server's answer to one request.
type Answer struct {
	Status int
	Header http.Header
	// Raw is the body as sent.
	Raw []byte
	// Result is the JSON-RPC result, nil for an error.
	Result map[string]any
	// Error is the JSON-RPC error, nil for a result.
	Error *Error
}

// Error is a JSON-RPC error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// IsError reports whether a tools/call answered a tool failure (an
// isError result) or the request failed (a JSON-RPC error).
func (a *Answer) IsError() bool { return a.Error != nil || a.Result["isError"] == true }

// Structured is a tool result's structuredContent, nil when it has none.
func (a *Answer) Structured() map[string]any {
	m, _ := a.Result["structuredContent"].(map[string]any)
	return m
}

// Text is the text of a tool result's text content, joined by newlines;
// for a JSON-RPC error, its message.
func (a *Answer) Text() string {
	if a.Error != nil {
		return a.Error.Message
	}
	items, _ := a.Result["content"].([]any)
	var parts []string
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// Replayed reports whether the answer is a replay of an earlier call
// with the same idempotency key (stateless.MetaReplay in its _meta).
func (a *Answer) Replayed() bool {
	meta, _ := a.Result["_meta"].(map[string]any)
	_, ok := meta[stateless.MetaReplay]
	return ok
}

// CallTool calls tool name with args (any value that encodes as a JSON
// object; nil is {}).
func (c *Client) CallTool(name string, args any, opts ...Option) *Answer {
	if args == nil {
		args = map[string]any{}
	}
	return c.Call("tools/call", map[string]any{"name": name, "arguments": args}, opts...)
}

// Call sends method with params (nil is none beyond _meta), naming its
// target in Mcp-Name for the methods that have one.
func (c *Client) Call(method string, params map[string]any, opts ...Option) *Answer {
	if c.t != nil {
		c.t.Helper()
	}
	cl := &call{header: http.Header{}, meta: map[string]any{}, ctx: context.Background()}
	for _, o := range opts {
		o(cl)
	}
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    stateless.Version20260728,
		"io.modelcontextprotocol/clientCapabilities": c.capabilities(),
	}
	for k, v := range cl.meta {
		meta[k] = v
	}
	p["_meta"] = meta
	id := c.ids.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		c.fatalf("mcptest: encoding the %s request: %v", method, err)
	}
	h := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {stateless.Version20260728},
		"Mcp-Method":           {method},
	}
	if target := targetOf(method, params); target != "" {
		h.Set("Mcp-Name", headerValue(target))
	}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	for k, vs := range cl.header {
		h[k] = append(h[k], vs...)
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	resp := c.Server.Handle(cl.ctx, &stateless.Request{Method: http.MethodPost, Header: h, Body: body,
		Principal: c.Principal, Address: c.Address, Endpoint: endpoint, Host: hostOf(endpoint)})
	a := &Answer{Status: resp.Status, Header: resp.Header, Raw: resp.Body}
	var rpc struct {
		ID     json.RawMessage `json:"id"`
		Result map[string]any  `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(resp.Body, &rpc); err != nil {
		c.fatalf("mcptest: the answer to %s is not JSON-RPC (%v): %s", method, err, resp.Body)
	}
	if rpc.Error == nil && string(rpc.ID) != strconv.FormatInt(id, 10) {
		c.fatalf("mcptest: the answer to %s has id %s, want %d", method, rpc.ID, id)
	}
	a.Result, a.Error = rpc.Result, rpc.Error
	return a
}

func (c *Client) capabilities() map[string]any {
	if c.Capabilities == nil {
		return map[string]any{}
	}
	return c.Capabilities
}

// targetOf is the Mcp-Name of a request: the tool's or prompt's name, the
// resource's URI, the task's id (a method of the server's own names its
// target with the Header option).
func targetOf(method string, params map[string]any) string {
	var v any
	switch method {
	case "tools/call", "prompts/get":
		v = params["name"]
	case "resources/read":
		v = params["uri"]
	case "tasks/get", "tasks/update", "tasks/cancel":
		v = params["taskId"] // the tasks extension's
	}
	s, _ := v.(string)
	return s
}

// headerValue is v as a header carries it: itself when it is visible
// ASCII, else in the =?base64?...?= form.
func headerValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	return v
}

func hostOf(endpoint string) string {
	rest, _ := strings.CutPrefix(endpoint, "https://")
	rest, _ = strings.CutPrefix(rest, "http://")
	host, _, _ := strings.Cut(rest, "/")
	return host
}
