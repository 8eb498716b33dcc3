//go:build unix && !integration

package interop

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/serverless-mcp/mcp-lambda/internal/clientconfig"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/oauthmock"
)

// The client matrix: which real client gets which feature through which
// door. Each verified cell is a test run by TestClientMatrix, which prints
// `client-matrix: <client> <feature> <door> ok` when it passes; each gap
// says what a user does instead. docs/clients.md is generated from this
// table (TestClientsDoc; make regen), so the page claims exactly what the
// tests verify.

var matrixDoors = []string{doorLocal, doorHTTPAPI, doorStreaming}

// matrixCell is one client and feature, through every door, verified by
// check or (check nil) a gap.
type matrixCell struct {
	client, feature string
	// check verifies the cell through a door.
	check func(t *testing.T, door string)
	// gap, for a cell not verified: what a user of the client does.
	gap string
	// doorGaps, for a verified cell, are the doors it is not verified
	// through, and why.
	doorGaps map[string]string
	// integration, for a verified cell, are the doors the integration
	// build verifies it through (they need DynamoDB Local), not
	// TestClientMatrix.
	integration []string
}

// bufferedNoProgress is why no progress reaches a client through the
// buffered door.
const bufferedNoProgress = "the buffered HTTP API door answers a request whole, so progress notifications cannot arrive before the result: use the streaming door (or local)"

// fixtureDoor serves the interop fixture through door.
func fixtureDoor(door string, env ...string) serveFunc {
	switch door {
	case doorLocal:
		if len(env) > 0 {
			return serveKeyed
		}
		return startServer
	case doorHTTPAPI:
		return func(t *testing.T) string { return startLambdaWith(t, env...) }
	}
	return func(t *testing.T) string { return startStreamWith(t, env...) }
}

// authDoor is the authorization rig's target for door: the note book on
// the production composition, protected by a real authorization server.
func authDoor(door string) authTarget {
	switch door {
	case doorLocal:
		return authTarget{"Local", reserveLocal}
	case doorHTTPAPI:
		return authTarget{"Lambda", reserveLambda}
	}
	return authTarget{"StreamingDoor", reserveStreamREST}
}

// notebookDoor starts the note book (functions/fixture, the production
// composition) anonymous through door: the Node clients' cells, and the
// features the interop fixture has no tool for (progress, tasks).
//
// Through the streaming door the function serves no listen streams: the
// rig runs it on one instance, which a listen stream would hold for its
// whole length, and a client that listens as it connects (the Inspector,
// Claude Code) would wait behind it for its next call, where Lambda gives
// each invocation an instance. The listen cells through that door run on
// a pool of instances sharing the event log
// (TestClientMatrixListenStreaming).
func notebookDoor(t *testing.T, door string) *authEndpoint {
	env := []string{"MCP_ALLOW_ANONYMOUS=true"}
	var ep *authEndpoint
	switch door {
	case doorLocal:
		ep = reserveLocal(t)
	case doorHTTPAPI:
		ep = reserveLambda(t)
	default:
		ep = reserveStreamNoAuthorizer(t)
		env = append(env, "MCP_LISTEN=off")
	}
	ep.Start(env...)
	return ep
}

// nodeCell is a cell of a Node client: tools/matrix.mjs runs it against
// the note book through the door.
func nodeCell(client, feature string) func(t *testing.T, door string) {
	return func(t *testing.T, door string) {
		ep := notebookDoor(t, door)
		runNode(t, ep, "matrix.mjs", client, feature, ep.URL)
	}
}

// inspectorCell is the Inspector CLI listing the note book's tools and
// calling one, in the protocol era given ("" is its default).
func inspectorCell(era string) func(t *testing.T, door string) {
	return func(t *testing.T, door string) {
		ep := notebookDoor(t, door)
		args := []string{filepath.Join("node_modules", ".bin", "mcp-inspector"), "--cli", ep.URL, "--transport", "http"}
		if era != "" {
			args = append(args, "--protocol-era", era)
		}
		if out := runNode(t, ep, append(args, "--method", "tools/list")...); !strings.Contains(out, `"notes_add"`) {
			t.Fatalf("tools/list through the Inspector CLI lists no notes_add:\n%s", out)
		}
		if out := runNode(t, ep, append(args, "--method", "tools/call", "--tool-name", "notes_add", "--tool-arg", "text=from the inspector")...); !strings.Contains(out, `"id"`) || strings.Contains(out, `"isError": true`) {
			t.Fatalf("tools/call notes_add through the Inspector CLI:\n%s", out)
		}
	}
}

// runNode runs a script (or a tool's bin) of tools/ on the Node 22 it
// pins, trusting ep's TLS front, and fails the test unless it succeeds.
func runNode(t *testing.T, ep *authEndpoint, args ...string) string {
	t.Helper()
	return runNodeScript(t, ep.CAFile, args...)
}

// listenCheck is client's listen cell (matrix_listen_test.go) through a
// door: the note book, anonymous.
func listenCheck(client string) func(t *testing.T, door string) {
	cell := listenCellOf(client)
	return func(t *testing.T, door string) {
		ep := notebookDoor(t, door)
		cell.check(t, listenTarget{URL: ep.URL, Client: &http.Client{Transport: ep.Client.Transport}, CAFile: ep.CAFile})
	}
}

// listenDoorGaps are the listen cells' doors not verified here: the
// buffered door's gap, and the streaming door, which the integration
// build verifies (TestClientMatrixListenStreaming: its instances share
// an event log in DynamoDB Local).
var (
	listenDoorGaps     = map[string]string{doorHTTPAPI: bufferedNoListen}
	listenIntegrations = []string{doorStreaming}
)

// goSDKProgress: go-sdk's progress notifications of notes_digest reach
// its handler, through the door.
func goSDKProgress(t *testing.T, door string) {
	ep := notebookDoor(t, door)
	ctx := testContext(t)
	var mu sync.Mutex
	reports := 0
	c := mcp.NewClient(goSDKClientInfo, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		reports++
		mu.Unlock()
	}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: ep.Client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": "to count"}}); err != nil || r.IsError {
		t.Fatalf("notes_add: %v %+v", err, r)
	}
	params := &mcp.CallToolParams{Name: "notes_digest", Arguments: map[string]any{"pauseMs": 50}}
	params.SetProgressToken("p-1")
	if r, err := cs.CallTool(ctx, params); err != nil || r.IsError {
		t.Fatalf("notes_digest: %v %+v", err, r)
	}
	mu.Lock()
	defer mu.Unlock()
	if reports < 1 {
		t.Errorf("%d progress notifications reached go-sdk's handler", reports)
	}
}

// connectMCPGoTo connects an mcp-go client to ep through hc.
func connectMCPGoTo(ctx context.Context, t *testing.T, ep *authEndpoint, hc *http.Client) *mcpclient.Client {
	t.Helper()
	tr, err := mcptransport.NewStreamableHTTP(ep.URL, mcptransport.WithHTTPBasicClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpGoClientInfo}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// mcpGoProgress: mcp-go's progress notifications of notes_digest reach
// its notification handler, through the door.
func mcpGoProgress(t *testing.T, door string) {
	ep := notebookDoor(t, door)
	ctx := testContext(t)
	c := connectMCPGoTo(ctx, t, ep, ep.Client)
	var mu sync.Mutex
	reports := 0
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			reports++
			mu.Unlock()
		}
	})
	if r, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": "to count"}}}); err != nil || r.IsError {
		t.Fatalf("notes_add: %v %+v", err, r)
	}
	if r, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "notes_digest", Arguments: map[string]any{"pauseMs": 50},
		Meta: &mcpgo.Meta{ProgressToken: "p-1"}}}); err != nil || r.IsError {
		t.Fatalf("notes_digest: %v %+v", err, r)
	}
	mu.Lock()
	defer mu.Unlock()
	if reports < 1 {
		t.Errorf("%d progress notifications reached mcp-go's handler", reports)
	}
}

// mcpGoIdempotency: an mcp-go call whose key its HTTP transport sets
// runs once; the retry with the same key is the replay, marked so.
func mcpGoIdempotency(t *testing.T, door string) {
	ep := notebookDoor(t, door)
	ctx := testContext(t)
	base := ep.Client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{Transport: keyHeader{[]string{fmt.Sprint("mcp-go-", door, "-", os.Getpid())}, base}, Timeout: testTimeout}
	c := connectMCPGoTo(ctx, t, ep, hc)
	call := func() (string, bool) {
		r, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": "once"}}})
		if err != nil || r.IsError {
			t.Fatalf("notes_add: %v %+v", err, r)
		}
		sc, _ := r.StructuredContent.(map[string]any)
		id, _ := sc["id"].(string)
		replay := r.Meta != nil && r.Meta.AdditionalFields["io.github.serverless-mcp/replay"] == true
		return id, replay
	}
	first, firstReplay := call()
	again, replay := call()
	if first == "" || firstReplay || again != first || !replay {
		t.Errorf("first %q (replay %v), retry %q (replay %v): want the same note, the retry marked as a replay", first, firstReplay, again, replay)
	}
}

// mcpGoOAuth: mcp-go's OAuth client goes from a 401 to a notes_add
// through the door, against a provider that registers clients (RFC
// 7591): mcp-go discovers the metadata, registers, and hands the
// application the authorization URL (the test's browser approves at the
// provider), then exchanges the code with PKCE.
func mcpGoOAuth(t *testing.T, door string) {
	ctx := authContext(t)
	as := oauthmock.NewWith(t, oauthmock.Options{Registration: true})
	ep := authDoor(door).reserve(t)
	ep.Start(ep.AuthEnv(as.Issuer)...)
	browser := &http.Client{Transport: ep.Client.Transport, Timeout: testTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	authorize := func(h *mcptransport.OAuthHandler) {
		t.Helper()
		if h.GetClientID() == "" {
			if err := h.RegisterClient(ctx, "mcp-go matrix"); err != nil {
				t.Fatalf("mcp-go RegisterClient: %v", err)
			}
		}
		verifier, err := mcpclient.GenerateCodeVerifier()
		if err != nil {
			t.Fatal(err)
		}
		state, err := mcpclient.GenerateState()
		if err != nil {
			t.Fatal(err)
		}
		authURL, err := h.GetAuthorizationURL(ctx, state, mcpclient.GenerateCodeChallenge(verifier))
		if err != nil {
			t.Fatalf("mcp-go GetAuthorizationURL: %v", err)
		}
		resp, err := browser.Get(authURL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || loc.Query().Get("code") == "" {
			t.Fatalf("the provider answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if err := h.ProcessAuthorizationResponse(ctx, loc.Query().Get("code"), loc.Query().Get("state"), verifier); err != nil {
			t.Fatalf("mcp-go ProcessAuthorizationResponse: %v", err)
		}
	}
	// mcp-go asks for the scopes configured, not the metadata's.
	c, err := mcpclient.NewOAuthStreamableHttpClient(ep.URL, mcptransport.OAuthConfig{RedirectURI: journeyRedirect, PKCEEnabled: true,
		Scopes: []string{scopeRead, scopeWrite}, TokenStore: mcptransport.NewMemoryTokenStore(), HTTPClient: ep.Client}, mcptransport.WithHTTPBasicClient(ep.Client))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	initialize := func() error {
		_, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpGoClientInfo}})
		return err
	}
	err = initialize()
	if !mcpclient.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("mcp-go Initialize without a token: %v, want its authorization-required error", err)
	}
	authorize(mcpclient.GetOAuthHandler(err))
	if err := initialize(); err != nil {
		t.Fatalf("mcp-go Initialize with its token: %v", err)
	}
	call := func() (*mcpgo.CallToolResult, error) {
		return c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": "in through mcp-go"}}})
	}
	r, err := call()
	if err != nil || r.IsError {
		t.Fatalf("notes_add: %v %+v", err, r)
	}
}

var clientMatrix = []matrixCell{
	{client: "go-sdk", feature: "tools", check: func(t *testing.T, door string) { testGoSDK(t, fixtureDoor(door), door != doorHTTPAPI) }},
	{client: "go-sdk", feature: "input-required", check: func(t *testing.T, door string) { testGoSDKElicitation(t, fixtureDoor(door)) }},
	{client: "go-sdk", feature: "idempotent-retries", check: func(t *testing.T, door string) {
		testGoSDKIdempotency(t, fixtureDoor(door, "MCP_FIXTURE=keyed"), door != doorLocal)
	}},
	{client: "go-sdk", feature: "oauth-discovery", check: func(t *testing.T, door string) {
		testAuthDiscovery(t, authDoor(door), nil, false, scopeRead+" "+scopeWrite)
	}},
	{client: "go-sdk", feature: "oauth-step-up", check: func(t *testing.T, door string) {
		testAuthDiscovery(t, authDoor(door), []string{"MCP_AUTH_SCOPES_SUPPORTED=" + scopeRead}, true, scopeRead)
	}},
	{client: "go-sdk", feature: "progress", check: goSDKProgress, doorGaps: map[string]string{doorHTTPAPI: bufferedNoProgress}},
	{client: "go-sdk", feature: "listen", check: listenCheck("go-sdk"), doorGaps: listenDoorGaps, integration: listenIntegrations},
	{client: "go-sdk", feature: "tasks", gap: "go-sdk v1.8.0 does not declare the tasks extension, so a tool that requires a task is refused -32021 (missing capability): " +
		"give the tool TaskSupportOptional (it then runs in the request), or call it with the extension's own client"},
	{client: "mcp-go", feature: "tools", check: func(t *testing.T, door string) { testMCPGo(t, fixtureDoor(door)) }},
	{client: "mcp-go", feature: "input-required", check: func(t *testing.T, door string) { testMCPGoElicitation(t, fixtureDoor(door)) }},
	{client: "mcp-go", feature: "idempotent-retries", check: mcpGoIdempotency},
	{client: "mcp-go", feature: "tasks", gap: "mcp-go v1.2.1's client does not declare the tasks extension either: as for go-sdk"},
	{client: "mcp-go", feature: "progress", check: mcpGoProgress, doorGaps: map[string]string{doorHTTPAPI: bufferedNoProgress}},
	{client: "mcp-go", feature: "listen", check: listenCheck("mcp-go"), doorGaps: listenDoorGaps, integration: listenIntegrations},
	{client: "ts-v2-pinned", feature: "tools", check: nodeCell("ts-v2-pinned", "tools")},
	{client: "ts-v2-pinned", feature: "input-required", check: nodeCell("ts-v2-pinned", "input-required")},
	{client: "ts-v2-pinned", feature: "progress", check: nodeCell("ts-v2-pinned", "progress"), doorGaps: map[string]string{doorHTTPAPI: bufferedNoProgress}},
	{client: "ts-v2-pinned", feature: "idempotent-retries", check: nodeCell("ts-v2-pinned", "idempotent-retries")},
	{client: "ts-v2-pinned", feature: "listen", check: listenCheck("ts-v2-pinned"), doorGaps: listenDoorGaps, integration: listenIntegrations},
	{client: "ts-v2-pinned", feature: "oauth-discovery", check: func(t *testing.T, door string) {
		tsOAuthWalk(authContext(t), t, newAuthRig(t, authDoor(door)), false)
	}},
	{client: "ts-v2-pinned", feature: "oauth-step-up", check: func(t *testing.T, door string) {
		// The metadata lists only notes:read, and notes_add needs
		// notes:write: the walk ends well only by stepping up.
		tsOAuthWalk(authContext(t), t, newAuthRig(t, authDoor(door), "MCP_AUTH_SCOPES_SUPPORTED="+scopeRead), true)
	}},
	{client: "ts-v2-pinned", feature: "tasks", gap: "@modelcontextprotocol/client 2.4.0 does not declare the tasks extension: a tool that requires a task is refused -32021; " +
		"call it with the extension's client (ext-tasks), or give it TaskSupportOptional"},
	{client: "ts-v2-default", feature: "tools", check: nodeCell("ts-v2-default", "tools")},
	{client: "ts-v2-default", feature: "input-required", gap: "its default negotiation settles on a legacy revision, where an input-required tool cannot ask: " +
		"pin versionNegotiation to 2026-07-28 (ts-v2-pinned)"},
	{client: "ts-v2-default", feature: "progress", check: nodeCell("ts-v2-default", "progress"), doorGaps: map[string]string{doorHTTPAPI: bufferedNoProgress}},
	{client: "ts-v2-default", feature: "idempotent-retries", check: nodeCell("ts-v2-default", "idempotent-retries")},
	{client: "ts-v2-default", feature: "tasks", gap: "as ts-v2-pinned: the client does not declare the tasks extension"},
	{client: "ts-v2-default", feature: "listen", gap: "its default negotiation settles on 2025-11-25, where listen() throws MethodNotSupportedByProtocolVersion and the initialize " +
		"result advertises no subscribe or listChanged; subscribeResource is answered, but its updates would travel on the legacy GET stream this " +
		"endpoint does not offer, so none arrives: pin versionNegotiation to 2026-07-28 and call listen() (ts-v2-pinned)"},
	{client: "ts-v2-default", feature: "oauth-discovery", check: func(t *testing.T, door string) {
		tsOAuthWalk(authContext(t), t, newAuthRig(t, authDoor(door)), false, "default")
	}},
	{client: "ts-v2-default", feature: "oauth-step-up", check: func(t *testing.T, door string) {
		tsOAuthWalk(authContext(t), t, newAuthRig(t, authDoor(door), "MCP_AUTH_SCOPES_SUPPORTED="+scopeRead), true, "default")
	}, doorGaps: map[string]string{doorStreaming: "a request of a legacy revision carries no Mcp-Method or Mcp-Name header, so the streaming door's " +
		"authorizer cannot tell the tool and its scopes, and the function's own 403 challenge does not survive a REST API (it is renamed): " +
		"leave AuthScopesSupported listing every scope (then the first token has them), or pin versionNegotiation to 2026-07-28"}},
	{client: "mcp-go", feature: "oauth-discovery", check: mcpGoOAuth},
	{client: "mcp-go", feature: "oauth-step-up", gap: "mcp-go v1.2.1 asks for the scopes in its OAuthConfig.Scopes, not the metadata's, and surfaces a 403 " +
		"as the error \"Insufficient scope\" without authorizing again: configure Scopes with every scope the tools need"},
	{client: matrixTasksLambda.client, feature: matrixTasksLambda.feature, check: nodeCell("ext-tasks", "tasks"),
		integration: matrixTasksLambda.doors},
	{client: "inspector-modern", feature: "tools", check: inspectorCell("modern")},
	{client: "inspector-default", feature: "tools", check: inspectorCell("")},
	{client: "inspector-default", feature: "input-required", gap: "its default era is the legacy protocol: run it with --protocol-era modern"},
	{client: "inspector-modern", feature: "input-required, progress, idempotent-retries, tasks, oauth-discovery, oauth-step-up, listen",
		gap: "not in the matrix: the Inspector CLI lists and calls, one request per run; use the Inspector's UI or an SDK client for the rest"},
}

// TestClientMatrix runs every verified cell through every door.
func TestClientMatrix(t *testing.T) {
	for _, c := range clientMatrix {
		if c.check == nil {
			continue
		}
		for _, door := range matrixDoors {
			if _, gap := c.doorGaps[door]; gap || slices.Contains(c.integration, door) {
				continue
			}
			t.Run(c.client+"/"+c.feature+"/"+door, func(t *testing.T) {
				c.check(t, door)
				if !t.Failed() {
					fmt.Printf("client-matrix: %s %s %s ok\n", c.client, c.feature, door)
				}
			})
		}
	}
}

var updateDoc = flag.Bool("update", false, "rewrite docs/clients.md from the client matrix")

// TestClientsDoc: docs/clients.md is the client matrix, rendered; with
// -update (make regen) it is rewritten.
func TestClientsDoc(t *testing.T) {
	const path = "../docs/clients.md"
	got := renderClientsDoc()
	if *updateDoc {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("docs/clients.md is not the client matrix (%v): regenerate it with make regen, and review the diff", err)
	}
}

// renderClientsDoc renders the matrix as docs/clients.md.
func renderClientsDoc() []byte {
	var b strings.Builder
	b.WriteString(`# Clients

Which real MCP client gets which feature through which door. Generated
from the client matrix (interop/matrix_test.go) by ` + "`make regen`" + `; every
"ok" is a test that ` + "`make test`" + ` runs (TestClientMatrix, and for the cells
that need DynamoDB Local the integration build's TestClientMatrixTasksLambda
and TestClientMatrixListenStreaming), printing
` + "`client-matrix: <client> <feature> <door> ok`" + ` when it passes.

Doors: ` + "`local`" + ` the endpoint as a local HTTP server; ` + "`http-api`" + ` the
template's buffered HTTP API door (the function under the Lambda runtime
emulator, behind a front that speaks API Gateway's events); ` + "`streaming`" + ` its
REST API streaming door (Lambda's response streaming, held to AWS's
contract by the Runtime API stand-in).

Clients: go-sdk v1.8.0 (github.com/modelcontextprotocol/go-sdk) and
mcp-go v1.2.1 (github.com/mark3labs/mcp-go), at 2026-07-28 (their
` + "`tools`" + ` cells also run each legacy revision they can pin);
` + "`ts-v2-pinned`" + ` is @modelcontextprotocol/client 2.4.0 pinned to 2026-07-28
(` + "`versionNegotiation: { mode: { pin: '2026-07-28' } }`" + `), ` + "`ts-v2-default`" + ` the
same with its default negotiation; ` + "`inspector-modern`" + ` is the Inspector CLI
2.12.0 with ` + "`--protocol-era modern`" + `, ` + "`inspector-default`" + ` in its default era;
` + "`ext-tasks`" + ` is the tasks extension's own client
(@modelcontextprotocol/ext-tasks 0.2.2). The Go clients' tools,
input-required and idempotency cells run against the interop fixture;
the others against the note book on the production composition
(functions/fixture).
Features: ` + "`tools`" + ` lists and calls tools, with structured results and
errors; ` + "`input-required`" + ` answers an input-required round (elicitation)
and retries with the sealed request state; ` + "`idempotent-retries`" + ` sends a
key (the Idempotency-Key header, set in the client's HTTP transport:
no client has a setting for it) and gets the replay, the in-progress,
conflict and invalid-key refusals intact; ` + "`oauth-discovery`" + ` goes from a
401 to a token (client credentials) through the protected-resource
metadata; ` + "`oauth-step-up`" + ` also answers a 403 insufficient_scope by asking
for more; ` + "`progress`" + ` gets notes_digest's progress notifications before its
result; ` + "`tasks`" + ` runs notes_export as a task to its result, polling
tasks/get; ` + "`listen`" + ` listens over subscriptions/listen to a note
(` + "`notes://note/<id>`" + `) and to the tool list (go-sdk and ts-v2-pinned open
the tool list's stream themselves when they connect) and gets
notifications/resources/updated when a second connection deletes the
note, answering its confirmation; through the streaming door the function
runs on several instances, so the delete runs on another instance than
the stream and reaches it through the event log (docs/listen.md). The
OAuth cells run against a real authorization server
(oauth2-mock-server); docs/auth.md and docs/auth-providers.md have the
providers, and ` + "`make journeys`" + ` the self-registering client's journeys.

| client | feature | ` + strings.Join(matrixDoors, " | ") + ` |
|---|---|` + strings.Repeat("---|", len(matrixDoors)) + `
`)
	for _, c := range clientMatrix {
		if c.check == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s |", c.client, c.feature)
		for _, door := range matrixDoors {
			if _, gap := c.doorGaps[door]; gap {
				b.WriteString(" gap |")
			} else {
				b.WriteString(" ok |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(`
## Gaps, and what to do

| client | feature | what a user does |
|---|---|---|
`)
	for _, c := range clientMatrix {
		if c.check != nil {
			for _, door := range matrixDoors {
				if why, gap := c.doorGaps[door]; gap {
					fmt.Fprintf(&b, "| %s | %s (%s) | %s |\n", c.client, c.feature, door, why)
				}
			}
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.client, c.feature, c.gap)
	}
	renderConnecting(&b)
	return []byte(b.String())
}

// docsURL is the endpoint docs/clients.md configures clients for: the
// stack's EndpointUrl output.
const docsURL = "https://<api id>.execute-api.<region>.amazonaws.com/mcp"

// renderConnecting renders each client's configuration
// (internal/clientconfig), as TestClaudeCodeConfiguration,
// TestInspectorConfiguration and TestFileConfigurations check it.
func renderConnecting(b *strings.Builder) {
	b.WriteString(`
## Connecting a client

What to give each client, for a deployed stack (its ` + "`EndpointUrl`" + `
output in place of the URL below; a custom domain's URL when
` + "`EndpointUrl`" + ` was set) and for ` + "`make run`" + `, which prints these
lines for its local URL as it starts. Claude Code's commands and the
Inspector's are run as written against a live endpoint by interop's
TestClaudeCodeConfiguration (Claude Code 2.1.332) and
TestInspectorConfiguration (Inspector 2.12.0); VS Code's and Cursor's
files are held to their documented formats by TestFileConfigurations.
A protected endpoint needs nothing more in a client that signs in
itself: it answers 401 with its metadata, and the client walks it to the
provider (docs/auth-providers.md has the callbacks Claude Code, VS Code
and Claude Desktop sign in through, which a provider must allow). The versions with a token are for a token
you hold (a service account's); keep it out of files you commit.
Claude Code and the Inspector open a ` + "`subscriptions/listen`" + ` stream as
they connect: through the streaming door each such stream holds one
invocation of the function until it ends (` + "`MCP_LISTEN_MAX_DURATION`" + `,
5 minutes by default, also after a one-shot Inspector CLI has exited;
docs/listen.md and docs/operations.md say what that costs); the buffered
HTTP API door advertises nothing to listen to, and none is opened.
`)
	for _, s := range clientconfig.For("notes", docsURL) {
		lang := "json"
		if !strings.HasPrefix(s.Config, "{") {
			lang = "sh"
		}
		if strings.HasPrefix(s.Config, "Name:") {
			lang = "text"
		}
		fmt.Fprintf(b, "\n### %s\n\nIn %s (format: %s):\n\n```%s\n%s\n```\n", s.Client, s.Where, s.Doc, lang, s.Config)
		if s.WithToken != "" {
			fmt.Fprintf(b, "\nWith a token:\n\n```%s\n%s\n```\n", lang, s.WithToken)
		}
		fmt.Fprintf(b, "\nWith OAuth: %s.\n", s.OAuth)
	}
}
