//go:build integration

package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks/taskstest"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// table has the partition key alone; sortedTable has template.yaml's
// composite key, shared with the claims and the notes.
const (
	table       = "tasks-test"
	sortedTable = "tasks-test-sorted"
)

var local *dynamolocal.Server

func TestMain(m *testing.M) {
	dynamolocal.Main(m, &local, dynamolocal.Table{Name: table}, dynamolocal.Table{Name: sortedTable, SortKey: "sk"})
}

func TestDynamoDBContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) tasks.Store { return &tasks.DynamoDB{Client: local.Client(), Table: table} })
}

func TestDynamoDBContractSortKey(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) tasks.Store {
		return &tasks.DynamoDB{Client: local.Client(), Table: sortedTable, SortKey: "sk"}
	})
}

// TestConcurrentGetsDuringUpdates: on DynamoDB, tasks/get racing
// tasks/update (from two clients answering the same requests) always
// sees a state the task passed through, and the task is woken once.
func TestConcurrentGetsDuringUpdates(t *testing.T) {
	var ext *tasks.Extension
	var dispatches atomic.Int32
	ext = tasks.New(tasks.Options{
		Store: &tasks.DynamoDB{Client: local.Client(), Table: sortedTable, SortKey: "sk"},
		Dispatch: func(ctx context.Context, id string) error {
			dispatches.Add(1)
			go ext.Run(context.Background(), id)
			return nil
		}})
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	ext.Install(srv)
	form := stateless.ElicitForm("Name?", map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}})
	srv.AddTool(&stateless.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}, TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			a, okA := req.ElicitResult("a")
			b, okB := req.ElicitResult("b")
			if !okA || !okB {
				return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"a": form, "b": form}}
			}
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(fmt.Sprint(a.Content["name"], b.Content["name"]))}}, nil
		})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	do := func(method, name, params string) map[string]any {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {name}}
		resp := srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: h, Principal: "p",
			Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,` + meta + `}}`)})
		var out struct {
			Result map[string]any `json:"result"`
			Error  any            `json:"error"`
		}
		if err := json.Unmarshal(resp.Body, &out); err != nil || out.Error != nil {
			t.Errorf("%s: %s", method, resp.Body)
		}
		return out.Result
	}
	id, _ := do("tools/call", "ask", `"name":"ask","arguments":{}`)["taskId"].(string)
	get := func() map[string]any { return do("tasks/get", id, `"taskId":"`+id+`"`) }
	for deadline := time.Now().Add(10 * time.Second); get()["status"] != "input_required"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never input_required")
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var seen sync.Map
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := get()
				reqs, _ := r["inputRequests"].(map[string]any)
				key := fmt.Sprintf("%v %d", r["status"], len(reqs))
				switch key {
				case "input_required 2", "input_required 1", "working 0", "completed 0":
					seen.Store(key, true)
				default:
					t.Errorf("tasks/get saw %v", r)
				}
			}
		}()
	}
	answer := func(k, v string) string { return `"` + k + `":{"action":"accept","content":{"name":"` + v + `"}}` }
	var upd sync.WaitGroup
	for _, name := range []string{"x", "y"} {
		upd.Add(1)
		go func() {
			defer upd.Done()
			do("tasks/update", id, `"taskId":"`+id+`","inputResponses":{`+answer("a", name)+`}`)
			do("tasks/update", id, `"taskId":"`+id+`","inputResponses":{`+answer("b", name)+`}`)
		}()
	}
	upd.Wait()
	var last map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if last = get(); last["status"] == "completed" || time.Now().After(deadline) {
			break
		}
	}
	close(stop)
	wg.Wait()
	if last["status"] != "completed" || dispatches.Load() != 2 {
		t.Fatalf("ended %v after %d dispatches; want completed after 2", last, dispatches.Load())
	}
	var states []string
	seen.Range(func(k, _ any) bool { states = append(states, k.(string)); return true })
	t.Logf("states seen by the racing gets: %v", states)
}

// TestTaskCost: what a task costs in DynamoDB operations, as the README
// states it: creating it one PutItem; its worker one GetItem and one
// PutItem to take it, one GetItem per CancelCheck while the handler runs,
// and one GetItem and one PutItem to record the outcome; each tasks/get
// one strongly consistent GetItem. And one worker invocation.
func TestTaskCost(t *testing.T) {
	c := &opcount.Counter{}
	store := &tasks.DynamoDB{Client: local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.Middleware) }), Table: sortedTable, SortKey: "sk"}
	var ids []string
	ext := tasks.New(tasks.Options{
		Store: store, CancelCheck: time.Hour, // no cancel check within the run: each would be one GetItem
		Dispatch: func(ctx context.Context, id string) error { ids = append(ids, id); return nil }})
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	ext.Install(srv)
	srv.AddTool(&stateless.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}, TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("done")}}, nil
		})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	h := func(method, name string) http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {name}}
	}
	resp := srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: h("tools/call", "work"), Principal: "p",
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work",` + meta + `}}`)})
	if ops := c.Take(); len(ids) != 1 || ops["PutItem"] != 1 || len(ops) != 1 {
		t.Fatalf("creating: %v, %d dispatches (%s)", ops, len(ids), resp.Body)
	}
	if err := ext.Run(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if ops := c.Take(); ops["PutItem"] != 2 || ops["GetItem"] != 2 || len(ops) != 2 {
		t.Fatalf("the worker: %v; want 2 PutItem and 2 GetItem", ops)
	}
	resp = srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: h("tasks/get", ids[0]), Principal: "p",
		Body: []byte(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + ids[0] + `",` + meta + `}}`)})
	if ops := c.Take(); ops["GetItem"] != 1 || len(ops) != 1 || !strings.Contains(string(resp.Body), `"status":"completed"`) {
		t.Fatalf("tasks/get: %v %s", ops, resp.Body)
	}
}

// TestLiveTaskQuotaAcrossInstances: on DynamoDB, a caller's live tasks
// are counted for every instance: of tasks started alternately through
// two, three start and the rest are refused; one that ends on either
// instance gives its slot back to both.
func TestLiveTaskQuotaAcrossInstances(t *testing.T) {
	newInstance := func() *taskRig {
		store := &tasks.DynamoDB{Client: local.Client(), Table: sortedTable, SortKey: "sk"}
		return limited(t, store, &ratelimit.DynamoDBSlots{Client: local.Client(), Table: sortedTable, SortKey: "sk", Kind: "tasks"}, 3, nil)
	}
	a, b := newInstance(), newInstance()
	principal := fmt.Sprint("mallory-", time.Now().UnixNano())
	started := 0
	for i := range 8 {
		r := []*taskRig{a, b}[i%2]
		out := r.callTool(t, principal, "quick", fmt.Sprintf(`{"text":"%d"}`, i), tasksCaps)
		switch {
		case out.Error == nil:
			started++
		case !refusedForLiveTasks(out):
			t.Fatalf("call %d: %+v", i, out.Error)
		}
	}
	if started != 3 {
		t.Fatalf("%d tasks started through two instances, want 3", started)
	}
	if err := b.work(t); err != nil {
		t.Fatal(err)
	}
	if out := a.callTool(t, principal, "quick", `{"text":"after"}`, tasksCaps); out.Error != nil {
		t.Fatalf("a slot given back on another instance: %+v", out.Error)
	}
	if out := a.callTool(t, principal, "quick", `{"text":"one too many"}`, tasksCaps); !refusedForLiveTasks(out) {
		t.Fatalf("past the quota: %+v", out.Error)
	}
}
