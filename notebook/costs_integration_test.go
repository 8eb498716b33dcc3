//go:build integration

package notebook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/costs"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/fntest"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/localkms"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
)

// costTable is the table of the cost measurement: its own, so that no
// other test's notes are in its answers.
const costTable = "cost-test"

// The deployment the measurement stands for: a stack named costStack,
// whose function SAM names as it names the template's McpFunction.
const (
	costStack    = "mcp-lambda"
	costFunction = costStack + "-McpFunction-Q2x7Rk9Lm3Vb"
	// costHost is the HTTP API's default domain, as API Gateway names it.
	costHost = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
)

// costInstance is one instance of the function: its emulator, and how
// much of its log has been read.
type costInstance struct {
	name string
	e    *rie.Emulator
	seen int
}

// costRig is functions/fixture on the Lambda path: instances under the
// runtime interface emulator (a and b), the worker instance its task
// invocations reach through the Invoke API's stand-in, and the metering
// proxies in front of DynamoDB Local and local-kms.
type costRig struct {
	t      *testing.T
	ddb    *costs.DynamoDB
	kms    *costs.KMS
	a, b   *costInstance
	worker *costInstance
	invoke *rie.InvokeAPI
	env    []string
	boot   string
	seq    int
}

// costCall is what one invocation cost.
type costCall struct {
	ops     []costs.Op
	kms     map[string]int
	lines   []string // the function's log lines
	answer  []byte   // the answer's body
	headers int      // the bytes of the headers the function set
	result  map[string]any
}

func newCostRig(t *testing.T) *costRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	riePath := fntest.RIEBinary(t)
	local := localDynamoDB(t)
	if err := dynamolocal.CreateTable(ctx, local.Client(), costTable); err != nil {
		t.Fatal(err)
	}
	kmsSrv, key, err := localkms.StartWithKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kmsSrv.Stop)
	r := &costRig{t: t, ddb: costs.NewDynamoDB(local.Endpoint, local.Client()), kms: costs.NewKMS(kmsSrv.Endpoint)}
	t.Cleanup(r.ddb.Close)
	t.Cleanup(r.kms.Close)
	r.invoke = &rie.InvokeAPI{}
	api := http.Server{Handler: r.invoke, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve(ln)
	t.Cleanup(func() { api.Close() })
	// The template's environment (Globals and McpFunction) with its
	// defaults, as Lambda gives it to a 256 MB function of 900 s.
	r.env = []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "TZ=:UTC",
		"AWS_LAMBDA_FUNCTION_NAME=" + costFunction, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256", "AWS_LAMBDA_FUNCTION_TIMEOUT=900",
		"AWS_ENDPOINT_URL_DYNAMODB=" + r.ddb.URL, "AWS_ENDPOINT_URL_KMS=" + r.kms.URL, "AWS_ENDPOINT_URL_LAMBDA=http://" + ln.Addr().String(),
		endpoint.EnvLogLevel + "=info", "MCP_REQUEST_TIMEOUT=28s", endpoint.EnvMetricsNS + "=" + costStack,
		endpoint.EnvClaimsTable + "=" + costTable, "MCP_STATE_KMS_KEY=" + key, endpoint.EnvAllowAnonymous + "=true",
		"MCP_STREAM_EVENTS=rest",
	}
	r.boot = fntest.BuildBootstrap(t, "../functions/fixture", fntest.HostArch)
	start := func(name string) *costInstance {
		e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: r.boot, Env: r.env, OwnGroup: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s's log:\n%s", name, tail(e.Log()))
			}
			e.Stop()
		})
		return &costInstance{name: name, e: e}
	}
	r.a, r.b, r.worker = start("a"), start("b"), start("worker")
	r.invoke.Invoke = func(ctx context.Context, payload []byte) ([]byte, error) {
		return r.worker.e.InvokeWith(ctx, payload, r.invocationHeaders())
	}
	return r
}

// invocationHeaders name the next invocation and give it an X-Ray trace
// header, as Lambda does for a traced function (Tracing: Active).
func (r *costRig) invocationHeaders() http.Header {
	r.seq++
	h := http.Header{}
	h.Set("X-Amzn-RequestId", fmt.Sprintf("3f6e2a1c-0b7d-4e59-9a8c-%012d", r.seq))
	h.Set("X-Amzn-Trace-Id", fmt.Sprintf("Root=1-6a3f0c21-%024x;Parent=%016x;Sampled=1", r.seq, r.seq))
	return h
}

const costMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// call sends one JSON-RPC request through the HTTP API door to instance
// in and returns what it cost. params is the params object's members
// besides _meta.
func (r *costRig) call(in *costInstance, method, name, params string) costCall {
	t := r.t
	t.Helper()
	if params != "" {
		params += ","
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `"_meta":` + costMeta + `}}`
	req, err := http.NewRequest(http.MethodPost, "https://"+costHost+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	r.seq++
	payload, err := rie.NewEvent(req, []byte(body), rie.EventOptions{RequestID: fmt.Sprintf("Kx9vZh7BoAM%05d=", r.seq)})
	if err != nil {
		t.Fatal(err)
	}
	r.drain()
	h := r.invocationHeaders()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := in.e.InvokeWith(ctx, payload, h)
	if err != nil {
		t.Fatalf("%s %s: %v", method, name, err)
	}
	var resp struct {
		StatusCode      int               `json:"statusCode"`
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || resp.IsBase64Encoded {
		t.Fatalf("%s %s: not a buffered proxy response (%v): %.300s", method, name, err, out)
	}
	c := costCall{answer: []byte(resp.Body), lines: in.lines(t, h.Get("X-Amzn-RequestId"))}
	for k, v := range resp.Headers {
		c.headers += len(k) + len(": ") + len(v) + len("\r\n")
	}
	var rpc struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(c.answer, &rpc); err != nil || rpc.Error != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s answered %d: %s", method, name, resp.StatusCode, c.answer)
	}
	c.result = rpc.Result
	c.ops, c.kms = r.take()
	return c
}

// drain reads what an earlier invocation left running wrote (nothing,
// as a rule) so that the next call counts only its own.
func (r *costRig) drain() {
	r.take()
}

func (r *costRig) take() ([]costs.Op, map[string]int) {
	ops, err := r.ddb.Take()
	if err != nil {
		r.t.Fatalf("metering DynamoDB: %v", err)
	}
	return ops, r.kms.Take()
}

// lines waits for the end of invocation id in the instance's log and
// returns the function's lines of it (its JSON lines, not the
// emulator's).
func (in *costInstance) lines(t *testing.T, id string) []string {
	t.Helper()
	end := "END RequestId: " + id
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(in.e.Log()[in.seen:], end) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q in the log:\n%s", in.name, end, tail(in.e.Log()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	log := in.e.Log()
	chunk := log[in.seen:]
	stop := strings.Index(chunk, end)
	in.seen += stop + len(end)
	chunk = chunk[:stop]
	if i := strings.Index(chunk, "START RequestId: "+id); i >= 0 {
		chunk = chunk[i:]
	}
	var out []string
	for _, l := range strings.Split(chunk, "\n") {
		if strings.HasPrefix(l, "{") {
			out = append(out, l)
		}
	}
	return out
}

func TestCostTable(t *testing.T) {
	r := newCostRig(t)
	dump := func(kind string, c costCall) {
		t.Logf("== %s: answer %d + %d headers\n%s", kind, len(c.answer), c.headers, c.answer)
		for _, op := range c.ops {
			t.Logf("   op %+v", op)
		}
		t.Logf("   kms %v", c.kms)
		for _, l := range c.lines {
			t.Logf("   line %d %s", len(l), l)
		}
	}
	// Each instance's first request, its cold start.
	for _, in := range []*costInstance{r.a, r.b} {
		dump("warm-up "+in.name, r.call(in, "server/discover", "", ""))
	}
	dump("discover", r.call(r.a, "server/discover", "", ""))
	dump("tools/list", r.call(r.a, "tools/list", "", ""))
	dump("add unkeyed", r.call(r.a, "tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"Buy milk"}`))
	dump("search", r.call(r.a, "tools/call", "notes_search", `"name":"notes_search","arguments":{"query":"milk"}`))
	first := r.call(r.a, "tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"Call Ada"},"idempotencyKey":"4d0c2c57-3a8e-4a51-9d0f-6c3b9b1f2e01"`)
	dump("add keyed", first)
	dump("add keyed replay", r.call(r.a, "tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"Call Ada"},"idempotencyKey":"4d0c2c57-3a8e-4a51-9d0f-6c3b9b1f2e01"`))
	id, _ := first.result["structuredContent"].(map[string]any)["id"].(string)
	args := `"name":"notes_delete","arguments":{"id":"` + id + `"},"idempotencyKey":"9b7e4f20-5c1d-4e8a-b3f6-2a0d8c7e1f93"`
	round1 := r.call(r.a, "tools/call", "notes_delete", args)
	dump("delete round 1", round1)
	state, _ := round1.result["requestState"].(string)
	dump("delete round 2", r.call(r.b, "tools/call", "notes_delete", args+`,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`))
	create := r.call(r.a, "tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":0}`)
	dump("task create", create)
	r.invoke.Wait()
	ops, kms := r.take()
	dump("task worker", costCall{ops: ops, kms: kms, lines: r.worker.lines(t, fmt.Sprintf("3f6e2a1c-0b7d-4e59-9a8c-%012d", r.seq))})
	taskID, _ := create.result["taskId"].(string)
	dump("tasks/get", r.call(r.a, "tasks/get", taskID, `"taskId":"`+taskID+`"`))
	_ = bytes.Contains
	_ = io.EOF
	_ = os.Getenv
	_ = runtimeapi.Start
}
