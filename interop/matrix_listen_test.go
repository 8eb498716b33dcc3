//go:build unix

package interop

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client matrix's listen cells (subscriptions/listen, docs/listen.md),
// shared by TestClientMatrix (the local door) and the integration build's
// TestClientMatrixListenStreaming (the streaming door, whose instances
// share an event log in DynamoDB Local). Each client connects to the note
// book, adds a note, subscribes to it (notes://note/<id>) and waits for
// the acknowledgement; a second connection deletes the note, answering
// notes_delete's confirmation; the subscriber must then get
// notifications/resources/updated for the note within listenWithin. The
// SDKs' own list listening is checked too, where the client opens it
// (an acknowledgement of toolsListChanged): the note book's tool list
// changes with a deploy only, which no cell makes.

// listenWithin bounds the wait for an acknowledgement and for the update.
const listenWithin = 5 * time.Second

// bufferedNoListen is why no listen stream is held through the buffered
// door.
const bufferedNoListen = "the buffered door cannot hold a stream: server/discover advertises no subscribe or listChanged, and subscriptions/listen " +
	"is answered -32601; use the streaming door, or poll (read the resource again)"

// listenTarget is the note book, anonymous, for a listen cell.
type listenTarget struct {
	URL string
	// Client reaches URL. It has no Timeout, which would cut a listen
	// stream: the cells bound their waits themselves.
	Client *http.Client
	// CAFile is a PEM file of the TLS front's certificate for Node; ""
	// for plain HTTP.
	CAFile string
}

// listenCell is one client's listen check.
type listenCell struct {
	client string
	check  func(t *testing.T, tg listenTarget)
}

// matrixListen are the listen cells, in the doc's order.
var matrixListen = []listenCell{
	{"go-sdk", goSDKListen},
	{"mcp-go", mcpGoListen},
	{"ts-v2-pinned", func(t *testing.T, tg listenTarget) {
		runNodeScript(t, tg.CAFile, "matrix.mjs", "ts-v2-pinned", "listen", tg.URL)
	}},
}

// listenCellOf is the listen cell of client.
func listenCellOf(client string) listenCell {
	for _, c := range matrixListen {
		if c.client == client {
			return c
		}
	}
	panic("interop: no listen cell of " + client)
}

// runNodeScript runs a script (or a tool's bin) of tools/ on the Node 22
// it pins, trusting caFile if set, and fails the test unless it succeeds.
func runNodeScript(t *testing.T, caFile string, args ...string) string {
	t.Helper()
	node, err := filepath.Abs("../tools/node_modules/.bin/node")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(testContext(t), node, args...)
	cmd.Dir = "../tools"
	cmd.Env = os.Environ()
	if caFile != "" {
		cmd.Env = append(cmd.Env, "NODE_EXTRA_CA_CERTS="+caFile)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// noteURIOf is the note book's resource URI of note id.
func noteURIOf(id string) string { return "notes://note/" + id }

// seen collects what a client's handlers report, for a test to wait on.
type seen[T any] struct {
	mu    sync.Mutex
	items []T
	more  chan struct{}
}

func newSeen[T any]() *seen[T] { return &seen[T]{more: make(chan struct{}, 1)} }

func (s *seen[T]) add(v T) {
	s.mu.Lock()
	s.items = append(s.items, v)
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// wait returns the first item for which ok holds, waiting up to d; false
// if none came.
func (s *seen[T]) wait(d time.Duration, ok func(T) bool) (T, bool) {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		i := slices.IndexFunc(s.items, ok)
		var v T
		if i >= 0 {
			v = s.items[i]
		}
		s.mu.Unlock()
		if i >= 0 {
			return v, true
		}
		select {
		case <-s.more:
		case <-deadline:
			return v, false
		}
	}
}

func (s *seen[T]) all() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}

// goSDKListen: go-sdk's Connect opens a listen stream for the tool list
// itself (a ToolListChangedHandler is set and discover advertises
// tools.listChanged); ClientSession.Subscribe opens one more for the
// note; the note's deletion through a second session reaches the
// ResourceUpdatedHandler. go-sdk hands the acknowledgement to no handler
// of the application, and Subscribe returns once the request is sent,
// before it: a receiving middleware sees the acknowledgements, and the
// delete waits for the note's.
func goSDKListen(t *testing.T, tg listenTarget) {
	ctx := testContext(t)
	acks := newSeen[mcp.NotificationSubscriptions]()
	updated := newSeen[*mcp.ResourceUpdatedNotificationParams]()
	c := mcp.NewClient(goSDKClientInfo, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated.add(r.Params) },
	})
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && method == "notifications/subscriptions/acknowledged" {
				acks.add(p.Notifications)
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: tg.URL, HTTPClient: tg.Client}, nil)
	if err != nil {
		t.Fatalf("go-sdk Connect: %v", err)
	}
	defer cs.Close()
	if _, ok := acks.wait(listenWithin, func(n mcp.NotificationSubscriptions) bool { return n.ToolsListChanged }); !ok {
		t.Fatalf("no acknowledgement of toolsListChanged within %v of Connect: go-sdk opened no listen stream for the tool list (acknowledged: %+v)", listenWithin, acks.all())
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": "watched by go-sdk"}})
	if err != nil || r.IsError {
		t.Fatalf("notes_add: %v %+v", err, r)
	}
	id, _ := r.StructuredContent.(map[string]any)["id"].(string)
	if id == "" {
		t.Fatalf("notes_add answered no id: %+v", r.StructuredContent)
	}
	uri := noteURIOf(id)
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("go-sdk Subscribe %s: %v", uri, err)
	}
	if _, ok := acks.wait(listenWithin, func(n mcp.NotificationSubscriptions) bool {
		return slices.Equal(n.ResourceSubscriptions, []string{uri})
	}); !ok {
		t.Fatalf("no acknowledgement of %s within %v of Subscribe (acknowledged: %+v)", uri, listenWithin, acks.all())
	}

	// The second session: it declares elicitation (an ElicitationHandler)
	// and answers the confirmation; it sets no list handler, so it opens
	// no listen stream of its own.
	other := mcp.NewClient(goSDKClientInfo, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}})
	second, err := other.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: tg.URL, HTTPClient: tg.Client}, nil)
	if err != nil {
		t.Fatalf("go-sdk Connect (the second session): %v", err)
	}
	defer second.Close()
	d, err := second.CallTool(ctx, &mcp.CallToolParams{Name: "notes_delete", Arguments: map[string]any{"id": id}})
	if err != nil || d.IsError {
		t.Fatalf("notes_delete: %v %+v", err, d)
	}
	if sc, _ := d.StructuredContent.(map[string]any); sc["deleted"] != true {
		t.Fatalf("notes_delete did not delete: %+v", d.StructuredContent)
	}
	deleted := time.Now()
	if _, ok := updated.wait(listenWithin, func(p *mcp.ResourceUpdatedNotificationParams) bool { return p != nil && p.URI == uri }); !ok {
		t.Fatalf("no notifications/resources/updated for %s within %v of the delete (got %+v)", uri, listenWithin, updated.all())
	}
	t.Logf("the delete reached go-sdk's ResourceUpdatedHandler in %v", time.Since(deleted).Round(time.Millisecond))
}

// connectMCPGoAt connects an mcp-go client (2026-07-28, its default) to
// url through hc.
func connectMCPGoAt(ctx context.Context, t *testing.T, url string, hc *http.Client, opts ...mcpclient.ClientOption) *mcpclient.Client {
	t.Helper()
	tr, err := mcptransport.NewStreamableHTTP(url, mcptransport.WithHTTPBasicClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	res, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpGoClientInfo}})
	if err != nil {
		t.Fatalf("mcp-go Initialize: %v", err)
	}
	if res.ProtocolVersion != v20260728 {
		t.Fatalf("mcp-go negotiated %s, want %s", res.ProtocolVersion, v20260728)
	}
	return c
}

// mcpGoListen: mcp-go opens no listen stream by itself. At 2026-07-28 the
// resources of interest are named in the filter of a listen (its
// Client.Subscribe, deprecated, only adds to the next filter);
// Client.ListenAsync opens the stream in the background and
// returns at once, before the acknowledgement, which reaches the
// OnNotification handlers like every notification of the stream.
func mcpGoListen(t *testing.T, tg listenTarget) {
	ctx := testContext(t)
	notes := newSeen[mcpgo.JSONRPCNotification]()
	c := connectMCPGoAt(ctx, t, tg.URL, tg.Client)
	c.OnNotification(notes.add)
	r, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": "watched by mcp-go"}}})
	if err != nil || r.IsError {
		t.Fatalf("notes_add: %v %+v", err, r)
	}
	id, _ := r.StructuredContent.(map[string]any)["id"].(string)
	if id == "" {
		t.Fatalf("notes_add answered no id: %+v", r.StructuredContent)
	}
	uri := noteURIOf(id)
	filter := mcpgo.SubscriptionFilter{ResourceSubscriptions: []string{uri}, ToolsListChanged: true}
	listenErr := make(chan error, 1)
	stop, err := c.ListenAsync(ctx, filter, func(err error) { listenErr <- err })
	if err != nil {
		t.Fatalf("mcp-go ListenAsync: %v", err)
	}
	defer stop()
	ack, ok := notes.wait(listenWithin, func(n mcpgo.JSONRPCNotification) bool {
		return n.Method == "notifications/subscriptions/acknowledged"
	})
	if !ok {
		select {
		case err := <-listenErr:
			t.Fatalf("mcp-go's listen stream failed before its acknowledgement: %v", err)
		default:
		}
		t.Fatalf("no acknowledgement within %v of ListenAsync (notifications: %+v)", listenWithin, notes.all())
	}
	if got := fmt.Sprint(ack.Params.AdditionalFields["notifications"]); got != fmt.Sprint(map[string]any{"resourceSubscriptions": []any{uri}, "toolsListChanged": true}) {
		t.Fatalf("acknowledged %s, want the note and the tool list", got)
	}

	// The second client answers the confirmation; it listens to nothing.
	other := connectMCPGoAt(ctx, t, tg.URL, tg.Client, mcpclient.WithElicitationHandler(elicitFunc(func(context.Context, mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
		return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}, nil
	})))
	d, err := other.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "notes_delete", Arguments: map[string]any{"id": id}}})
	if err != nil || d.IsError {
		t.Fatalf("notes_delete: %v %+v", err, d)
	}
	if sc, _ := d.StructuredContent.(map[string]any); sc["deleted"] != true {
		t.Fatalf("notes_delete did not delete: %+v", d.StructuredContent)
	}
	deleted := time.Now()
	if _, ok := notes.wait(listenWithin, func(n mcpgo.JSONRPCNotification) bool {
		return n.Method == "notifications/resources/updated" && n.Params.AdditionalFields["uri"] == uri
	}); !ok {
		t.Fatalf("no notifications/resources/updated for %s within %v of the delete (notifications: %+v)", uri, listenWithin, notes.all())
	}
	t.Logf("the delete reached mcp-go's OnNotification in %v", time.Since(deleted).Round(time.Millisecond))
}
