package bench

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// EchoIn is the echo tool's input, and EchoOut its structured output.
type EchoIn struct {
	Text string `json:"text"`
}

// EchoOut is the echo tool's structured output.
type EchoOut struct {
	Text string `json:"text"`
}

// AddIn is the add tool's input.
type AddIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// AddOut is the add tool's structured output.
type AddOut struct {
	Sum int `json:"sum"`
}

// Tool descriptions, the same for every implementation.
const (
	echoDesc = "Returns its text."
	addDesc  = "Adds two integers."
)

// Impl is one implementation under test.
type Impl struct {
	// Name is the benchmark key: impl=<Name>.
	Name string
	// New builds a ready handler serving the echo and add tools.
	New func() http.Handler
}

// Impls lists the implementations, ours first.
var Impls = []Impl{
	{"ours", NewOurs},
	{"gosdk", NewGoSDK},
	{"mcpgo", NewMCPGo},
	{"floor", NewFloor},
}

// NewOurs returns this project's stateless server.
func NewOurs() http.Handler {
	s := stateless.NewServer(stateless.Implementation{Name: "bench-server", Version: "1.0.0"}, nil)
	stateless.AddTool(s, &stateless.Tool{Name: "echo", Description: echoDesc},
		func(_ context.Context, _ *stateless.ToolRequest, in EchoIn) (*stateless.CallToolResult, EchoOut, error) {
			return nil, EchoOut(in), nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "add", Description: addDesc},
		func(_ context.Context, _ *stateless.ToolRequest, in AddIn) (*stateless.CallToolResult, AddOut, error) {
			return nil, AddOut{Sum: in.A + in.B}, nil
		})
	return s
}

// NewGoSDK returns the official Go SDK's server, served statelessly with
// JSON responses as its documentation asks for 2026-07-28 over HTTP.
func NewGoSDK() http.Handler {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "bench-server", Version: "1.0.0"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "echo", Description: echoDesc},
		func(_ context.Context, _ *gosdk.CallToolRequest, in EchoIn) (*gosdk.CallToolResult, EchoOut, error) {
			return nil, EchoOut(in), nil
		})
	gosdk.AddTool(s, &gosdk.Tool{Name: "add", Description: addDesc},
		func(_ context.Context, _ *gosdk.CallToolRequest, in AddIn) (*gosdk.CallToolResult, AddOut, error) {
			return nil, AddOut{Sum: in.A + in.B}, nil
		})
	return gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s },
		&gosdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// NewMCPGo returns mcp-go's streamable HTTP server in stateless mode
// (WithStateLess), with typed tools whose input and output schemas are
// inferred from the same Go types. Its logger is silenced, as the other
// implementations log nothing by default.
func NewMCPGo() http.Handler {
	s := mcpgoserver.NewMCPServer("bench-server", "1.0.0", mcpgoserver.WithToolCapabilities(false))
	s.AddTool(mcpgomcp.NewTool("echo", mcpgomcp.WithDescription(echoDesc),
		mcpgomcp.WithInputSchema[EchoIn](), mcpgomcp.WithOutputSchema[EchoOut]()),
		mcpgomcp.NewStructuredToolHandler(func(_ context.Context, _ mcpgomcp.CallToolRequest, in EchoIn) (EchoOut, error) {
			return EchoOut(in), nil
		}))
	s.AddTool(mcpgomcp.NewTool("add", mcpgomcp.WithDescription(addDesc),
		mcpgomcp.WithInputSchema[AddIn](), mcpgomcp.WithOutputSchema[AddOut]()),
		mcpgomcp.NewStructuredToolHandler(func(_ context.Context, _ mcpgomcp.CallToolRequest, in AddIn) (AddOut, error) {
			return AddOut{Sum: in.A + in.B}, nil
		}))
	return mcpgoserver.NewStreamableHTTPServer(s,
		mcpgoserver.WithStateLess(true),
		mcpgoserver.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
}

// NewFloor returns the floor: a handler that reads the body, decodes it
// with encoding/json into a map[string]any, and encodes a hard-coded
// answer equivalent to the right one with encoding/json. It validates
// nothing and runs no tool; no real server can be cheaper while using
// encoding/json generically.
func NewFloor() http.Handler {
	return http.HandlerFunc(serveFloor)
}

func serveFloor(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	status, resp := http.StatusOK, floorDiscover
	params, _ := req["params"].(map[string]any)
	meta, _ := params["_meta"].(map[string]any)
	switch {
	case meta["io.modelcontextprotocol/protocolVersion"] != ModernVersion:
		status, resp = http.StatusBadRequest, floorUnsupported
	case req["method"] == "tools/list":
		resp = floorToolsList
	case req["method"] == "tools/call" && params["name"] == "echo":
		resp = floorEcho
	case req["method"] == "tools/call":
		resp = floorAdd
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// serverInfoMeta is the _meta every floor result carries.
var serverInfoMeta = map[string]any{
	"io.modelcontextprotocol/serverInfo": map[string]any{"name": "bench-server", "version": "1.0.0"},
}

// floorResult wraps a result in a JSON-RPC response with id 1.
func floorResult(result map[string]any) map[string]any {
	result["resultType"] = "complete"
	result["_meta"] = serverInfoMeta
	return map[string]any{"jsonrpc": "2.0", "id": 1, "result": result}
}

func floorSchema(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// The floor's canned answers.
var (
	floorDiscover = floorResult(map[string]any{
		"supportedVersions": []any{ModernVersion, "2025-11-25", "2025-06-18", "2025-03-26"},
		"capabilities":      map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
		"ttlMs":             300000,
		"cacheScope":        "public",
	})
	floorToolsList = floorResult(map[string]any{
		"tools": []any{
			map[string]any{
				"name": "add", "description": addDesc,
				"inputSchema": floorSchema(map[string]any{
					"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "integer"},
				}, "a", "b"),
				"outputSchema": floorSchema(map[string]any{"sum": map[string]any{"type": "integer"}}, "sum"),
			},
			map[string]any{
				"name": "echo", "description": echoDesc,
				"inputSchema":  floorSchema(map[string]any{"text": map[string]any{"type": "string"}}, "text"),
				"outputSchema": floorSchema(map[string]any{"text": map[string]any{"type": "string"}}, "text"),
			},
		},
		"ttlMs":      60000,
		"cacheScope": "public",
	})
	floorEcho = floorResult(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": `{"text":"` + EchoText + `"}`}},
		"structuredContent": map[string]any{"text": EchoText},
	})
	floorAdd = floorResult(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": `{"sum":42}`}},
		"structuredContent": map[string]any{"sum": AddA + AddB},
	})
	floorUnsupported = map[string]any{
		"jsonrpc": "2.0", "id": 1,
		"error": map[string]any{
			"code": -32022, "message": "Unsupported protocol version",
			"data": map[string]any{
				"supported": []any{ModernVersion, "2025-11-25", "2025-06-18", "2025-03-26"},
				"requested": BadVersion,
			},
		},
	}
)
