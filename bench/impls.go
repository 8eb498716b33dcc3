package bench

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/gosdk"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/mcpgo"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/ours"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/ours/quota"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/tools"
)

// The tools' types live in bench/impl/tools so that each implementation's
// package can be linked alone; these aliases keep this package's API.
type (
	// EchoIn is the echo tool's input.
	EchoIn = tools.EchoIn
	// EchoOut is the echo tool's structured output.
	EchoOut = tools.EchoOut
	// AddIn is the add tool's input.
	AddIn = tools.AddIn
	// AddOut is the add tool's structured output.
	AddOut = tools.AddOut
)

// Tool descriptions, the same for every implementation.
const (
	echoDesc = tools.EchoDesc
	addDesc  = tools.AddDesc
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
	{"ours-inline", NewOursInline},
	{"ours-quota", NewOursQuota},
	{"gosdk", NewGoSDK},
	{"mcpgo", NewMCPGo},
	{"floor", NewFloor},
}

// NewOurs returns this project's stateless server (bench/impl/ours).
func NewOurs() http.Handler { return ours.New() }

// NewOursInline returns our server with its tools declared Inline
// (stateless.Tool.Inline): handlers on the request's goroutine, as the
// peers run theirs.
func NewOursInline() http.Handler { return ours.NewInline() }

// NewOursQuota returns our server behind the default quotas on their
// memory counters (bench/impl/ours/quota).
func NewOursQuota() http.Handler { return quota.New() }

// NewGoSDK returns the official Go SDK's server, served statelessly with
// JSON responses (bench/impl/gosdk).
func NewGoSDK() http.Handler { return gosdk.New() }

// NewMCPGo returns mcp-go's streamable HTTP server in stateless mode
// (bench/impl/mcpgo).
func NewMCPGo() http.Handler { return mcpgo.New() }

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
	"io.modelcontextprotocol/serverInfo": map[string]any{"name": tools.ServerName, "version": tools.ServerVersion},
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
