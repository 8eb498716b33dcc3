//go:build integration

package notebook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/costs"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/fntest"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/localkms"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// deployDoc is the document whose cost tables TestCostTable renders.
const deployDoc = "../docs/deploy.md"

// The deployment the measurement stands for: a stack named costStack,
// whose function SAM names as it names the template's McpFunction, behind
// an HTTP API's default domain.
const (
	costStack    = "mcp-lambda"
	costFunction = costStack + "-McpFunction-Q2x7Rk9Lm3Vb"
	costHost     = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
	// costPolls is how many times the measured task is polled.
	costPolls = 10
)

// TestCostTable measures what each kind of call of the note book costs
// and holds docs/deploy.md's "What it costs" tables to it: the section
// between the markers must be what the measured counts and the prices
// (internal/testenv/costs) render, and `make regen` (-update) rewrites
// it. The expectation is computed here, from this run's counts, never
// stored.
//
// functions/fixture (the note book on the production composition) runs
// under the Lambda runtime interface emulator with the template's
// environment, on instances of its own (two, and a worker its tasks
// reach through the Invoke API's stand-in), against DynamoDB Local and
// local-kms through metering proxies: each DynamoDB request billed as
// DynamoDB bills it, from the sizes of the items it wrote and read. A
// call on the streaming door runs under the Runtime API stand-in, which
// gives the function an X-Ray trace header as Lambda does (the emulator
// gives none). Each kind of call is measured on a warm instance.
func TestCostTable(t *testing.T) {
	r := newCostRig(t)
	rep := r.measure()
	got := rep.Render()
	doc, err := os.ReadFile(deployDoc)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		out, err := costs.ReplaceSection(doc, got)
		if err != nil {
			t.Fatalf("%s: %v", deployDoc, err)
		}
		if err := os.WriteFile(deployDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := costs.Section(doc)
	if err != nil {
		t.Fatalf("%s: %v", deployDoc, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s's cost tables are not what the code's measured counts make: regenerate them with make regen, and review the diff\n%s",
			deployDoc, firstDifference(want, got))
	}
}

// firstDifference shows the first line where the document and the
// measurement differ.
func firstDifference(doc, measured []byte) string {
	a, b := strings.Split(string(doc), "\n"), strings.Split(string(measured), "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d of the section\n  document: %s\n  measured: %s", i+1, x, y)
		}
	}
	return "(the same lines)"
}

// costInstance is one instance of the function under the emulator, and
// how much of its log has been read.
type costInstance struct {
	name string
	e    *rie.Emulator
	ddb  *costs.DynamoDB // its own meter
	seen int
	all  []string // every line the function wrote
}

// costRig is functions/fixture on the Lambda path, metered.
type costRig struct {
	t      *testing.T
	kms    *costs.KMS
	a, b   *costInstance
	worker *costInstance
	invoke *rie.InvokeAPI
	// stream is the instance behind the streaming door, streamDDB its
	// meter.
	stream    *runtimeapi.Runtime
	streamDDB *costs.DynamoDB
	seq       atomic.Int64
	// lastWorker is the request id of the worker's last invocation.
	lastWorker atomic.Value
	catalog    [][]costs.Op // each instance's catalog record
}

func newCostRig(t *testing.T) *costRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	riePath := fntest.RIEBinary(t)
	boot := fntest.BuildBootstrap(t, "../functions/fixture", fntest.HostArch)
	local := localDynamoDB(t)
	table := fmt.Sprint("cost-", time.Now().UnixNano())
	if err := dynamolocal.CreateTable(ctx, local.Client(), table); err != nil {
		t.Fatal(err)
	}
	kmsSrv, key, err := localkms.StartWithKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kmsSrv.Stop)
	// Each instance has a meter of its own: what one does while another
	// answers is not the other's.
	meter := costs.NewDynamoDB(local.Endpoint, local.Client())
	t.Cleanup(meter.Close)
	r := &costRig{t: t, kms: costs.NewKMS(kmsSrv.Endpoint)}
	t.Cleanup(r.kms.Close)
	r.invoke = &rie.InvokeAPI{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	api := &http.Server{Handler: r.invoke, ReadHeaderTimeout: 10 * time.Second}
	go api.Serve(ln)
	t.Cleanup(func() { api.Close() })
	// The template's environment (Globals and McpFunction, its
	// parameters' defaults), as Lambda gives it to the function.
	env := func(m *costs.DynamoDB) []string {
		return []string{
			"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "TZ=:UTC",
			"AWS_LAMBDA_FUNCTION_NAME=" + costFunction, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256", "AWS_LAMBDA_FUNCTION_TIMEOUT=900",
			"AWS_ENDPOINT_URL_DYNAMODB=" + m.URL, "AWS_ENDPOINT_URL_KMS=" + r.kms.URL, "AWS_ENDPOINT_URL_LAMBDA=http://" + ln.Addr().String(),
			endpoint.EnvLogLevel + "=info", "MCP_REQUEST_TIMEOUT=28s", endpoint.EnvMetricsNS + "=" + costStack,
			endpoint.EnvClaimsTable + "=" + table, "MCP_STATE_KMS_KEY=" + key, endpoint.EnvAllowAnonymous + "=true",
			"MCP_STREAM_EVENTS=rest",
		}
	}
	start := func(name string) *costInstance {
		m := meter.Another()
		t.Cleanup(m.Close)
		e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: boot, Env: env(m), OwnGroup: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s's log:\n%s", name, tail(e.Log()))
			}
			e.Stop()
		})
		return &costInstance{name: name, e: e, ddb: m}
	}
	r.a, r.b, r.worker = start("a"), start("b"), start("worker")
	r.invoke.Invoke = func(ctx context.Context, payload []byte) ([]byte, error) {
		h := r.invocation()
		r.lastWorker.Store(h.Get("X-Amzn-RequestId"))
		return r.worker.e.InvokeWith(ctx, payload, h)
	}
	r.streamDDB = meter
	if r.stream, err = runtimeapi.Start(runtimeapi.Options{Bootstrap: boot, Env: env(meter)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the streaming instance's log:\n%s", tail(r.stream.Log()))
		}
		r.stream.Stop()
	})
	return r
}

// invocation names the next invocation, as Lambda does, and gives it an
// X-Ray trace header (which the emulator does not pass on).
func (r *costRig) invocation() http.Header {
	n := r.seq.Add(1)
	h := http.Header{}
	h.Set("X-Amzn-RequestId", fmt.Sprintf("3f6e2a1c-0b7d-4e59-9a8c-%012d", n))
	h.Set("X-Amzn-Trace-Id", fmt.Sprintf("Root=1-6a3f0c21-%024x;Parent=%016x;Sampled=1", n, n))
	return h
}

// costMeta is every request's _meta: a client that answers elicitation
// forms and takes tasks.
const costMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// costCall is what one invocation used, and what it answered.
type costCall struct {
	ops    []costs.Op
	kms    map[string]int
	lines  []string
	answer int // the answer's bytes, AnswerBytes and the function's headers
	result map[string]any
}

// request is a JSON-RPC request to the HTTP API door: method with params
// (the params object's members besides _meta).
func request(t *testing.T, path, method, name, params string) (*http.Request, []byte) {
	t.Helper()
	if params != "" {
		params += ","
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `"_meta":` + costMeta + `}}`)
	req, err := http.NewRequest(http.MethodPost, "https://"+costHost+path, bytes.NewReader(body))
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
	return req, body
}

// call sends one request through the HTTP API door to instance in and
// returns what it used; a JSON-RPC error fails the test.
func (r *costRig) call(in *costInstance, method, name, params string) costCall {
	t := r.t
	t.Helper()
	req, body := request(t, "/mcp", method, name, params)
	payload, err := rie.NewEvent(req, body, rie.EventOptions{RequestID: fmt.Sprintf("Kx9vZh7BoAM%05d=", r.seq.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := r.take(in.ddb); len(left) > 0 {
		t.Fatalf("%s: DynamoDB requests after the last call's answer, before %s %s: %+v", in.name, method, name, left)
	}
	h := r.invocation()
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
	c := costCall{answer: costs.AnswerBytes([]byte(resp.Body)), lines: in.lines(t, h.Get("X-Amzn-RequestId"))}
	// The headers as HTTP/1.1 carries them (API Gateway adds a few of
	// its own, and TLS its framing: not counted).
	for k, v := range resp.Headers {
		c.answer += len(k) + len(": ") + len(v) + len("\r\n")
	}
	var rpc struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &rpc); err != nil || rpc.Error != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s answered %d: %s", method, name, resp.StatusCode, resp.Body)
	}
	c.result = rpc.Result
	c.ops, c.kms = r.take(in.ddb)
	return c
}

// take returns the requests an instance made (through its meter m) since
// the last take, and the KMS requests; an instance's record of its
// catalog, which it makes beside its first request and which belongs to
// no one call, is kept apart.
func (r *costRig) take(m *costs.DynamoDB) ([]costs.Op, map[string]int) {
	ops, err := m.Take()
	if err != nil {
		r.t.Fatalf("metering DynamoDB: %v", err)
	}
	var own []costs.Op
	for _, op := range ops {
		if len(op.Items) == 1 && op.Items[0].Prefix == "catalog#" {
			r.catalog = append(r.catalog, []costs.Op{op})
			continue
		}
		own = append(own, op)
	}
	return own, r.kms.Take()
}

// lines waits for the end of invocation id in the instance's log and
// returns the lines the function wrote in it (its JSON lines, not the
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
	chunk := in.e.Log()[in.seen:]
	stop := strings.Index(chunk, end)
	in.seen += stop + len(end)
	chunk = chunk[:stop]
	if i := strings.Index(chunk, "START RequestId: "+id); i >= 0 {
		chunk = chunk[i:]
	} else {
		t.Fatalf("%s: no start of %s in the log", in.name, id)
	}
	var out []string
	for _, l := range strings.Split(chunk, "\n") {
		if strings.HasPrefix(l, "{") {
			out = append(out, l)
		}
	}
	in.all = append(in.all, out...)
	return out
}

// row turns a call into a row of the tables, its lines counted with the
// trace id Lambda would have given them.
func (r *costRig) row(name string, c costCall, trace int) costs.Call {
	r.t.Helper()
	row := costs.Call{Name: name, Ops: c.ops, KMS: c.kms, AnswerBytes: c.answer,
		Invocations: costs.InvocationsPerCall, GatewayRequests: costs.GatewayRequestsPerCall}
	for _, l := range c.lines {
		n, err := costs.LineBytes(l, trace)
		if err != nil {
			r.t.Fatalf("%s: %v", name, err)
		}
		row.LogBytes += n
	}
	if len(c.lines) == 0 {
		r.t.Fatalf("%s: the function wrote no line", name)
	}
	return row
}

// traceMember is the member the X-Ray trace id adds to a line.
var traceMember = regexp.MustCompile(`,"xray_trace_id":"1-[0-9a-f]{8}-[0-9a-f]{24}"`)

// streamCall sends one request through the streaming door (a REST API
// event, answered as a response stream) and returns what it used and the
// lines the function wrote.
func (r *costRig) streamCall(method, name, params string) ([]costs.Op, []string) {
	t := r.t
	t.Helper()
	req, body := request(t, "/"+rie.RESTStage+"/mcp", method, name, params)
	payload, err := rie.NewRESTEvent(req, body, rie.EventOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := r.take(r.streamDDB); len(left) > 0 {
		t.Fatalf("DynamoDB requests after the last call's answer, before the streaming door's %s: %+v", method, left)
	}
	before := len(r.stream.Log())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := r.stream.InvokeStream(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(out)
	out.Close()
	if err != nil || !bytes.Contains(answer, []byte(`"result":{`)) {
		t.Fatalf("the streaming door's %s (%v): %q", method, err, answer)
	}
	// The request line is the invocation's last.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.stream.Log()[before:], `"msg":"request"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no request line from the streaming instance:\n%s", tail(r.stream.Log()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	var lines []string
	for _, l := range strings.Split(r.stream.Log()[before:], "\n") {
		if strings.HasPrefix(l, "{") {
			lines = append(lines, l)
		}
	}
	ops, _ := r.take(r.streamDDB)
	return ops, lines
}

// measure makes the calls and returns what they used.
func (r *costRig) measure() *costs.Report {
	t := r.t
	tmpl, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep := &costs.Report{}
	if rep.Template, err = costs.ParseTemplate(tmpl); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}

	// The streaming door first: it tells what a trace id adds to a line
	// (each line of a traced invocation carries it). Its first call
	// takes its caller's stream slot for the first time, so the second
	// is measured.
	search := `"name":"notes_search","arguments":{"query":"milk"}`
	r.streamCall("tools/call", "notes_search", search)
	ops, lines := r.streamCall("tools/call", "notes_search", search)
	for _, op := range ops {
		if len(op.Items) > 0 && op.Items[0].Prefix == "slots#streams#" {
			rep.Stream = append(rep.Stream, op)
		}
	}
	if len(rep.Stream) == 0 {
		t.Fatalf("a call on the streaming door wrote no stream slot: %+v", ops)
	}
	for _, l := range lines {
		m := traceMember.FindString(l)
		if m == "" {
			t.Fatalf("a line of a traced invocation without its trace id: %s", l)
		}
		rep.TraceBytes = len(m)
	}
	for _, in := range []*costInstance{r.a, r.b} {
		// Each instance's first request, its cold start.
		r.call(in, "server/discover", "", "")
	}

	rows := map[string]costs.Call{}
	add := func(key, name string, c costCall) costCall {
		rows[key] = r.row(name, c, rep.TraceBytes)
		rep.Calls = append(rep.Calls, rows[key])
		return c
	}
	add("discover", "`server/discover`", r.call(r.a, "server/discover", "", ""))
	add("list", "`tools/list`", r.call(r.a, "tools/list", "", ""))
	add("add", "`notes_add` without a key", r.call(r.a, "tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"Buy milk"}`))
	found := add("search", "`notes_search` (read-only), one note found", r.call(r.a, "tools/call", "notes_search", search))
	if notes, _ := structuredOf(found)["notes"].([]any); len(notes) != 1 {
		t.Fatalf("notes_search found %v", found.result)
	}
	addKeyed := `"name":"notes_add","arguments":{"text":"Call Ada"},"idempotencyKey":"4d0c2c57-3a8e-4a51-9d0f-6c3b9b1f2e01"`
	first := add("first", "`notes_add` keyed, first (one step: `EnlistedEffectsOnly`)", r.call(r.a, "tools/call", "notes_add", addKeyed))
	replay := add("replay", "`notes_add` keyed, replay", r.call(r.a, "tools/call", "notes_add", addKeyed))
	if id := structuredOf(first)["id"]; id == nil || structuredOf(replay)["id"] != id || !replayed(replay) || replayed(first) {
		t.Fatalf("the keyed add %v and its replay %v", first.result, replay.result)
	}

	// A confirmed delete, sealed on a and confirmed on b: what KMS costs
	// an instance (a's first seal, b's first opening of a's data key).
	asked, confirmed := r.delete(r.a, r.b, structuredOf(first)["id"].(string), "9b7e4f20-5c1d-4e8a-b3f6-2a0d8c7e1f93")
	rep.FirstSeal, rep.ForeignOpen = asked.kms, confirmed.kms
	if len(rep.FirstSeal) == 0 || len(rep.ForeignOpen) == 0 {
		t.Fatalf("KMS: first seal %v, state from another instance %v", rep.FirstSeal, rep.ForeignOpen)
	}
	// The same, both rounds on a warm instance: the rows. The note is
	// added as the first one was, which must cost the same.
	again := r.call(r.a, "tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"Call Bob"}`)
	r.same("a second `notes_add` without a key", rows["add"], r.row(rows["add"].Name, again, rep.TraceBytes))
	asked, confirmed = r.delete(r.a, r.a, structuredOf(again)["id"].(string), "0e5d8a31-7f2c-4b96-8d1e-3c4a5b6f7a80")
	add("ask", "`notes_delete` keyed, asking for its confirmation", asked)
	add("confirm", "`notes_delete` keyed, confirmed (claimed first; the state single-use)", confirmed)

	// What the rest of the note book writes to CloudWatch, for the
	// series: its lists, its prompt, its resource, a completion, the
	// digest.
	r.call(r.a, "resources/list", "", "")
	r.call(r.a, "resources/templates/list", "", "")
	r.call(r.a, "prompts/list", "", "")
	r.call(r.a, "prompts/get", "summarize_notes", `"name":"summarize_notes","arguments":{"focus":"todo"}`)
	r.call(r.a, "resources/read", readme.URI, `"uri":"`+readme.URI+`"`)
	r.call(r.a, "completion/complete", "summarize_notes", `"ref":{"type":"ref/prompt","name":"summarize_notes"},"argument":{"name":"focus","value":"t"}`)
	r.call(r.a, "tools/call", "notes_digest", `"name":"notes_digest","arguments":{}`)

	// A task: the first one of a caller takes its task slot for the
	// first time, and starts the worker's instance; the second is
	// measured, then polled once it has ended.
	r.task()
	create, worker, id := r.task()
	var polls []costs.Call
	for range costPolls {
		c := r.call(r.a, "tasks/get", id, `"taskId":"`+id+`"`)
		if c.result["status"] != "completed" {
			t.Fatalf("the task: %v", c.result)
		}
		polls = append(polls, r.row("each `tasks/get`", c, rep.TraceBytes))
	}
	for _, p := range polls[1:] {
		r.same("a poll", polls[0], p)
	}
	made := r.row("`notes_export` as a task: its `tools/call`", create, rep.TraceBytes)
	run := r.row("its worker (`tasks/run`)", worker, rep.TraceBytes)
	run.GatewayRequests = 0 // an asynchronous invocation: no door
	for _, p := range []costs.Call{made, run, polls[0]} {
		p.Part = true
		rep.Calls = append(rep.Calls, p)
	}
	rep.Calls = append(rep.Calls, costs.Compose(fmt.Sprintf("a `notes_export` task polled %d times: its call, its worker, the polls", costPolls),
		append([]costs.Call{made, run}, polls...)...))

	// Every instance recorded its catalog once.
	for _, m := range []*costs.DynamoDB{r.a.ddb, r.b.ddb, r.worker.ddb, r.streamDDB} {
		if left, _ := r.take(m); len(left) > 0 {
			t.Errorf("DynamoDB requests after the last call's answer: %+v", left)
		}
	}
	if len(r.catalog) != 4 {
		t.Errorf("%d catalog records from 4 instances: %v", len(r.catalog), r.catalog)
	}
	rep.Catalog = r.catalog[0]

	var all []string
	for _, in := range []*costInstance{r.a, r.b, r.worker} {
		all = append(all, in.all...)
	}
	if rep.Series, err = costs.SeriesOf(all); err != nil {
		t.Fatal(err)
	}
	rep.SeriesCalls = "the calls above, the note book's lists, its prompt, resource and completion, and `notes_digest`, with their ok outcomes"
	return rep
}

// delete deletes the note id with a keyed, confirmed notes_delete: asked
// on one instance and confirmed on another (or the same).
func (r *costRig) delete(ask, confirm *costInstance, id, key string) (asked, confirmed costCall) {
	args := `"name":"notes_delete","arguments":{"id":"` + id + `"},"idempotencyKey":"` + key + `"`
	asked = r.call(ask, "tools/call", "notes_delete", args)
	state, _ := asked.result["requestState"].(string)
	if asked.result["resultType"] != "input_required" || state == "" {
		r.t.Fatalf("notes_delete asked nothing: %v", asked.result)
	}
	confirmed = r.call(confirm, "tools/call", "notes_delete", args+`,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`)
	if structuredOf(confirmed)["deleted"] != true {
		r.t.Fatalf("the confirmed notes_delete: %v", confirmed.result)
	}
	return asked, confirmed
}

// task starts a notes_export task of no duration on a and waits for its
// worker: its call, its worker's invocation, and its id.
func (r *costRig) task() (create, worker costCall, id string) {
	t := r.t
	create = r.call(r.a, "tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":0}`)
	id, _ = create.result["taskId"].(string)
	if create.result["resultType"] != "task" || id == "" {
		t.Fatalf("notes_export: %v", create.result)
	}
	r.invoke.Wait()
	if runs, failed := r.invoke.Delivered(); failed != 0 {
		t.Fatalf("%d of %d worker invocations failed", failed, runs)
	}
	worker.ops, worker.kms = r.take(r.worker.ddb)
	last, _ := r.lastWorker.Load().(string)
	worker.lines = r.worker.lines(t, last)
	return create, worker, id
}

// same fails the test when two measurements of one kind of call differ:
// the tables must come out the same in every run.
func (r *costRig) same(what string, a, b costs.Call) {
	r.t.Helper()
	wa, qa, ha, hqa := a.Units()
	wb, qb, hb, hqb := b.Units()
	if wa != wb || qa != qb || ha != hb || hqa != hqb || a.LogBytes != b.LogBytes || a.AnswerBytes != b.AnswerBytes || !maps.Equal(a.KMS, b.KMS) || len(a.Ops) != len(b.Ops) {
		r.t.Errorf("%s does not cost what the first did: %+v, then %+v", what, a, b)
	}
}

func structuredOf(c costCall) map[string]any {
	m, _ := c.result["structuredContent"].(map[string]any)
	return m
}

func replayed(c costCall) bool {
	meta, _ := c.result["_meta"].(map[string]any)
	return meta[stateless.MetaReplay] == true
}
