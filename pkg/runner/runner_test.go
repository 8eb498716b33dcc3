package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// TestDocumentsThroughTheLocalDoor: the local server answers the OAuth
// documents at their paths through the documents' routing table, and
// each answer is one reported Outcome, named after the document (never
// the path), with its status and a refusal's kind, and one request line
// of the observer; a path that is no document's is a plain 404, no
// answer of the endpoint's.
func TestDocumentsThroughTheLocalDoor(t *testing.T) {
	const endpoint = "https://mcp.example.com/mcp"
	var log syncbuf.Buffer
	ob := observe.New(&log, observe.Options{Function: "fn"})
	var mu sync.Mutex
	var outcomes []*stateless.Outcome
	res := &auth.Resource{AuthorizationServers: []string{"https://issuer.example.com"},
		Registration: &auth.Registration{ClientID: "c", AuthorizationEndpoint: "https://idp.example/authorize", TokenEndpoint: "https://idp.example/token"}}
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		AllowedOrigins: []string{"https://app.example"},
		Auth:           &stateless.AuthOptions{Authenticator: res},
		Observe: func(ctx context.Context, o *stateless.Outcome) {
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
			ob.Observe(ctx, o)
		}})
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, srv, Options{Addr: "127.0.0.1:0", Endpoint: endpoint, Stdout: pw, Logger: slog.New(slog.DiscardHandler),
			Documents: &auth.Documents{Server: srv, Resource: res}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "MCP endpoint: ")
	if err != nil || !ok {
		t.Fatalf("the local endpoint's URL: %q, %v", line, err)
	}
	origin := strings.TrimSuffix(url, "/mcp")
	client := &http.Client{Timeout: 10 * time.Second}

	for _, tt := range []struct {
		method, path, body string
		header             http.Header
		status             int
		document, kind     string // "": no answer of the endpoint's
	}{
		{"GET", "/.well-known/oauth-protected-resource/mcp", "", nil, 200, auth.MethodProtectedResourceMetadata, ""},
		{"GET", "/.well-known/oauth-protected-resource", "", nil, 200, auth.MethodProtectedResourceMetadata, ""},
		{"GET", "/.well-known/oauth-authorization-server/mcp", "", nil, 200, auth.MethodAuthorizationServerMetadata, ""},
		{"POST", "/mcp/register", `{"redirect_uris":["http://127.0.0.1:3000/cb"]}`, nil, 201, auth.MethodRegister, ""},
		{"POST", "/mcp/register", `{"redirect_uris":["https://evil.example/cb"]}`, nil, 400, auth.MethodRegister, "invalid_redirect_uri"},
		{"OPTIONS", "/mcp/register", "", http.Header{"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"POST"}}, 204, auth.MethodRegisterPreflight, ""},
		{"OPTIONS", "/mcp/register", "", nil, 405, auth.MethodRegisterPreflight, "method_not_allowed"},
		{"GET", "/elsewhere", "", nil, 404, "", ""},
		{"PUT", "/mcp/register", "", nil, 404, "", ""},
	} {
		mu.Lock()
		outcomes = nil
		mu.Unlock()
		log.Take()
		req, err := http.NewRequest(tt.method, origin+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.status)
		}
		mu.Lock()
		got := outcomes
		mu.Unlock()
		if tt.document == "" {
			if len(got) != 0 {
				t.Errorf("%s %s was reported: %+v", tt.method, tt.path, got[0])
			}
			continue
		}
		if len(got) != 1 || got[0].Method != tt.document || !got[0].OwnMethod || got[0].Status != tt.status || got[0].Kind != tt.kind {
			t.Errorf("%s %s: outcomes %+v, want one of %s, status %d, kind %q", tt.method, tt.path, got, tt.document, tt.status, tt.kind)
			continue
		}
		var l map[string]any
		lines := strings.Split(strings.TrimSpace(log.Take()), "\n")
		outcome := tt.kind
		if outcome == "" {
			outcome = "ok"
		}
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &l) != nil || l["msg"] != "request" || l["Method"] != tt.document ||
			l["Outcome"] != outcome || l["status"] != float64(tt.status) || l["Requests"] != float64(1) {
			t.Errorf("%s %s: the observer's lines %q, want one request line of %s, %s, %d", tt.method, tt.path, lines, tt.document, outcome, tt.status)
		}
	}
}

// TestEventsRegistered: the events an extension sends the function reach
// it through the handler it registers (Options.Events), the door knowing
// none of them: the tasks extension's worker event runs the task (here
// one that is gone: a run reported, nothing taken) on the buffered and
// the streaming door; a handler's error fails the invocation; a gateway's
// event is no handler's; and without the handler a worker's event is no
// event the function serves.
func TestEventsRegistered(t *testing.T) {
	var reported []*stateless.Outcome
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Observe: func(_ context.Context, o *stateless.Outcome) { reported = append(reported, o) }})
	stateless.AddTool(srv, &stateless.Tool{Name: "echo"}, func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
		return nil, nil, nil
	})
	ext := tasks.New(tasks.Options{Store: tasks.NewMemory()})
	ext.Install(srv)
	failing := func(ctx context.Context, payload []byte) (bool, []byte, error) {
		if string(payload) == `{"other":1}` {
			return true, nil, errors.New("the other event failed")
		}
		return false, nil, nil
	}
	h := &Invocations{Server: srv, Gateway: &apigw.Handler{Server: srv}, Events: []EventHandler{failing, ext.HandleEvent}}
	worker := tasks.AppendEvent(nil, "gone")

	reply, err := h.Invoke(context.Background(), worker)
	if err != nil || string(reply) != "{}" || len(reported) != 1 || reported[0].Method != stateless.MethodTaskRun || !reported[0].TaskRun {
		t.Errorf("a worker's event: %s %v, reported %+v", reply, err, reported)
	}
	reported = nil
	r, err := h.invokeEarly(context.Background(), worker, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r); string(b) != "{}" || len(reported) != 1 || reported[0].Method != stateless.MethodTaskRun {
		t.Errorf("a worker's event on the streaming door: %s, reported %+v", b, reported)
	}
	if _, err := h.Invoke(context.Background(), []byte(`{"other":1}`)); err == nil || err.Error() != "the other event failed" {
		t.Errorf("a failing handler's event: %v", err)
	}

	reported = nil
	payload, err := os.ReadFile("../../events/tools-list.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), payload)
	if err != nil || !strings.Contains(string(out), `\"tools\":[`) || len(reported) != 1 || reported[0].Method != "tools/list" {
		t.Errorf("a gateway's event: %.200s %v, reported %+v", out, err, reported)
	}

	none := &Invocations{Server: srv, Gateway: &apigw.Handler{Server: srv}}
	if _, err := none.Invoke(context.Background(), worker); !errors.Is(err, apigw.ErrNotHTTP) {
		t.Errorf("a worker's event with no handler: %v, want apigw.ErrNotHTTP", err)
	}
}

// TestPrintClients: a local endpoint's start-up lines give each client
// that can reach it its configuration, one line each, under the
// endpoint's name; not Claude Desktop's, which reaches no local endpoint.
func TestPrintClients(t *testing.T) {
	var b strings.Builder
	printClients(&b, "counter", "http://127.0.0.1:8080/mcp")
	out := b.String()
	for _, want := range []string{
		"  Claude Code:   claude mcp add --transport http counter http://127.0.0.1:8080/mcp\n",
		`{"servers":{"counter":{"type":"http","url":"http://127.0.0.1:8080/mcp"}}}` + "\n",
		`{"mcpServers":{"counter":{"url":"http://127.0.0.1:8080/mcp"}}}` + "\n",
		"npx @modelcontextprotocol/inspector --cli http://127.0.0.1:8080/mcp",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Claude Desktop") || strings.Count(out, "\n") != 5 {
		t.Errorf("lines:\n%s", out)
	}
}
