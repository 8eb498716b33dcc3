package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/emfcheck"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// secret stands for argument text: it must never reach a log line unless
// the operator opted in.
const secret = "S3CRET-ARG-TEXT"

const (
	xrayHeader  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	xrayRoot    = "1-5759e988-bd862e3fe1be46a994272793"
	traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

// flakyStore is a claims store whose failures the test chooses.
type flakyStore struct {
	claims.Store
	claimErr, completeErr error
}

func (f *flakyStore) Claim(ctx context.Context, c claims.Claim, now time.Time) (bool, *claims.Record, error) {
	if f.claimErr != nil {
		return false, nil, f.claimErr
	}
	return f.Store.Claim(ctx, c, now)
}

func (f *flakyStore) Complete(ctx context.Context, key, owner string, response []byte, oversize bool, expiresAt time.Time) error {
	if f.completeErr != nil {
		return f.completeErr
	}
	return f.Store.Complete(ctx, key, owner, response, oversize, expiresAt)
}

// failingTransactor is a claims store that can commit writes with a
// completion, but whose every transaction fails as a throttled table's.
type failingTransactor struct{ claims.Store }

func (failingTransactor) CompleteWith(context.Context, string, []claims.Completion, []types.TransactWriteItem) error {
	return fmt.Errorf("%w: %w", claims.ErrUnavailable, awsError("throttled"))
}

// downSealer seals with a local key but cannot open: its key service is
// down.
type downSealer struct{ reqstate.Sealer }

func (downSealer) Open(context.Context, reqstate.Binding, string) ([]byte, error) {
	return nil, fmt.Errorf("%w: kms Decrypt: connection refused", reqstate.ErrUnavailable)
}

type textIn struct {
	Text string `json:"text"`
}

// awsError is what the AWS SDK returns when DynamoDB throttles: an
// operation error around a response error around an API error.
func awsError(msg string) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "UpdateItem", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 400}},
			Err: &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: msg}},
		RequestID: "REQ123",
	}}
}

// newServer is a server whose every tool fails in its own way, quoting
// its argument where it can.
func newServer(store claims.Store, sealer reqstate.Sealer, ob *observe.Observer) *stateless.Server {
	g := claims.New(store, nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Sealer: sealer, Interceptors: []stateless.Interceptor{g.Interceptor()}, Observe: ob.Observe,
	})
	ro := &stateless.ToolAnnotations{ReadOnlyHint: true}
	stateless.AddTool(srv, &stateless.Tool{Name: "panics"}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		panic("bad input: " + in.Text)
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "plain_error", Annotations: ro}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		return nil, struct{}{}, fmt.Errorf("cannot handle %q", in.Text)
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "retry_later", Annotations: ro}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		return nil, struct{}{}, mcperr.NewRetryLater(time.Second, fmt.Errorf("writing %q: %w", in.Text, awsError("throttled on "+in.Text)))
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "slow", Annotations: ro}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		<-ctx.Done()
		return nil, struct{}{}, fmt.Errorf("gave up on %q: %w", in.Text, ctx.Err())
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "dependency", Annotations: ro}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		return nil, struct{}{}, mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, errors.New("upstream refused "+in.Text))
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "ask", Annotations: ro}, func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
		return nil, struct{}{}, &stateless.InputRequired{State: []byte("s")}
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "enlist"}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		if !claims.Enlist(ctx, types.TransactWriteItem{}) {
			return nil, struct{}{}, errors.New("not enlisted")
		}
		return nil, struct{}{}, nil
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "write"}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	srv.AddPrompt(&stateless.Prompt{Name: "broken", Arguments: []stateless.PromptArgument{{Name: "text"}}}, func(ctx context.Context, r *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
		return nil, errors.New("no template for " + r.Arguments["text"])
	})
	return srv
}

// event is an HTTP API event for method, naming target, with params.
func event(method, target, params string, extra map[string]string) []byte {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	h := map[string]string{
		"content-type": "application/json", "accept": "application/json, text/event-stream",
		"mcp-protocol-version": "2026-07-28", "mcp-method": method, "traceparent": traceparent,
	}
	if target != "" {
		h["mcp-name"] = target
	}
	for k, v := range extra {
		h[k] = v
	}
	ev := map[string]any{
		"version": "2.0", "rawPath": "/mcp", "headers": h, "body": body,
		"requestContext": map[string]any{"requestId": "gw-1", "domainName": "x.example", "http": map[string]any{"method": "POST", "path": "/mcp"}},
	}
	b, _ := json.Marshal(ev)
	return b
}

func callTool(name, args string) []byte {
	return event("tools/call", name, `"name":"`+name+`","arguments":`+args, nil)
}

// invoke runs payload through the Lambda handler with an invocation's
// context (request id, X-Ray trace header) and a deadline.
func invoke(t *testing.T, h *apigw.Handler, payload []byte, timeout time.Duration) []byte {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "inv-1"})
	//lint:ignore SA1029 the key aws-lambda-go uses
	ctx = context.WithValue(ctx, "x-amzn-trace-id", xrayHeader)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := h.Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type logBuffer struct{ syncbuf.Buffer }

// lines returns the log lines written since the last call, decoded, and
// checks that each is a valid EMF document.
func (l *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	raw := l.Take()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(raw, "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, line)
		}
		if _, err := emfcheck.Check([]byte(line)); err != nil {
			t.Fatalf("a request line is not valid EMF: %v\n%s", err, line)
		}
		out = append(out, m)
	}
	return out
}

// metric returns the value of metric name in line's EMF, and whether the
// line's metadata declares it.
func metric(t *testing.T, line map[string]any, name string) (float64, bool) {
	t.Helper()
	b, _ := json.Marshal(line)
	ms, err := emfcheck.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// TestEveryServerFaultLogsOneErrorLine drives a fault of every
// server-fault kind of pkg/errors (and the faults that are not refusals:
// a tool's RetryLater failure, a claim that could not be completed)
// through the Lambda handler, and checks that each produces exactly one
// ERROR line with its kind, its cause and the trace ids, and a Faults
// metric of 1.
func TestEveryServerFaultLogsOneErrorLine(t *testing.T) {
	var buf logBuffer
	ob := observe.New(&buf, observe.Options{Namespace: "test", Function: "fn"})
	local := reqstate.NewLocal(nil, nil)
	healthy := newServer(claims.NewMemory(), local, ob)
	tok := sealedState(t, healthy)

	type fault struct {
		srv     *stateless.Server
		payload []byte
		timeout time.Duration
		// cause is what the line says of the cause.
		causeKey, cause string
	}
	faults := map[string]fault{
		mcperr.KindHandlerFailed.String(): {healthy, event("prompts/get", "broken", `"name":"broken","arguments":{"text":"`+secret+`"}`, nil), time.Second, "cause_type", "*errors.errorString"},
		mcperr.KindStoreUnavailable.String(): {newServer(&flakyStore{Store: claims.NewMemory(), claimErr: fmt.Errorf("%w: %w", claims.ErrUnavailable, awsError("throttled"))}, local, ob),
			event("tools/call", "write", `"name":"write","arguments":{"text":"`+secret+`"},"idempotencyKey":"k1"`, nil), time.Second, "aws_error_code", "ProvisionedThroughputExceededException"},
		mcperr.KindTimeout.String():           {healthy, callTool("slow", `{"text":"`+secret+`"}`), 700 * time.Millisecond, "cause_type", "*fmt.wrapError > context.deadlineExceededError"},
		mcperr.KindDependencyFailure.String(): {newServer(claims.NewMemory(), downSealer{local}, ob), event("tools/call", "ask", `"name":"ask","arguments":{},"requestState":"`+tok+`"`, nil), time.Second, "cause", "reqstate: key service unavailable: kms Decrypt: connection refused"},
		mcperr.KindInternal.String():          {healthy, callTool("panics", `{"text":"`+secret+`"}`), time.Second, "panic_type", "string"},
		"retryable":                           {healthy, callTool("retry_later", `{"text":"`+secret+`"}`), time.Second, "aws_request_id", "REQ123"},
		mcperr.KindNotCommitted.String(): {newServer(failingTransactor{claims.NewMemory()}, local, ob),
			event("tools/call", "enlist", `"name":"enlist","arguments":{"text":"x"},"idempotencyKey":"k1"`, nil), time.Second, "aws_error_code", "ProvisionedThroughputExceededException"},
		"complete_failed": {newServer(&flakyStore{Store: claims.NewMemory(), completeErr: fmt.Errorf("%w: %w", claims.ErrUnavailable, awsError("throttled"))}, local, ob),
			event("tools/call", "write", `"name":"write","arguments":{"text":"x"},"idempotencyKey":"k1"`, nil), time.Second, "cause", "finishing the idempotency claim"},
	}
	for _, k := range mcperr.Kinds() {
		if _, ok := faults[k.String()]; k.ServerFault() && !ok {
			t.Errorf("server-fault kind %v has no case in this test", k)
		}
	}
	buf.lines(t) // the sealing call above
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			invoke(t, &apigw.Handler{Server: f.srv}, f.payload, f.timeout)
			lines := buf.lines(t)
			if len(lines) != 1 {
				t.Fatalf("%d lines, want 1: %v", len(lines), lines)
			}
			l := lines[0]
			want := map[string]any{"level": "ERROR", "fault": true, "xray_trace_id": xrayRoot, "traceparent": traceparent, "request_id": "inv-1", "gateway_request_id": "gw-1", "Function": "fn"}
			for k, v := range want {
				if l[k] != v {
					t.Errorf("%s = %v, want %v", k, l[k], v)
				}
			}
			if name != "complete_failed" && l["Outcome"] != name {
				t.Errorf("Outcome = %v, want %v", l["Outcome"], name)
			}
			switch name {
			case "complete_failed":
				// The tool ran and its result went out, unrecorded: the
				// line names the claim by its digest, and the decision is
				// metered.
				if l["ClaimOutcome"] != stateless.ClaimLost || !strings.Contains(fmt.Sprint(l["cause"]), "completion lost: claim claim#") {
					t.Errorf("ClaimOutcome = %v, cause = %v; want %s and the claim's digest", l["ClaimOutcome"], l["cause"], stateless.ClaimLost)
				}
			case mcperr.KindNotCommitted.String():
				if l["ClaimOutcome"] != stateless.ClaimNotCommitted {
					t.Errorf("ClaimOutcome = %v, want %s", l["ClaimOutcome"], stateless.ClaimNotCommitted)
				}
			}
			if s, _ := l[f.causeKey].(string); !strings.Contains(s, f.cause) {
				t.Errorf("%s = %q, want it to contain %q", f.causeKey, s, f.cause)
			}
			if v, ok := metric(t, l, "Faults"); !ok || v != 1 {
				t.Errorf("Faults = %v (declared %v), want 1", v, ok)
			}
			if name == mcperr.KindInternal.String() && !strings.Contains(l["stack"].(string), "observe_test.newServer") {
				t.Errorf("the panic's stack does not name the tool: %v", l["stack"])
			}
		})
	}
}

// sealedState asks the "ask" tool for input and returns the sealed state.
func sealedState(t *testing.T, srv *stateless.Server) string {
	t.Helper()
	out := invoke(t, &apigw.Handler{Server: srv}, callTool("ask", `{}`), time.Second)
	var resp struct{ Body string }
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Result struct {
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || body.Result.RequestState == "" {
		t.Fatalf("no requestState: %v %s", err, resp.Body)
	}
	return body.Result.RequestState
}

// TestNoArgumentTextInLogs sends argument text down every failing path at
// DEBUG and finds it in no line; with ToolErrorText it is there, which
// proves the search would see it.
func TestNoArgumentTextInLogs(t *testing.T) {
	payloads := [][]byte{
		callTool("panics", `{"text":"`+secret+`"}`),
		callTool("plain_error", `{"text":"`+secret+`"}`),
		callTool("retry_later", `{"text":"`+secret+`"}`),
		callTool("dependency", `{"text":"`+secret+`"}`),
		callTool("slow", `{"text":"`+secret+`"}`),
		callTool("plain_error", `{"text":7,"`+secret+`":1}`),
		callTool("write", `{"text":"`+secret+`","`+secret+`":true}`),
		event("prompts/get", "broken", `"name":"broken","arguments":{"text":"`+secret+`"}`, nil),
		event("tools/call", "write", `"name":"write","arguments":{"text":"`+secret+`"},"idempotencyKey":"`+secret+`"`, nil),
		event("tools/call", "write", `"name":"write","arguments":{"text":"other"},"idempotencyKey":"`+secret+`"`, nil),
		event("tools/call", "ask", `"name":"ask","arguments":{},"requestState":"`+secret+`"`, nil),
		event("tools/call", secret, `"name":"`+secret+`","arguments":{}`, nil),
		event(secret, "", `"x":1`, map[string]string{"traceparent": "00-" + secret}),
	}
	for _, optIn := range []bool{false, true} {
		var buf logBuffer
		ob := observe.New(&buf, observe.Options{Level: slog.LevelDebug, ToolErrorText: optIn})
		h := &apigw.Handler{Server: newServer(claims.NewMemory(), reqstate.NewLocal(nil, nil), ob)}
		for _, p := range payloads {
			invoke(t, h, p, 50*time.Millisecond)
		}
		lines := buf.String()
		if n := strings.Count(lines, "\n"); n != len(payloads) {
			t.Errorf("%d lines for %d requests", n, len(payloads))
		}
		if found := strings.Contains(lines, secret); found != optIn {
			t.Errorf("ToolErrorText=%v: argument text found = %v\n%s", optIn, found, lines)
		}
	}
}

// TestMetricsAndLevels checks the optional metrics, the cold start, the
// debug fields, and that a line the level filters out still leaves its
// metrics.
func TestMetricsAndLevels(t *testing.T) {
	var buf logBuffer
	ob := observe.New(&buf, observe.Options{Level: slog.LevelDebug, Namespace: "ns", Function: "fn"})
	h := &apigw.Handler{Server: newServer(claims.NewMemory(), reqstate.NewLocal(nil, nil), ob)}

	invoke(t, h, event("tools/call", "write", `"name":"write","arguments":{"text":"x"},"idempotencyKey":"k"`, nil), time.Second)
	invoke(t, h, event("tools/call", "write", `"name":"write","arguments":{"text":"x"},"idempotencyKey":"k"`, nil), time.Second)
	invoke(t, h, event("tools/list", "", `"x":1`, nil), time.Second)
	lines := buf.lines(t)
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	first, replay, list := lines[0], lines[1], lines[2]
	if v, ok := metric(t, first, "ColdStart"); !ok || v != 1 {
		t.Errorf("the first request is not the cold start: %v", first)
	}
	if _, ok := metric(t, replay, "ColdStart"); ok {
		t.Errorf("a later request is a cold start: %v", replay)
	}
	if first["ClaimOutcome"] != "new" || replay["ClaimOutcome"] != "replay" || replay["Outcome"] != "replay" {
		t.Errorf("claim outcomes %v, %v", first["ClaimOutcome"], replay["ClaimOutcome"])
	}
	if v, ok := metric(t, first, "Claims"); !ok || v != 1 {
		t.Errorf("Claims metric missing: %v", first)
	}
	if _, ok := metric(t, first, "ToolDuration"); !ok || first["Tool"] != "write" {
		t.Errorf("ToolDuration missing: %v", first)
	}
	if _, ok := metric(t, list, "ToolDuration"); ok {
		t.Errorf("tools/list has a ToolDuration: %v", list)
	}
	if v, ok := metric(t, list, "Faults"); !ok || v != 0 {
		t.Errorf("Faults on success = %v %v", v, ok)
	}
	if steps, ok := first["steps"].(map[string]any); !ok || steps["claim_ms"] == nil || steps["handler_ms"] == nil || steps["finish_ms"] == nil {
		t.Errorf("debug steps missing: %v", first["steps"])
	}
	if list["level"] != "INFO" || list["Method"] != "tools/list" || list["Outcome"] != "ok" {
		t.Errorf("list line %v", list)
	}

	// At ERROR, a successful request's line is filtered out, its metrics
	// are not.
	var quiet logBuffer
	ob = observe.New(&quiet, observe.Options{Level: slog.LevelError})
	h = &apigw.Handler{Server: newServer(claims.NewMemory(), reqstate.NewLocal(nil, nil), ob)}
	invoke(t, h, event("tools/list", "", `"x":1`, nil), time.Second)
	lines = quiet.lines(t)
	if len(lines) != 1 || lines[0]["msg"] != "metrics" || lines[0]["level"] != nil || lines[0]["status"] != nil {
		t.Fatalf("filtered request: %v", lines)
	}
	if v, ok := metric(t, lines[0], "Requests"); !ok || v != 1 {
		t.Errorf("Requests = %v %v", v, ok)
	}
}

// TestMethodDimensionIsClosed: a method the peer invents is "other".
func TestMethodDimensionIsClosed(t *testing.T) {
	for in, want := range map[string]string{"tools/call": "tools/call", "": "none", "x<script>": "other", "notifications/initialized": "notification", "tasks/get": "other", "tasks/run": "other",
		"initialize": "initialize", "resources/subscribe": "resources/subscribe", "subscriptions/listen": "subscriptions/listen", "tasks/list": "other", "Tools/Call": "other"} {
		if got := observe.MethodName(in); got != want {
			t.Errorf("MethodName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestXRayTraceID(t *testing.T) {
	for h, want := range map[string]string{
		xrayHeader:                                 xrayRoot,
		"Parent=1;Root=" + xrayRoot:                xrayRoot,
		"Root=1-5759e988-bd862e3fe1be46a9":         "",
		"Root=1-5759e988-BD862E3FE1BE46A994272793": "",
		"Root=\"><script>":                         "",
		"":                                         "",
	} {
		//lint:ignore SA1029 the key aws-lambda-go uses
		ctx := context.WithValue(context.Background(), "x-amzn-trace-id", h)
		if got := observe.XRayTraceID(ctx); got != want {
			t.Errorf("XRayTraceID(%q) = %q, want %q", h, got, want)
		}
	}
}

// downTasks is a task store whose writes fail once the record has an
// owner: a worker can take a task but not record its outcome.
type downTasks struct{ tasks.Store }

func (d downTasks) Replace(ctx context.Context, rec *tasks.Record, prev int64) error {
	if old, err := d.Store.Load(ctx, rec.ID); err == nil && old.Owner != "" {
		return errors.New("connection reset")
	}
	return d.Store.Replace(ctx, rec, prev)
}

// TestWorkerRunLines: a task worker's run is logged and counted as
// tasks/run, its tool under Tool (never under prompt), and a run whose
// outcome could not be recorded is a fault with that outcome, not "ok".
func TestWorkerRunLines(t *testing.T) {
	for _, tc := range []struct {
		store       tasks.Store
		outcome     string
		fault       float64
		level, name string
	}{
		{tasks.NewMemory(), "ok", 0, "INFO", "a run recorded"},
		{downTasks{tasks.NewMemory()}, "task_outcome_lost", 1, "ERROR", "a run whose outcome was lost"},
	} {
		var buf logBuffer
		ob := observe.New(&buf, observe.Options{Namespace: "ns", Function: "fn"})
		ids := make(chan string, 1)
		ext := tasks.New(tasks.Options{Store: tc.store, Dispatch: func(ctx context.Context, id string) error { ids <- id; return nil }})
		srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Observe: ob.Observe,
			DeadlineMargin: 50 * time.Millisecond})
		ext.Install(srv)
		stateless.AddTool(srv, &stateless.Tool{Name: "report", TaskSupport: stateless.TaskSupportRequired},
			func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
				return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("done")}}, struct{}{}, nil
			})
		h := &apigw.Handler{Server: srv}
		ev := bytes.Replace(event("tools/call", "report", `"name":"report","arguments":{"text":"x"}`, nil),
			[]byte(`clientCapabilities\":{}`), []byte(`clientCapabilities\":{\"extensions\":{\"`+stateless.ExtensionTasks+`\":{}}}`), 1)
		invoke(t, h, ev, time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		id := <-ids
		_ = ext.Run(ctx, id)
		cancel()
		// tasks/get is the extension's method, registered on the server:
		// its Method dimension names it.
		invoke(t, h, bytes.Replace(event("tasks/get", id, `"taskId":"`+id+`"`, nil),
			[]byte(`clientCapabilities\":{}`), []byte(`clientCapabilities\":{\"extensions\":{\"`+stateless.ExtensionTasks+`\":{}}}`), 1), time.Second)
		lines := buf.lines(t)
		if len(lines) != 3 {
			t.Fatalf("%s: %d lines", tc.name, len(lines))
		}
		if lines[2]["Method"] != "tasks/get" {
			t.Errorf("%s: tasks/get line: %v", tc.name, lines[2])
		}
		run := lines[1]
		if run["Method"] != "tasks/run" || run["Tool"] != "report" || run["prompt"] != nil || run["Outcome"] != tc.outcome || run["level"] != tc.level {
			t.Errorf("%s: %v", tc.name, run)
		}
		if v, ok := metric(t, run, "Faults"); !ok || v != tc.fault {
			t.Errorf("%s: Faults %v", tc.name, v)
		}
		if _, ok := metric(t, run, "ToolDuration"); !ok {
			t.Errorf("%s: no ToolDuration: %v", tc.name, run)
		}
	}
}
