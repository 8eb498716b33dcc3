//go:build integration

package notebook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// listenPoll is how often the instances of TestListenAcrossInstances read
// the event log; a change made on one instance reaches a stream held on
// another by the next read, as docs/listen.md says: within listenPoll
// plus the read's own time (DynamoDB Local has no replication lag).
const listenPoll = 200 * time.Millisecond

// instance is the note book as one Lambda instance composes it, on the
// shared DynamoDB Local table, served over HTTP with the caller named by
// the X-Principal header (where API Gateway's authorizer would name it).
func instance(t *testing.T, extra func(*stateless.Server)) (*stateless.Server, string) {
	t.Helper()
	local := localDynamoDB(t)
	cfg, err := endpoint.LoadConfig(func(k string) string {
		return map[string]string{endpoint.EnvAllowAnonymous: "true", endpoint.EnvClaimsTable: notesTable,
			endpoint.EnvListenPoll: listenPoll.String()}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newServerWith(cfg, discardLogger(), nil, &endpoint.Clients{Configure: local.Configure})
	if err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.AnnounceCatalog(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(&stateless.HTTPHandler{Server: srv, Principal: func(r *http.Request) string { return r.Header.Get("X-Principal") }})
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

const elicitingMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// rpc posts one request as principal and returns its result (or
// {"error": …}).
func rpc(t *testing.T, url, principal, method, target, params string) map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,` + elicitingMeta + `}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = wire.ModernHeaders(method, target)
	req.Header.Set("X-Principal", principal)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if out.Error != nil {
		return map[string]any{"error": out.Error}
	}
	return out.Result
}

// openListen opens a listen stream as principal and returns its messages
// as they come.
func openListen(ctx context.Context, t *testing.T, url, principal, id, notifications string) <-chan map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"notifications":` + notifications + `,` + elicitingMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header = wire.ModernHeaders("subscriptions/listen", "")
	req.Header.Set("X-Principal", principal)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("listen answered %d %q", resp.StatusCode, ct)
	}
	return wire.Frames(resp.Body)
}

// TestListenAcrossInstances: instances A and B of the note book share one
// DynamoDB Local table. Alice listens on A to her note and the tool list;
// Bob listens on A to his own note. Alice deletes her note through B: her
// stream on A gets notifications/resources/updated within the poll
// interval, Bob's gets nothing (the note is Alice's; Bob could not even
// subscribe to it). A third instance, C, starts with one more tool: its
// start announces the new catalog, and Alice's stream on A gets
// notifications/tools/list_changed, once, and nothing she did not ask
// for.
func TestListenAcrossInstances(t *testing.T) {
	_, a := instance(t, nil)
	_, b := instance(t, nil)
	alice, bob := "alice-"+t.Name(), "bob-"+t.Name()
	add := func(who, text string) string {
		id, _ := structured(rpc(t, b, who, "tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"`+text+`"}`))["id"].(string)
		if id == "" {
			t.Fatalf("%s's note was not added", who)
		}
		return id
	}
	hers, his := add(alice, "Call Ada"), add(bob, "Call Grace")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	herStream := openListen(ctx, t, a, alice, "her",
		`{"toolsListChanged":true,"resourceSubscriptions":["`+noteURI(hers)+`","`+noteURI(his)+`"]}`)
	hisStream := openListen(ctx, t, a, bob, "his", `{"resourceSubscriptions":["`+noteURI(his)+`"]}`)

	ack := wire.Next(herStream, 3*time.Second)
	got, _ := json.Marshal(ack["params"].(map[string]any)["notifications"])
	if want := `{"resourceSubscriptions":["` + noteURI(hers) + `"],"toolsListChanged":true}`; string(got) != want {
		t.Fatalf("Alice's acknowledgement %s, want %s (Bob's note is not hers to subscribe to)", got, want)
	}
	if m := wire.Next(hisStream, 3*time.Second); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("Bob's first message %v", m)
	}

	args := `"name":"notes_delete","arguments":{"id":"` + hers + `"}`
	state, _ := rpc(t, b, alice, "tools/call", "notes_delete", args)["requestState"].(string)
	if state == "" {
		t.Fatal("no confirmation asked")
	}
	r := rpc(t, b, alice, "tools/call", "notes_delete", args+`,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`)
	if structured(r)["deleted"] != true {
		t.Fatalf("the delete: %v", r)
	}
	deleted := time.Now()
	bound := listenPoll + time.Second
	m := wire.Next(herStream, bound)
	if m["method"] != "notifications/resources/updated" || m["params"].(map[string]any)["uri"] != noteURI(hers) ||
		m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != "her" {
		t.Fatalf("within %v of the delete on B, Alice's stream on A got %v", bound, m)
	}
	t.Logf("a delete on B reached a listen stream on A in %v (poll %v)", time.Since(deleted).Round(time.Millisecond), listenPoll)
	if m := wire.Next(hisStream, 2*listenPoll); m != nil {
		t.Fatalf("Bob's stream got %v", m)
	}

	type none struct{}
	started := time.Now()
	instance(t, func(s *stateless.Server) {
		stateless.AddTool(s, &stateless.Tool{Name: "notes_pin", Description: "Pins a note (a new deploy's tool)."},
			func(context.Context, *stateless.ToolRequest, none) (*stateless.CallToolResult, any, error) {
				return nil, nil, nil
			})
	})
	m = wire.Next(herStream, bound+time.Second)
	if m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("after an instance started with another catalog, Alice's stream got %v", m)
	}
	t.Logf("a new catalog on C reached a listen stream on A in %v", time.Since(started).Round(time.Millisecond))
	if m := wire.Next(herStream, 3*listenPoll); m != nil {
		t.Fatalf("Alice's stream got an unrequested or repeated %v", m)
	}
	if m := wire.Next(hisStream, listenPoll); m != nil {
		t.Fatalf("Bob's stream got %v, which he did not ask for", m)
	}
}
