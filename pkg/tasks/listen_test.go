package tasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// listenFrames opens a listen stream of principal for body's
// notifications and returns its messages as they come.
func listenFrames(ctx context.Context, t *testing.T, url, principal, notifications string) <-chan map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"tl","method":"subscriptions/listen","params":{"notifications":` + notifications + `,"_meta":` + wire.MetaJSON(tasksCaps) + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header = wire.ModernHeaders("subscriptions/listen", "")
	req.Header.Set("X-Principal", principal)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Frames(resp.Body)
}

// TestTaskStatusOverListen: a listen stream that names a task of its
// caller's in taskIds gets notifications/tasks with the task as tasks/get
// answers it, at each change of status, tagged with the subscription's
// id; another caller naming the same task, and an unknown id, are left
// out of the acknowledgement and get nothing.
func TestTaskStatusOverListen(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	hs := httptest.NewServer(&stateless.HTTPHandler{Server: r.srv, Principal: func(req *http.Request) string { return req.Header.Get("X-Principal") }})
	defer hs.Close()
	id := r.create(t, "alice", "block", `{"text":"x"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alice := listenFrames(ctx, t, hs.URL, "alice", `{"taskIds":[`+quote(id)+`,"nosuchtaskaaaaaaaaaaaaaaaaaaaaaaaa"]}`)
	mallory := listenFrames(ctx, t, hs.URL, "mallory", `{"taskIds":[`+quote(id)+`],"toolsListChanged":true}`)
	ack := wire.Next(alice, 2*time.Second)
	n, _ := json.Marshal(ack["params"].(map[string]any)["notifications"])
	if ack["method"] != "notifications/subscriptions/acknowledged" || string(n) != `{"taskIds":[`+quote(id)+`]}` {
		t.Fatalf("alice's acknowledgement: %v", ack)
	}
	ack = wire.Next(mallory, 2*time.Second)
	n, _ = json.Marshal(ack["params"].(map[string]any)["notifications"])
	if string(n) != `{"toolsListChanged":true}` {
		t.Fatalf("mallory's acknowledgement: %s", n)
	}
	done := make(chan error, 1)
	go func() { done <- r.work(t) }()
	<-r.inRun
	close(r.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	m := wire.Next(alice, 2*time.Second)
	p, _ := m["params"].(map[string]any)
	meta, _ := p["_meta"].(map[string]any)
	if m["method"] != "notifications/tasks" || p["taskId"] != id || p["status"] != "completed" || p["result"] == nil || meta["io.modelcontextprotocol/subscriptionId"] != "tl" {
		t.Fatalf("alice got %v", m)
	}
	if m := wire.Next(mallory, 300*time.Millisecond); m != nil {
		t.Fatalf("mallory got %v", m)
	}
}
