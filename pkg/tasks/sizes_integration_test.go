//go:build integration

package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// sizeRig is a server on the DynamoDB task store (the template's table
// shape) whose workers are run by the test, one Run per dispatch.
type sizeRig struct {
	srv        *stateless.Server
	ext        *tasks.Extension
	store      *tasks.DynamoDB
	dispatched chan string
	runs       atomic.Int32
}

const tasksMeta = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

func newSizeRig(t *testing.T, guard *claims.Guard) *sizeRig {
	t.Helper()
	r := &sizeRig{store: &tasks.DynamoDB{Client: local.Client(), Table: sortedTable, SortKey: "sk"}, dispatched: make(chan string, 100)}
	r.ext = tasks.New(tasks.Options{Store: r.store, Dispatch: func(ctx context.Context, id string) error {
		r.dispatched <- id
		return nil
	}})
	var ics []stateless.Interceptor
	if guard != nil {
		ics = append(ics, guard.Interceptor())
	}
	r.srv = stateless.NewServer(stateless.Implementation{Name: "sizes", Version: "1"}, &stateless.Options{
		Interceptors: ics})
	r.ext.Install(r.srv)
	obj := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	// echo answers with its text: the result is as large as the call
	// says, made of whatever characters it says.
	r.srv.AddTool(&stateless.Tool{Name: "echo", InputSchema: obj, TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			r.runs.Add(1)
			var in struct{ Text string }
			if err := json.Unmarshal(req.Arguments, &in); err != nil {
				return nil, err
			}
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(in.Text)}}, nil
		})
	// big answers with a text of the size its text names, in "<", "&"
	// and U+2028.
	r.srv.AddTool(&stateless.Tool{Name: "big", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}, TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			r.runs.Add(1)
			var in struct{ N int }
			if err := json.Unmarshal(req.Arguments, &in); err != nil {
				return nil, err
			}
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(hostile(in.N))}}, nil
		})
	// ask waits for one answer, and answers with its length.
	form := stateless.ElicitForm("Text?", map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}})
	r.srv.AddTool(&stateless.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}, TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			r.runs.Add(1)
			a, ok := req.ElicitResult("a")
			if !ok {
				return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"a": form}}
			}
			s, _ := a.Content["text"].(string)
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(fmt.Sprint(len(s), " ", s[:1]))}}, nil
		})
	// look is read-only: it takes no claim as a plain call, but a task
	// must still be made once per key.
	r.srv.AddTool(&stateless.Tool{Name: "look", InputSchema: map[string]any{"type": "object"}, TaskSupport: stateless.TaskSupportRequired,
		Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			r.runs.Add(1)
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("looked")}}, nil
		})
	return r
}

// hostile is n bytes of "<", "&" and U+2028, which encoding/json would
// write as six bytes each.
func hostile(n int) string {
	var b strings.Builder
	for b.Len()+5 <= n {
		b.WriteString("<&\u2028")
	}
	for b.Len() < n {
		b.WriteByte('<')
	}
	return b.String()
}

type rpcAnswer struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
}

func (r *sizeRig) do(t *testing.T, srv *stateless.Server, method, name, params, caps string, hdr ...string) rpcAnswer {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {name}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	if srv == nil {
		srv = r.srv
	}
	resp := srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: h, Principal: "p",
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`)})
	var out rpcAnswer
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatalf("%s: %v: %.300s", method, err, resp.Body)
	}
	return out
}

func (r *sizeRig) create(t *testing.T, tool, args string) string {
	t.Helper()
	return r.createWith(t, tool, args, tasksMeta)
}

// askCaps declare the extension and elicitation, which ask needs.
const askCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

func (r *sizeRig) createWith(t *testing.T, tool, args, caps string) string {
	t.Helper()
	out := r.do(t, nil, "tools/call", tool, `"name":"`+tool+`","arguments":`+args, caps)
	id, _ := out.Result["taskId"].(string)
	if out.Error != nil || id == "" {
		t.Fatalf("creating a %s task: %+v", tool, out)
	}
	return id
}

// work runs a worker for every dispatched task.
func (r *sizeRig) work(t *testing.T) {
	t.Helper()
	for {
		select {
		case id := <-r.dispatched:
			if err := r.ext.Run(context.Background(), id); err != nil {
				t.Fatalf("worker: %v", err)
			}
		default:
			return
		}
	}
}

func (r *sizeRig) get(t *testing.T, id string) map[string]any {
	t.Helper()
	out := r.do(t, nil, "tasks/get", id, `"taskId":"`+id+`"`, askCaps)
	if out.Error != nil {
		t.Fatalf("tasks/get: %+v", out.Error)
	}
	return out.Result
}

func resultText(st map[string]any) string {
	res, _ := st["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

// TestLargeResultIsKept: a result of 190 KB of "<", "&" and U+2028 (over
// 600 KB as encoding/json escapes it for a store) is stored whole, in an item
// about its raw size, and the handler runs once; one over the bound
// fails its task once, saying why, and is never run again.
func TestLargeResultIsKept(t *testing.T) {
	r := newSizeRig(t, nil)
	id := r.create(t, "big", `{"n":194560}`)
	r.work(t)
	st := r.get(t, id)
	if st["status"] != "completed" || resultText(st) != hostile(194560) || r.runs.Load() != 1 {
		t.Fatalf("status %v (%v), %d bytes of result, %d runs; want completed, 194560, 1", st["status"], st["error"], len(resultText(st)), r.runs.Load())
	}
	out, err := local.Client().GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(sortedTable), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "task#" + id}, "sk": &types.AttributeValueMemberS{Value: tasks.SortValue}}})
	if err != nil {
		t.Fatal(err)
	}
	// The item is the result as the wire has it (U+2028 escaped, "<"
	// and "&" not) and a fixed amount.
	var wire bytes.Buffer
	enc := json.NewEncoder(&wire)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(hostile(194560)); err != nil {
		t.Fatal(err)
	}
	if n := tasks.ItemSize(out.Item); n > wire.Len()+1024 {
		t.Fatalf("the item is %d bytes for a text of %d bytes on the wire", n, wire.Len())
	}
	// Over the bound (320 KiB as encoded): failed once, with the reason, and a
	// tasks/get long after does not run it again.
	id = r.create(t, "big", `{"n":300000}`)
	r.work(t)
	st = r.get(t, id)
	e, _ := st["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if st["status"] != "failed" || data["reason"] != "task_result_too_large" || r.runs.Load() != 2 {
		t.Fatalf("an oversized result: %v, %d runs", st, r.runs.Load())
	}
	r.get(t, id)
	if len(r.dispatched) != 0 {
		t.Fatal("a failed task was dispatched again")
	}
}

// TestLargeCallsAreRefused: a call whose stored form would be over a
// task's bound — 500 KB of capabilities, say — is refused -32602, not
// retryable, and nothing is stored or dispatched.
func TestLargeCallsAreRefused(t *testing.T) {
	r := newSizeRig(t, nil)
	before := countTasks(t)
	caps := `{"extensions":{"io.modelcontextprotocol/tasks":{},"x":{"pad":"` + strings.Repeat("<", 500<<10) + `"}}}`
	for name, c := range map[string][2]string{
		"capabilities": {caps, `{"text":"x"}`},
		"arguments":    {tasksMeta, `{"text":"` + strings.Repeat("&", 70<<10) + `"}`},
	} {
		out := r.do(t, nil, "tools/call", "echo", `"name":"echo","arguments":`+c[1], c[0])
		if out.Error == nil || out.Error.Code != -32602 || strings.Contains(string(out.Error.Data), `"retryable":true`) ||
			!strings.Contains(string(out.Error.Data), `"reason":"task_call_too_large"`) {
			t.Errorf("%s: %+v", name, out)
		}
	}
	if n := countTasks(t); n != before || len(r.dispatched) != 0 {
		t.Fatalf("%d tasks stored, %d dispatched", n-before, len(r.dispatched))
	}
}

// TestLargeAnswerIsStored: a tasks/update answer of 100,000 "<" is
// stored, and the handler's next run sees it whole.
func TestLargeAnswerIsStored(t *testing.T) {
	r := newSizeRig(t, nil)
	id := r.createWith(t, "ask", `{}`, askCaps)
	r.work(t)
	if st := r.get(t, id); st["status"] != "input_required" {
		t.Fatalf("before the answer: %v", st)
	}
	answer := `"inputResponses":{"a":{"action":"accept","content":{"text":"` + strings.Repeat("<", 100_000) + `"}}}`
	out := r.do(t, nil, "tasks/update", id, `"taskId":"`+id+`",`+answer, askCaps)
	if out.Error != nil {
		t.Fatalf("tasks/update: %+v", out.Error)
	}
	r.work(t)
	if st := r.get(t, id); st["status"] != "completed" || resultText(st) != "100000 <" {
		t.Fatalf("after the answer: %v %q", st["status"], resultText(st))
	}
	// Answers over a task's bound are refused, not retryable, and the
	// task waits on.
	id = r.createWith(t, "ask", `{}`, askCaps)
	r.work(t)
	answer = `"inputResponses":{"a":{"action":"accept","content":{"text":"` + strings.Repeat("<", 140_000) + `"}}}`
	out = r.do(t, nil, "tasks/update", id, `"taskId":"`+id+`",`+answer, askCaps)
	if out.Error == nil || out.Error.Code != -32602 || strings.Contains(string(out.Error.Data), `"retryable":true`) {
		t.Fatalf("an oversized answer: %+v", out.Error)
	}
	if st := r.get(t, id); st["status"] != "input_required" {
		t.Fatalf("after the oversized answer: %v", st["status"])
	}
}

// TestKeyedReadOnlyTaskIsOneTask: nine concurrent calls of a read-only
// task tool with one idempotency key, across two instances sharing the
// claims table, make one task: every answer, once its retries of an
// in-progress refusal are done, names the same task, and one worker is
// dispatched.
func TestKeyedReadOnlyTaskIsOneTask(t *testing.T) {
	guard := func() *claims.Guard {
		return claims.New(claims.NewDynamoDBWith(local.Client(), sortedTable, claims.DynamoDBOptions{SortKey: "sk"}), nil)
	}
	a, b := newSizeRig(t, guard()), newSizeRig(t, guard())
	b.dispatched = a.dispatched // one queue of workers for both instances
	for trial := range 3 {
		key := fmt.Sprintf("one-task-%d-%d", time.Now().UnixNano(), trial)
		ids := make([]string, 9)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				srv := a.srv
				if i%2 == 1 {
					srv = b.srv
				}
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					out := a.do(t, srv, "tools/call", "look", `"name":"look","arguments":{},"idempotencyKey":"`+key+`"`, tasksMeta)
					if out.Error == nil {
						ids[i], _ = out.Result["taskId"].(string)
						return
					}
					if !strings.Contains(string(out.Error.Data), `"retryable":true`) {
						t.Errorf("call %d: %+v", i, out.Error)
						return
					}
				}
			}()
		}
		wg.Wait()
		for i, id := range ids {
			if id == "" || id != ids[0] {
				t.Fatalf("trial %d: call %d named task %q, call 0 %q", trial, i, id, ids[0])
			}
		}
		if n := len(a.dispatched); n != 1 {
			t.Fatalf("trial %d: %d workers dispatched for one key", trial, n)
		}
		a.work(t)
	}
}

// TestLargestRecordFitsAnItem: the largest record the server may write
// (MaxRecordBytes of StoredSize, in characters JSON would escape and
// in many small map entries) is stored in DynamoDB and read back as it
// was; one byte more of it is refused before it is sent.
func TestLargestRecordFitsAnItem(t *testing.T) {
	ctx := context.Background()
	store := &tasks.DynamoDB{Client: local.Client(), Table: sortedTable, SortKey: "sk"}
	now := time.Now()
	rec := &tasks.Record{ID: fmt.Sprintf("largest-%d", now.UnixNano()), Version: 1, Principal: strings.Repeat("\x01", 200), Tool: "t",
		Status: tasks.StatusInputRequired, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour), LeaseUntil: now,
		Responses: map[string]json.RawMessage{}, Requests: map[string]json.RawMessage{}}
	for i := range 2000 {
		k := fmt.Sprintf("k%d", i)
		rec.Responses[k] = json.RawMessage(`{}`)
		rec.Asked = append(rec.Asked, k)
	}
	pad := tasks.MaxRecordBytes - rec.StoredSize() - 2
	rec.Arguments = json.RawMessage(`"` + hostile(pad) + `"`)
	if n := rec.StoredSize(); n != tasks.MaxRecordBytes {
		t.Fatalf("built a record of %d bytes", n)
	}
	if err := store.Create(ctx, rec); err != nil {
		t.Fatalf("the largest record: %v", err)
	}
	got, err := store.Load(ctx, rec.ID)
	if err != nil || string(got.Arguments) != string(rec.Arguments) || len(got.Responses) != 2000 || len(got.Asked) != 2000 || got.Principal != rec.Principal {
		t.Fatalf("read back: %v", err)
	}
	// One byte over the server's bound still fits an item (the bound
	// leaves room for the item's names and numbers); far over it, the
	// store refuses the record before sending it.
	over := *rec
	over.ID += "-over"
	over.Arguments = append(json.RawMessage(`"<`), rec.Arguments[1:]...)
	if over.StoredSize() <= tasks.MaxRecordBytes {
		t.Fatal("not over")
	}
	if err := store.Create(ctx, &over); err != nil {
		t.Fatalf("a record just over the server's bound still fits an item: %v", err)
	}
	huge := *rec
	huge.ID += "-huge"
	huge.Arguments = json.RawMessage(`"` + strings.Repeat("x", 420<<10) + `"`)
	if err := store.Create(ctx, &huge); !errors.Is(err, tasks.ErrTooLarge) {
		t.Fatalf("an item over 400 KB: %v", err)
	}
}

// TestItemSizeAsDynamoDBCounts: ItemSize never counts less than DynamoDB
// does — an item of exactly MaxItemBytes by ItemSize, with numbers,
// maps, lists and Booleans in it, is one DynamoDB takes — and DynamoDB
// refuses an item over its limit with the ValidationException about item
// size that the store classifies as ErrTooLarge.
func TestItemSizeAsDynamoDBCounts(t *testing.T) {
	ctx := context.Background()
	c := local.Client()
	it := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: fmt.Sprint("size-", time.Now().UnixNano())}, "sk": &types.AttributeValueMemberS{Value: "x"},
		"n1": &types.AttributeValueMemberN{Value: "123456789012345678901234567890123456"}, "n2": &types.AttributeValueMemberN{Value: "-0.5"},
		"ok": &types.AttributeValueMemberBOOL{Value: true},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{".a": &types.AttributeValueMemberB{Value: []byte("{}")},
			".b": &types.AttributeValueMemberN{Value: "7"}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "k"}, &types.AttributeValueMemberS{Value: ""}}},
	}
	it["pad"] = &types.AttributeValueMemberB{Value: bytes.Repeat([]byte("<"), tasks.MaxItemBytes-tasks.ItemSize(it)-len("pad"))}
	if n := tasks.ItemSize(it); n != tasks.MaxItemBytes {
		t.Fatalf("built an item of %d", n)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(sortedTable), Item: it}); err != nil {
		t.Fatalf("an item of %d bytes by ItemSize: %v", tasks.MaxItemBytes, err)
	}
	it["more"] = &types.AttributeValueMemberB{Value: bytes.Repeat([]byte("x"), 20<<10)}
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(sortedTable), Item: it})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ValidationException" || !strings.Contains(strings.ToLower(api.ErrorMessage()), "item size") {
		t.Fatalf("an item over the limit: %v", err)
	}
}

// countTasks counts the task items in the template-shaped table.
func countTasks(t *testing.T) int {
	t.Helper()
	p := dynamodb.NewScanPaginator(local.Client(), &dynamodb.ScanInput{TableName: aws.String(sortedTable), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("pk"),
		FilterExpression:     aws.String("begins_with(pk, :t)"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: "task#"}}})
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += int(out.Count)
	}
	return n
}

// echoPuts is a DynamoDB client whose first PutItem of each task is
// sent twice, as the SDK resends a request whose response was lost
// after DynamoDB applied it: the caller sees the second answer.
type echoPuts struct {
	tasks.DynamoAPI
	echoed atomic.Int32
}

func (e *echoPuts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := e.DynamoAPI.PutItem(ctx, in, opts...)
	if err != nil || !strings.Contains(aws.ToString(in.ConditionExpression), "attribute_not_exists") {
		return out, err
	}
	e.echoed.Add(1)
	return e.DynamoAPI.PutItem(ctx, in, opts...)
}

// TestLostCreateAcknowledgement: on DynamoDB, a task call whose item was
// written but whose acknowledgement was lost (the resent write fails its
// condition on the item it made) answers with that task and dispatches
// it once, keyed or not; a keyed retry after it finds the same task.
func TestLostCreateAcknowledgement(t *testing.T) {
	r := newSizeRig(t, nil)
	client := &echoPuts{DynamoAPI: local.Client()}
	r.store.Client = client
	before := countTasks(t)
	for _, key := range []string{"", fmt.Sprint(`,"idempotencyKey":"lost-`, time.Now().UnixNano(), `"`)} {
		out := r.do(t, nil, "tools/call", "look", `"name":"look","arguments":{}`+key, tasksMeta)
		id, _ := out.Result["taskId"].(string)
		if out.Error != nil || id == "" || len(r.dispatched) != 1 {
			t.Fatalf("key %q: %+v, %d dispatched", key, out, len(r.dispatched))
		}
		r.work(t)
		if st := r.get(t, id); st["status"] != "completed" {
			t.Fatalf("key %q: %v", key, st["status"])
		}
		if key != "" {
			again := r.do(t, nil, "tools/call", "look", `"name":"look","arguments":{}`+key, tasksMeta)
			if again.Result["taskId"] != id || again.Result["status"] != "completed" || len(r.dispatched) != 0 {
				t.Fatalf("the keyed retry: %+v", again)
			}
		}
	}
	if n := countTasks(t) - before; n != 2 || client.echoed.Load() != 2 || r.runs.Load() != 2 {
		t.Fatalf("%d tasks stored, %d creates echoed, %d runs; want 2, 2, 2", n, client.echoed.Load(), r.runs.Load())
	}
}
