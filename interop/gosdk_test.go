package interop

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDKClientInfo is how the go-sdk client introduces itself.
var goSDKClientInfo = &mcp.Implementation{Name: "interop-go-sdk", Version: "1.8.0"}

// TestGoSDKMissingElicitationCapability runs testGoSDKMissingElicitationCapability on the fixture served over net/http.
func TestGoSDKMissingElicitationCapability(t *testing.T) {
	testGoSDKMissingElicitationCapability(t, startServer)
}

// TestGoSDKUnsupportedVersion runs testGoSDKUnsupportedVersion on the fixture served over net/http.
func TestGoSDKUnsupportedVersion(t *testing.T) {
	testGoSDKUnsupportedVersion(t, startServer)
}

// TestGoSDKLegacyNegotiatesDown runs testGoSDKLegacyNegotiatesDown on the fixture served over net/http.
func TestGoSDKLegacyNegotiatesDown(t *testing.T) {
	testGoSDKLegacyNegotiatesDown(t, startServer)
}

// connectGoSDK connects a go-sdk client to url. version "" leaves the
// client at its default (2026-07-28, server/discover first); anything
// else pins it through ClientSessionOptions.ProtocolVersion.
func connectGoSDK(ctx context.Context, t *testing.T, url, version string, opts *mcp.ClientOptions, rec *recorder) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(goSDKClientInfo, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: rec.client()}
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctx, tr, so)
	if err != nil {
		t.Fatalf("go-sdk Connect (version %q): %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// rpcError returns the JSON-RPC error the go-sdk surfaced in err, failing
// the test if there is none.
func rpcError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want a JSON-RPC error")
	}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("error %v (%T) carries no *jsonrpc.Error", err, err)
	}
	return werr
}

// textOf returns the text of the only content block of a go-sdk result.
func textOf(t *testing.T, content []mcp.Content) string {
	t.Helper()
	if len(content) != 1 {
		t.Fatalf("got %d content blocks, want 1: %+v", len(content), content)
	}
	tc, ok := content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content block is %T, want *mcp.TextContent", content[0])
	}
	return tc.Text
}

// testGoSDK runs the go-sdk v1.8.0 client through every feature of the
// fixture, at its default revision (2026-07-28) and pinned to each legacy
// revision. listens is whether serve's door holds a listen stream
// (docs/listen.md): at 2026-07-28 server/discover then advertises what
// one delivers, and otherwise nothing of it.
func testGoSDK(t *testing.T, serve serveFunc, listens bool) {
	for _, pin := range append([]string{""}, legacyVersions...) {
		name, want := pin, pin
		if pin == "" {
			name, want = "default", v20260728
		}
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			url := serve(t)
			rec := newRecorder(t)
			cs := connectGoSDK(ctx, t, url, pin, nil, rec)
			modern := want == v20260728

			t.Run("Connect", func(t *testing.T) {
				ir := cs.InitializeResult()
				if ir == nil {
					t.Fatal("no InitializeResult after Connect")
				}
				if ir.ProtocolVersion != want {
					t.Errorf("negotiated protocol version = %q, want %q", ir.ProtocolVersion, want)
				}
				if ir.ServerInfo == nil || ir.ServerInfo.Name != FixtureName || ir.ServerInfo.Version != FixtureVersion {
					t.Errorf("server info = %+v, want %s %s", ir.ServerInfo, FixtureName, FixtureVersion)
				}
				if ir.Instructions != FixtureInstructions {
					t.Errorf("instructions = %q, want %q", ir.Instructions, FixtureInstructions)
				}
				caps := ir.Capabilities
				if caps == nil || caps.Tools == nil || caps.Resources == nil || caps.Prompts == nil || caps.Completions == nil {
					t.Fatalf("capabilities = %+v, want tools, resources, prompts and completions", caps)
				}
				some := caps.Tools.ListChanged || caps.Resources.Subscribe || caps.Resources.ListChanged || caps.Prompts.ListChanged
				all := caps.Tools.ListChanged && caps.Resources.Subscribe && caps.Resources.ListChanged && caps.Prompts.ListChanged
				switch {
				case modern && listens && !all:
					t.Errorf("capabilities %+v: want every list's listChanged and resources.subscribe, which a listen stream delivers through this door", caps)
				case (!modern || !listens) && some:
					t.Errorf("capabilities %+v advertise listChanged or subscribe, which nothing delivers here (a legacy revision, or a door that holds no listen stream)", caps)
				}
				// The handshake on the wire: server/discover first and no
				// initialize at 2026-07-28; initialize at the pinned
				// version on a legacy revision.
				discover, initialize := rec.calls("server/discover"), rec.calls("initialize")
				if modern {
					if first := rec.exchanges()[0].rpcMethod(); first != "server/discover" {
						t.Errorf("first request was %q, want server/discover", first)
					}
					if len(discover) == 0 || len(initialize) != 0 {
						t.Errorf("sent %d server/discover and %d initialize, want discover and no initialize", len(discover), len(initialize))
					} else if got := discover[0].ReqHeader.Get("Mcp-Protocol-Version"); got != v20260728 {
						t.Errorf("server/discover carried Mcp-Protocol-Version %q, want %q", got, v20260728)
					}
				} else {
					if len(discover) != 0 || len(initialize) != 1 {
						t.Fatalf("sent %d server/discover and %d initialize, want 0 and 1", len(discover), len(initialize))
					}
					if got := requestParams(t, initialize[0])["protocolVersion"]; got != pin {
						t.Errorf("initialize asked for %v, want %q", got, pin)
					}
				}
				for _, e := range rec.exchanges() {
					if sid := e.RespHeader.Get("Mcp-Session-Id"); sid != "" {
						t.Errorf("%s %s: response carries Mcp-Session-Id %q; the server has no sessions", e.Method, e.rpcMethod(), sid)
					}
				}
			})

			t.Run("ListTools", func(t *testing.T) {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatalf("ListTools: %v", err)
				}
				var names []string
				tools := map[string]*mcp.Tool{}
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
				checkSchema(t, "confirm inputSchema", tools[ToolConfirm].InputSchema, map[string]string{"action": "string"})
				if tools[ToolConfirm].OutputSchema != nil {
					t.Errorf("confirm has an output schema %v, want none", tools[ToolConfirm].OutputSchema)
				}
				if a := tools[ToolEcho].Annotations; a == nil || !a.ReadOnlyHint {
					t.Errorf("echo annotations = %+v, want readOnlyHint", a)
				}
				if tools[ToolEcho].Title != "Echo" {
					t.Errorf("echo title = %q, want Echo", tools[ToolEcho].Title)
				}
			})

			t.Run("CallTool/echo", func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolEcho, Arguments: map[string]any{"text": "hello, interop"}})
				if err != nil {
					t.Fatalf("CallTool echo: %v", err)
				}
				if res.IsError {
					t.Fatalf("echo returned isError: %+v", res.Content)
				}
				var out EchoOut
				remarshal(t, res.StructuredContent, &out)
				if out.Text != "hello, interop" {
					t.Errorf("structuredContent.text = %q, want %q", out.Text, "hello, interop")
				}
				if got, want := textOf(t, res.Content), `{"text":"hello, interop"}`; got != want {
					t.Errorf("text = %s, want the serialized structured content %s", got, want)
				}
			})

			t.Run("CallTool/add", func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolAdd, Arguments: map[string]any{"a": 2, "b": 40}})
				if err != nil {
					t.Fatalf("CallTool add: %v", err)
				}
				var out AddOut
				remarshal(t, res.StructuredContent, &out)
				if res.IsError || out.Sum != 42 {
					t.Errorf("add(2, 40) = %+v (isError %v), want sum 42", res.StructuredContent, res.IsError)
				}
				if got := textOf(t, res.Content); got != `{"sum":42}` {
					t.Errorf("text = %s, want {\"sum\":42}", got)
				}
			})

			t.Run("CallTool/invalid-arguments", func(t *testing.T) {
				// Argument validation failures are tool results the model
				// can correct, not protocol errors.
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolAdd, Arguments: map[string]any{"a": "two", "b": 40}})
				if err != nil {
					t.Fatalf("CallTool add with a string: got error %v, want an isError result", err)
				}
				if !res.IsError || len(res.Content) == 0 {
					t.Errorf("add(\"two\", 40) = %+v, want an isError result with text", res)
				}
			})

			t.Run("CallTool/unknown-tool", func(t *testing.T) {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
				if werr := rpcError(t, err); werr.Code != jsonrpc.CodeInvalidParams {
					t.Errorf("unknown tool: code %d (%s), want %d", werr.Code, werr.Message, jsonrpc.CodeInvalidParams)
				}
				// The session survives the refusal.
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolEcho, Arguments: map[string]any{"text": "still here"}}); err != nil {
					t.Errorf("CallTool after a refusal: %v", err)
				}
			})

			if !modern {
				t.Run("CallTool/confirm-needs-2026", func(t *testing.T) {
					// A legacy client cannot answer input requests: the
					// tool's need for input is an isError result naming
					// the revision that can.
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolConfirm, Arguments: map[string]any{"action": "deploy"}})
					if err != nil {
						t.Fatalf("CallTool confirm: %v", err)
					}
					if !res.IsError || !strings.Contains(textOf(t, res.Content), v20260728) {
						t.Errorf("confirm on %s = %+v, want an isError result naming %s", want, res.Content, v20260728)
					}
				})
			}

			t.Run("ReadResource/static", func(t *testing.T) {
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ReadmeURI})
				if err != nil {
					t.Fatalf("ReadResource %s: %v", ReadmeURI, err)
				}
				if len(res.Contents) != 1 {
					t.Fatalf("got %d contents, want 1", len(res.Contents))
				}
				c := res.Contents[0]
				if c.URI != ReadmeURI || c.MIMEType != ReadmeMIMEType || c.Text != ReadmeText {
					t.Errorf("contents = {%q %q %q}, want {%q %q %q}", c.URI, c.MIMEType, c.Text, ReadmeURI, ReadmeMIMEType, ReadmeText)
				}
			})

			t.Run("ReadResource/template", func(t *testing.T) {
				tmpls, err := cs.ListResourceTemplates(ctx, nil)
				if err != nil {
					t.Fatalf("ListResourceTemplates: %v", err)
				}
				if len(tmpls.ResourceTemplates) != 1 || tmpls.ResourceTemplates[0].URITemplate != NoteTemplate {
					t.Errorf("templates = %+v, want one with %s", tmpls.ResourceTemplates, NoteTemplate)
				}
				const uri = "memo://notes/42"
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("ReadResource %s: %v", uri, err)
				}
				if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].Text != NoteText("42") {
					t.Errorf("contents = %+v, want %q at %s", res.Contents, NoteText("42"), uri)
				}
			})

			t.Run("ListResources", func(t *testing.T) {
				res, err := cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatalf("ListResources: %v", err)
				}
				if len(res.Resources) != 1 || res.Resources[0].URI != ReadmeURI || res.Resources[0].MIMEType != ReadmeMIMEType {
					t.Errorf("resources = %+v, want %s (%s)", res.Resources, ReadmeURI, ReadmeMIMEType)
				}
			})

			t.Run("ReadResource/not-found", func(t *testing.T) {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memo://nowhere"})
				werr := rpcError(t, err)
				if werr.Code != jsonrpc.CodeInvalidParams {
					t.Errorf("missing resource: code %d, want %d", werr.Code, jsonrpc.CodeInvalidParams)
				}
				var data struct {
					URI string `json:"uri"`
				}
				if json.Unmarshal(werr.Data, &data) != nil || data.URI != "memo://nowhere" {
					t.Errorf("missing resource: data = %s, want {\"uri\":\"memo://nowhere\"}", werr.Data)
				}
			})

			t.Run("GetPrompt", func(t *testing.T) {
				ps, err := cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatalf("ListPrompts: %v", err)
				}
				if len(ps.Prompts) != 1 || ps.Prompts[0].Name != PromptGreet || len(ps.Prompts[0].Arguments) != 1 ||
					ps.Prompts[0].Arguments[0].Name != PromptGreetArg || !ps.Prompts[0].Arguments[0].Required {
					t.Errorf("prompts = %+v, want greet with a required name argument", ps.Prompts)
				}
				res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: PromptGreet, Arguments: map[string]string{PromptGreetArg: "Ada"}})
				if err != nil {
					t.Fatalf("GetPrompt: %v", err)
				}
				if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
					t.Fatalf("messages = %+v, want one user message", res.Messages)
				}
				if got := textOf(t, []mcp.Content{res.Messages[0].Content}); got != GreetText("Ada") {
					t.Errorf("prompt text = %q, want %q", got, GreetText("Ada"))
				}
			})

			t.Run("GetPrompt/missing-argument", func(t *testing.T) {
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: PromptGreet})
				if werr := rpcError(t, err); werr.Code != jsonrpc.CodeInvalidParams {
					t.Errorf("prompt without its required argument: code %d, want %d", werr.Code, jsonrpc.CodeInvalidParams)
				}
			})

			t.Run("Complete", func(t *testing.T) {
				res, err := cs.Complete(ctx, &mcp.CompleteParams{
					Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: PromptGreet},
					Argument: mcp.CompleteParamsArgument{Name: PromptGreetArg, Value: "a"},
				})
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if want := []string{"Ada", "Alan"}; !slices.Equal(res.Completion.Values, want) {
					t.Errorf("completions of %q = %v, want %v", "a", res.Completion.Values, want)
				}
				res, err = cs.Complete(ctx, &mcp.CompleteParams{
					Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: NoteTemplate},
					Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"},
				})
				if err != nil {
					t.Fatalf("Complete (resource): %v", err)
				}
				if want := []string{"42"}; !slices.Equal(res.Completion.Values, want) {
					t.Errorf("id completions of %q = %v, want %v", "4", res.Completion.Values, want)
				}
			})

			if modern {
				t.Run("wire", func(t *testing.T) {
					// Every 2026-07-28 request carries the version in
					// _meta and the header, and the standard headers.
					for _, e := range rec.exchanges() {
						if e.Method != http.MethodPost {
							t.Errorf("client sent %s; 2026-07-28 is POST only", e.Method)
							continue
						}
						m := e.rpcMethod()
						meta, _ := requestParams(t, e)["_meta"].(map[string]any)
						if meta[mcp.MetaKeyProtocolVersion] != v20260728 || e.ReqHeader.Get("Mcp-Protocol-Version") != v20260728 {
							t.Errorf("%s: _meta version %v, header %q, want %s in both", m, meta[mcp.MetaKeyProtocolVersion], e.ReqHeader.Get("Mcp-Protocol-Version"), v20260728)
						}
						if e.ReqHeader.Get("Mcp-Method") != m {
							t.Errorf("%s: Mcp-Method = %q", m, e.ReqHeader.Get("Mcp-Method"))
						}
						if e.Status == http.StatusOK {
							r := decodeResponse(t, e)
							if r.Result["resultType"] != "complete" {
								t.Errorf("%s: resultType = %v, want complete", m, r.Result["resultType"])
							}
							rm, _ := r.Result["_meta"].(map[string]any)
							si, _ := rm[mcp.MetaKeyServerInfo].(map[string]any)
							if si["name"] != FixtureName {
								t.Errorf("%s: result _meta serverInfo = %v, want %s", m, rm[mcp.MetaKeyServerInfo], FixtureName)
							}
						}
					}
				})
			}
		})
	}
}

// testGoSDKElicitation drives the confirm tool's two rounds through the
// go-sdk client's automatic multi-round-trip handling at 2026-07-28: the
// client answers the embedded elicitation with its ElicitationHandler and
// retries with inputResponses and the echoed requestState.
func testGoSDKElicitation(t *testing.T, serve serveFunc) {
	cases := []struct {
		name   string
		answer *mcp.ElicitResult
		want   string
	}{
		{"accept", &mcp.ElicitResult{Action: "accept", Content: map[string]any{ConfirmField: "Ada"}}, ConfirmAccepted("deploy", "Ada")},
		{"decline", &mcp.ElicitResult{Action: "decline"}, ConfirmRefused("deploy", "decline")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			url := serve(t)
			rec := newRecorder(t)
			var (
				mu   sync.Mutex
				seen []*mcp.ElicitParams
			)
			opts := &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					seen = append(seen, req.Params)
					mu.Unlock()
					return tc.answer, nil
				},
			}
			cs := connectGoSDK(ctx, t, url, "", opts, rec)
			if v := cs.InitializeResult().ProtocolVersion; v != v20260728 {
				t.Fatalf("negotiated %q, want %s", v, v20260728)
			}

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolConfirm, Arguments: map[string]any{"action": "deploy"}})
			if err != nil {
				t.Fatalf("CallTool confirm: %v", err)
			}
			if res.IsError {
				t.Fatalf("confirm returned isError: %+v", res.Content)
			}
			if got := textOf(t, res.Content); got != tc.want {
				t.Errorf("confirm text = %q, want %q", got, tc.want)
			}

			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 {
				t.Fatalf("elicitation handler ran %d times, want 1", len(seen))
			}
			if p := seen[0]; p.Message != ConfirmMessage("deploy") || (p.Mode != "" && p.Mode != "form") {
				t.Errorf("elicitation = mode %q message %q, want a form with %q", p.Mode, p.Message, ConfirmMessage("deploy"))
			} else {
				checkSchema(t, "requestedSchema", p.RequestedSchema, map[string]string{ConfirmField: "string"})
			}

			// On the wire: an input_required result with a requestState,
			// then a retry with a new id, the same arguments, the answer
			// under the same key and the state byte for byte.
			calls := rec.calls("tools/call")
			if len(calls) != 2 {
				t.Fatalf("sent %d tools/call requests, want 2", len(calls))
			}
			first := decodeResponse(t, calls[0])
			if first.Result["resultType"] != "input_required" {
				t.Fatalf("first round resultType = %v, want input_required", first.Result["resultType"])
			}
			state, _ := first.Result["requestState"].(string)
			if state == "" {
				t.Fatal("first round carries no requestState")
			}
			reqs := asMap(t, first.Result["inputRequests"], "inputRequests")
			if r := asMap(t, reqs[ConfirmKey], "inputRequests."+ConfirmKey); r["method"] != "elicitation/create" {
				t.Errorf("input request method = %v, want elicitation/create", r["method"])
			}
			retry := requestParams(t, calls[1])
			if retry["requestState"] != state {
				t.Errorf("retry requestState = %v, want the state sent, %q", retry["requestState"], state)
			}
			resp := asMap(t, asMap(t, retry["inputResponses"], "inputResponses")[ConfirmKey], "inputResponses."+ConfirmKey)
			if resp["action"] != tc.answer.Action {
				t.Errorf("retry answer action = %v, want %s", resp["action"], tc.answer.Action)
			}
			if args := asMap(t, retry["arguments"], "arguments"); args["action"] != "deploy" {
				t.Errorf("retry arguments = %v, want the original", args)
			}
			if id1, id2 := requestID(t, calls[0]), requestID(t, calls[1]); id1 == "" || id1 == id2 {
				t.Errorf("request ids %s then %s, want a new id on the retry", id1, id2)
			}
			if final := decodeResponse(t, calls[1]); final.Result["resultType"] != "complete" {
				t.Errorf("final resultType = %v, want complete", final.Result["resultType"])
			}
		})
	}
}

// testGoSDKMissingElicitationCapability checks that a go-sdk client that
// declares no elicitation capability gets -32021 naming it, rather than
// an input request it could not answer.
func testGoSDKMissingElicitationCapability(t *testing.T, serve serveFunc) {
	ctx := testContext(t)
	url := serve(t)
	rec := newRecorder(t)
	cs := connectGoSDK(ctx, t, url, "", nil, rec)

	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolConfirm, Arguments: map[string]any{"action": "deploy"}})
	werr := rpcError(t, err)
	if werr.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Fatalf("code = %d (%s), want %d", werr.Code, werr.Message, mcp.CodeMissingRequiredClientCapabilities)
	}
	var data struct {
		Required map[string]json.RawMessage `json:"requiredCapabilities"`
	}
	if err := json.Unmarshal(werr.Data, &data); err != nil || data.Required["elicitation"] == nil {
		t.Errorf("data = %s, want requiredCapabilities.elicitation", werr.Data)
	}
	calls := rec.calls("tools/call")
	if len(calls) != 1 || calls[0].Status != http.StatusBadRequest {
		t.Errorf("want one tools/call answered 400, got %d calls", len(calls))
	}
}

// testGoSDKUnsupportedVersion exercises -32022 twice: a client that
// prefers a revision the server does not serve renegotiates from the
// error's data.supported, and a request forced to an unsupported version
// surfaces the error with its data.
func testGoSDKUnsupportedVersion(t *testing.T, serve serveFunc) {
	const future = "2099-01-01"

	t.Run("renegotiate", func(t *testing.T) {
		ctx := testContext(t)
		url := serve(t)
		rec := newRecorder(t)
		cs := connectGoSDK(ctx, t, url, future, nil, rec)
		if v := cs.InitializeResult().ProtocolVersion; v != v20260728 {
			t.Errorf("negotiated %q, want %s", v, v20260728)
		}
		d := rec.calls("server/discover")
		if len(d) != 2 {
			t.Fatalf("sent %d server/discover, want 2 (refused, then renegotiated)", len(d))
		}
		if d[0].Status != http.StatusBadRequest {
			t.Errorf("first discover: status %d, want 400", d[0].Status)
		}
		r := decodeResponse(t, d[0])
		if r.Error == nil || r.Error.Code != mcp.CodeUnsupportedProtocolVersion {
			t.Fatalf("first discover: %+v, want error %d", r.Error, mcp.CodeUnsupportedProtocolVersion)
		}
		if r.Error.Data["requested"] != future {
			t.Errorf("data.requested = %v, want %s", r.Error.Data["requested"], future)
		}
		sup, _ := r.Error.Data["supported"].([]any)
		if !slices.Contains(sup, any(v20260728)) {
			t.Errorf("data.supported = %v, want it to list %s", sup, v20260728)
		}
		if got := d[1].ReqHeader.Get("Mcp-Protocol-Version"); got != v20260728 {
			t.Errorf("second discover at %q, want %s", got, v20260728)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Errorf("ListTools after renegotiation: %v", err)
		}
	})

	t.Run("forced", func(t *testing.T) {
		ctx := testContext(t)
		url := serve(t)
		rec := newRecorder(t)
		cs := connectGoSDK(ctx, t, url, "", nil, rec)
		// The go-sdk keeps a _meta protocolVersion the caller set and
		// mirrors it into the header.
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Meta:      mcp.Meta{mcp.MetaKeyProtocolVersion: future},
			Name:      ToolEcho,
			Arguments: map[string]any{"text": "x"},
		})
		werr := rpcError(t, err)
		if werr.Code != mcp.CodeUnsupportedProtocolVersion {
			t.Fatalf("code = %d (%s), want %d", werr.Code, werr.Message, mcp.CodeUnsupportedProtocolVersion)
		}
		var data mcp.UnsupportedProtocolVersionData
		if err := json.Unmarshal(werr.Data, &data); err != nil || data.Requested != future || !slices.Contains(data.Supported, v20260728) {
			t.Errorf("data = %s, want requested %s and supported listing %s", werr.Data, future, v20260728)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolEcho, Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Errorf("CallTool after the refusal: %v", err)
		}
	})
}

// testGoSDKLegacyNegotiatesDown pins the go-sdk client to 2024-11-05, a
// revision the server does not serve: initialize answers with the latest
// legacy revision, never 2026-07-28, and the session works at it.
func testGoSDKLegacyNegotiatesDown(t *testing.T, serve serveFunc) {
	ctx := testContext(t)
	url := serve(t)
	rec := newRecorder(t)
	cs := connectGoSDK(ctx, t, url, "2024-11-05", nil, rec)
	if v := cs.InitializeResult().ProtocolVersion; v != v20251125 {
		t.Errorf("negotiated %q, want %s", v, v20251125)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolAdd, Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil {
		t.Fatalf("CallTool add: %v", err)
	}
	var out AddOut
	remarshal(t, res.StructuredContent, &out)
	if out.Sum != 3 {
		t.Errorf("add(1, 2) = %+v, want sum 3", res.StructuredContent)
	}
	for _, e := range rec.calls("tools/call") {
		if got := e.ReqHeader.Get("Mcp-Protocol-Version"); got != v20251125 {
			t.Errorf("tools/call carried Mcp-Protocol-Version %q, want %s", got, v20251125)
		}
	}
}
