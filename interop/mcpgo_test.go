package interop

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcpGoClientInfo is how the mcp-go client introduces itself.
var mcpGoClientInfo = mcp.Implementation{Name: "interop-mcp-go", Version: "1.2.1"}

// TestMCPGoMissingElicitationCapability runs testMCPGoMissingElicitationCapability on the fixture served over net/http.
func TestMCPGoMissingElicitationCapability(t *testing.T) {
	testMCPGoMissingElicitationCapability(t, startServer)
}

// TestMCPGoUnsupportedVersion runs testMCPGoUnsupportedVersion on the fixture served over net/http.
func TestMCPGoUnsupportedVersion(t *testing.T) {
	testMCPGoUnsupportedVersion(t, startServer)
}

// connectMCPGo starts an mcp-go Streamable HTTP client on url and
// initializes it. pin "" leaves the client at its default (2026-07-28,
// server/discover first); anything else pins it with
// client.WithProtocolVersion.
func connectMCPGo(ctx context.Context, t *testing.T, url, pin string, rec *recorder, opts ...client.ClientOption) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(rec.client()))
	if err != nil {
		t.Fatalf("mcp-go NewStreamableHTTP: %v", err)
	}
	if pin != "" {
		opts = append(opts, client.WithProtocolVersion(pin))
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("mcp-go Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcpGoClientInfo}})
	if err != nil {
		t.Fatalf("mcp-go Initialize (version %q): %v", pin, err)
	}
	return c, res
}

// mcpGoText returns the text of the only content block of an mcp-go
// result.
func mcpGoText(t *testing.T, content []mcp.Content) string {
	t.Helper()
	if len(content) != 1 {
		t.Fatalf("got %d content blocks, want 1: %+v", len(content), content)
	}
	tc, ok := mcp.AsTextContent(content[0])
	if !ok {
		t.Fatalf("content block is %T, want text", content[0])
	}
	return tc.Text
}

// callTool calls tool name with args through an mcp-go client.
func callTool(ctx context.Context, c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, error) {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// testMCPGo runs the mcp-go v1.2.1 client through the fixture at its
// default revision (2026-07-28) and pinned to each legacy revision.
func testMCPGo(t *testing.T, serve serveFunc) {
	for _, pin := range append([]string{""}, legacyVersions...) {
		name, want := pin, pin
		if pin == "" {
			name, want = "default", v20260728
		}
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			url := serve(t)
			rec := newRecorder(t)
			c, init := connectMCPGo(ctx, t, url, pin, rec)
			modern := want == v20260728

			t.Run("Initialize", func(t *testing.T) {
				if init.ProtocolVersion != want || c.ProtocolVersion() != want {
					t.Errorf("negotiated %q (client reports %q), want %q", init.ProtocolVersion, c.ProtocolVersion(), want)
				}
				if init.ServerInfo.Name != FixtureName || init.ServerInfo.Version != FixtureVersion {
					t.Errorf("server info = %+v, want %s %s", init.ServerInfo, FixtureName, FixtureVersion)
				}
				if init.Instructions != FixtureInstructions {
					t.Errorf("instructions = %q, want %q", init.Instructions, FixtureInstructions)
				}
				caps := init.Capabilities
				if caps.Tools == nil || caps.Resources == nil || caps.Prompts == nil || caps.Completions == nil {
					t.Errorf("capabilities = %+v, want tools, resources, prompts and completions", caps)
				}
				discover, initialize := rec.calls("server/discover"), rec.calls("initialize")
				if modern && (len(discover) != 1 || len(initialize) != 0) {
					t.Errorf("sent %d server/discover and %d initialize, want 1 and 0", len(discover), len(initialize))
				}
				if !modern {
					if len(discover) != 0 || len(initialize) != 1 {
						t.Fatalf("sent %d server/discover and %d initialize, want 0 and 1", len(discover), len(initialize))
					}
					if got := requestParams(t, initialize[0])["protocolVersion"]; got != pin {
						t.Errorf("initialize asked for %v, want %q", got, pin)
					}
				}
			})

			t.Run("ListTools", func(t *testing.T) {
				res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
				if err != nil {
					t.Fatalf("ListTools: %v", err)
				}
				var names []string
				tools := map[string]mcp.Tool{}
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
					tools[tool.Name] = tool
				}
				if !slices.Equal(names, ToolNames()) {
					t.Fatalf("tools = %v, want %v", names, ToolNames())
				}
				checkSchema(t, "echo inputSchema", tools[ToolEcho].InputSchema, map[string]string{"text": "string"})
				checkSchema(t, "echo outputSchema", tools[ToolEcho].OutputSchema, map[string]string{"text": "string"})
				checkSchema(t, "add inputSchema", tools[ToolAdd].InputSchema, map[string]string{"a": "integer", "b": "integer"})
				checkSchema(t, "add outputSchema", tools[ToolAdd].OutputSchema, map[string]string{"sum": "integer"})
				if h := tools[ToolEcho].Annotations.ReadOnlyHint; h == nil || !*h {
					t.Errorf("echo readOnlyHint = %v, want true", h)
				}
			})

			t.Run("CallTool/echo", func(t *testing.T) {
				res, err := callTool(ctx, c, ToolEcho, map[string]any{"text": "hello, interop"})
				if err != nil {
					t.Fatalf("CallTool echo: %v", err)
				}
				var out EchoOut
				remarshal(t, res.StructuredContent, &out)
				if res.IsError || out.Text != "hello, interop" {
					t.Errorf("echo = %+v (isError %v), want text %q", res.StructuredContent, res.IsError, "hello, interop")
				}
				if got, want := mcpGoText(t, res.Content), `{"text":"hello, interop"}`; got != want {
					t.Errorf("text = %s, want %s", got, want)
				}
			})

			t.Run("CallTool/add", func(t *testing.T) {
				res, err := callTool(ctx, c, ToolAdd, map[string]any{"a": -8, "b": 50})
				if err != nil {
					t.Fatalf("CallTool add: %v", err)
				}
				var out AddOut
				remarshal(t, res.StructuredContent, &out)
				if res.IsError || out.Sum != 42 {
					t.Errorf("add(-8, 50) = %+v (isError %v), want sum 42", res.StructuredContent, res.IsError)
				}
				if got := mcpGoText(t, res.Content); got != `{"sum":42}` {
					t.Errorf("text = %s, want {\"sum\":42}", got)
				}
			})

			t.Run("CallTool/unknown-tool", func(t *testing.T) {
				_, err := callTool(ctx, c, "no_such_tool", map[string]any{})
				if !errors.Is(err, mcp.ErrInvalidParams) {
					t.Errorf("unknown tool: error %v, want mcp.ErrInvalidParams (-32602)", err)
				}
			})

			if !modern {
				t.Run("CallTool/confirm-needs-2026", func(t *testing.T) {
					res, err := callTool(ctx, c, ToolConfirm, map[string]any{"action": "deploy"})
					if err != nil {
						t.Fatalf("CallTool confirm: %v", err)
					}
					if !res.IsError || !strings.Contains(mcpGoText(t, res.Content), v20260728) {
						t.Errorf("confirm on %s = %+v, want an isError result naming %s", want, res.Content, v20260728)
					}
				})
			}

			t.Run("ReadResource", func(t *testing.T) {
				for uri, text := range map[string]string{ReadmeURI: ReadmeText, "memo://notes/7": NoteText("7")} {
					var req mcp.ReadResourceRequest
					req.Params.URI = uri
					res, err := c.ReadResource(ctx, req)
					if err != nil {
						t.Fatalf("ReadResource %s: %v", uri, err)
					}
					if len(res.Contents) != 1 {
						t.Fatalf("%s: got %d contents, want 1", uri, len(res.Contents))
					}
					tc, ok := mcp.AsTextResourceContents(res.Contents[0])
					if !ok || tc.URI != uri || tc.Text != text || tc.MIMEType != "text/plain" {
						t.Errorf("%s: contents = %+v, want text/plain %q", uri, res.Contents[0], text)
					}
				}
			})

			t.Run("GetPrompt", func(t *testing.T) {
				var req mcp.GetPromptRequest
				req.Params.Name = PromptGreet
				req.Params.Arguments = map[string]string{PromptGreetArg: "Grace"}
				res, err := c.GetPrompt(ctx, req)
				if err != nil {
					t.Fatalf("GetPrompt: %v", err)
				}
				if len(res.Messages) != 1 || res.Messages[0].Role != mcp.RoleUser {
					t.Fatalf("messages = %+v, want one user message", res.Messages)
				}
				if got := mcpGoText(t, []mcp.Content{res.Messages[0].Content}); got != GreetText("Grace") {
					t.Errorf("prompt text = %q, want %q", got, GreetText("Grace"))
				}
			})

			t.Run("Complete", func(t *testing.T) {
				var req mcp.CompleteRequest
				req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: PromptGreet}
				req.Params.Argument = mcp.CompleteArgument{Name: PromptGreetArg, Value: "g"}
				res, err := c.Complete(ctx, req)
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if want := []string{"Grace"}; !slices.Equal(res.Completion.Values, want) {
					t.Errorf("completions of %q = %v, want %v", "g", res.Completion.Values, want)
				}
			})

			if modern {
				t.Run("wire", func(t *testing.T) {
					for _, e := range rec.exchanges() {
						if e.Method != http.MethodPost {
							t.Errorf("client sent %s; 2026-07-28 is POST only", e.Method)
							continue
						}
						if e.ReqHeader.Get("Mcp-Protocol-Version") != v20260728 || e.ReqHeader.Get("Mcp-Method") != e.rpcMethod() {
							t.Errorf("%s: headers %v, want version %s and Mcp-Method", e.rpcMethod(), mcpHeaders(e.ReqHeader), v20260728)
						}
					}
				})
			}
		})
	}
}

// elicitFunc adapts a function to client.ElicitationHandler.
type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

// Elicit implements client.ElicitationHandler.
func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

// testMCPGoElicitation drives the confirm tool's two rounds through the
// mcp-go client's automatic multi-round-trip loop at 2026-07-28.
func testMCPGoElicitation(t *testing.T, serve serveFunc) {
	ctx := testContext(t)
	url := serve(t)
	rec := newRecorder(t)
	var (
		mu   sync.Mutex
		seen []mcp.ElicitationParams
	)
	handler := elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		mu.Lock()
		seen = append(seen, req.Params)
		mu.Unlock()
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action:  mcp.ElicitationResponseActionAccept,
			Content: map[string]any{ConfirmField: "Barbara"},
		}}, nil
	})
	c, init := connectMCPGo(ctx, t, url, "", rec, client.WithElicitationHandler(handler))
	if init.ProtocolVersion != v20260728 {
		t.Fatalf("negotiated %q, want %s", init.ProtocolVersion, v20260728)
	}
	res, err := callTool(ctx, c, ToolConfirm, map[string]any{"action": "ship"})
	if err != nil {
		t.Fatalf("CallTool confirm: %v", err)
	}
	if got, want := mcpGoText(t, res.Content), ConfirmAccepted("ship", "Barbara"); res.IsError || got != want {
		t.Errorf("confirm = %q (isError %v), want %q", got, res.IsError, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].Message != ConfirmMessage("ship") {
		t.Errorf("elicitations = %+v, want one with message %q", seen, ConfirmMessage("ship"))
	}
	calls := rec.calls("tools/call")
	if len(calls) != 2 {
		t.Fatalf("sent %d tools/call, want 2", len(calls))
	}
	state, _ := decodeResponse(t, calls[0]).Result["requestState"].(string)
	if p := requestParams(t, calls[1]); state == "" || p["requestState"] != state {
		t.Errorf("retry requestState = %v, want %q echoed", p["requestState"], state)
	}
}

// testMCPGoMissingElicitationCapability checks that an mcp-go client with
// no elicitation handler (so no elicitation capability) gets -32021.
func testMCPGoMissingElicitationCapability(t *testing.T, serve serveFunc) {
	ctx := testContext(t)
	url := serve(t)
	rec := newRecorder(t)
	c, _ := connectMCPGo(ctx, t, url, "", rec)
	_, err := callTool(ctx, c, ToolConfirm, map[string]any{"action": "ship"})
	var missing mcp.MissingRequiredClientCapabilityError
	if !errors.As(err, &missing) {
		t.Fatalf("confirm without elicitation: error %v (%T), want MissingRequiredClientCapabilityError (-32021)", err, err)
	}
	calls := rec.calls("tools/call")
	if len(calls) != 1 {
		t.Fatalf("sent %d tools/call, want 1", len(calls))
	}
	r := decodeResponse(t, calls[0])
	if r.Error == nil || r.Error.Data["requiredCapabilities"] == nil {
		t.Errorf("error = %+v, want data.requiredCapabilities", r.Error)
	}
}

// testMCPGoUnsupportedVersion pins mcp-go to a future revision: the
// server's -32022 lists what it supports and the client renegotiates to
// 2026-07-28.
func testMCPGoUnsupportedVersion(t *testing.T, serve serveFunc) {
	const future = "2099-01-01"
	ctx := testContext(t)
	url := serve(t)
	rec := newRecorder(t)
	c, init := connectMCPGo(ctx, t, url, future, rec)
	if init.ProtocolVersion != v20260728 || c.ProtocolVersion() != v20260728 {
		t.Errorf("negotiated %q (client reports %q), want %s", init.ProtocolVersion, c.ProtocolVersion(), v20260728)
	}
	d := rec.calls("server/discover")
	if len(d) != 2 {
		t.Fatalf("sent %d server/discover, want 2", len(d))
	}
	r := decodeResponse(t, d[0])
	if d[0].Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32022 || r.Error.Data["requested"] != future {
		t.Errorf("first discover: status %d, error %+v; want 400, -32022 with data.requested %s", d[0].Status, r.Error, future)
	}
	if _, err := callTool(ctx, c, ToolEcho, map[string]any{"text": "after"}); err != nil {
		t.Errorf("CallTool after renegotiation: %v", err)
	}
}
