package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// posted is what the recording Runtime API received for one invocation.
type posted struct {
	path      string
	header    http.Header
	chunked   bool
	body      []byte
	trailer   http.Header
	firstByte time.Duration // from the post's start to its first body byte
}

// recordingAPI is a Runtime API that hands out the given events, one per
// invocation/next, and records every post, as the Lambda developer guide
// describes the API ("Using the Lambda runtime API for custom runtimes").
type recordingAPI struct {
	mu     sync.Mutex
	events [][]byte
	posts  []posted
	done   chan struct{}
}

func (a *recordingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next":
		a.mu.Lock()
		if len(a.events) == 0 {
			a.mu.Unlock()
			close(a.done)
			<-r.Context().Done() // as Lambda, which freezes the instance
			return
		}
		ev := a.events[0]
		a.events = a.events[1:]
		n := len(a.posts)
		a.mu.Unlock()
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-"+strconv.Itoa(n))
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:f")
		w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
		w.Write(ev)
	case r.Method == http.MethodPost:
		start := time.Now()
		p := posted{path: r.URL.Path, header: r.Header.Clone(), chunked: len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked"}
		var buf bytes.Buffer
		one := make([]byte, 1)
		for {
			n, err := r.Body.Read(one)
			if n > 0 && buf.Len() == 0 {
				p.firstByte = time.Since(start)
			}
			buf.Write(one[:n])
			if err != nil {
				break
			}
		}
		p.body, p.trailer = buf.Bytes(), r.Trailer.Clone()
		a.mu.Lock()
		a.posts = append(a.posts, p)
		a.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	default:
		http.NotFound(w, r)
	}
}

func runEvents(t *testing.T, invoke invokeFunc, events ...string) ([]posted, error) {
	t.Helper()
	api := &recordingAPI{done: make(chan struct{})}
	for _, e := range events {
		api.events = append(api.events, []byte(e))
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- serveRuntime(ctx, strings.TrimPrefix(srv.URL, "http://"), invoke, slog.New(slog.DiscardHandler))
	}()
	var err error
	select {
	case <-api.done:
	case err = <-errc:
	}
	cancel()
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.posts, err
}

// TestRuntimeStreamsAsDocumented: a streamed answer is posted with the
// response mode header, chunked, in the HTTP integration response
// content type, each write passed on as written; a stream that fails
// after it began reports the failure in the error trailers; a whole
// answer is posted whole with its content type; a failed invocation is
// posted to its error path with Lambda's error shape; every handler sees
// its request id, function ARN, deadline and trace header.
func TestRuntimeStreamsAsDocumented(t *testing.T) {
	var seen []string
	invoke := func(ctx context.Context, payload []byte, _ func(io.Reader, error)) (io.Reader, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		d, _ := ctx.Deadline()
		seen = append(seen, lc.AwsRequestID+" "+lc.InvokedFunctionArn+" "+ctx.Value(observe.LambdaTraceKey).(string)+" "+strconv.FormatBool(time.Until(d) > 50*time.Second))
		switch string(payload) {
		case "stream", "broken":
			pr, pw := io.Pipe()
			go func() {
				pw.Write([]byte("first "))
				time.Sleep(300 * time.Millisecond)
				if string(payload) == "broken" {
					pw.CloseWithError(errors.New("the store went away"))
					return
				}
				pw.Write([]byte("second"))
				pw.Close()
			}()
			return &streamed{pr}, nil
		case "whole":
			return &buffered{bytes.NewReader([]byte(`{"ok":true}`))}, nil
		}
		return nil, errors.New("no such task")
	}
	posts, err := runEvents(t, invoke, "stream", "broken", "whole", "fails")
	if err != nil {
		t.Fatal(err)
	}
	if len(posts) != 4 {
		t.Fatalf("%d posts", len(posts))
	}
	for i, want := range []string{"req-0", "req-1", "req-2", "req-3"} {
		if !strings.HasPrefix(seen[i], want+" arn:aws:lambda:us-east-1:123456789012:function:f Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1 true") {
			t.Errorf("handler %d saw %q", i, seen[i])
		}
	}
	s := posts[0]
	if s.path != "/2018-06-01/runtime/invocation/req-0/response" || s.header.Get("Lambda-Runtime-Function-Response-Mode") != "streaming" || !s.chunked ||
		s.header.Get("Content-Type") != "application/vnd.awslambda.http-integration-response" || string(s.body) != "first second" ||
		s.trailer.Get("Lambda-Runtime-Function-Error-Type") != "" {
		t.Errorf("the stream: %+v", s)
	}
	if s.firstByte > 200*time.Millisecond {
		t.Errorf("the stream's first write reached the API after %v: not passed on as written", s.firstByte)
	}
	b := posts[1]
	body, _ := base64.StdEncoding.DecodeString(b.trailer.Get("Lambda-Runtime-Function-Error-Body"))
	var fe messages.InvokeResponse_Error
	if b.header.Get("Lambda-Runtime-Function-Response-Mode") != "streaming" || string(b.body) != "first " ||
		b.trailer.Get("Lambda-Runtime-Function-Error-Type") != "errorString" || json.Unmarshal(body, &fe) != nil || fe.Message != "the store went away" {
		t.Errorf("the broken stream: %+v, error body %s", b, body)
	}
	w := posts[2]
	if w.path != "/2018-06-01/runtime/invocation/req-2/response" || w.header.Get("Lambda-Runtime-Function-Response-Mode") != "" ||
		w.header.Get("Content-Type") != "application/json" || string(w.body) != `{"ok":true}` {
		t.Errorf("the whole answer: %+v", w)
	}
	f := posts[3]
	if f.path != "/2018-06-01/runtime/invocation/req-3/error" || f.header.Get("Lambda-Runtime-Function-Error-Type") != "errorString" ||
		json.Unmarshal(f.body, &fe) != nil || fe.Message != "no such task" || fe.Type != "errorString" {
		t.Errorf("the failure: %+v %s", f, f.body)
	}
}

// TestRuntimePanic: a handler that panics fails its invocation as
// Runtime.Panic, and the runtime returns, so that Lambda ends the
// instance.
func TestRuntimePanic(t *testing.T) {
	posts, err := runEvents(t, func(ctx context.Context, payload []byte, _ func(io.Reader, error)) (io.Reader, error) { panic("boom") }, "x", "never")
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("serveRuntime: %v", err)
	}
	if len(posts) != 1 || posts[0].path != "/2018-06-01/runtime/invocation/req-0/error" || posts[0].header.Get("Lambda-Runtime-Function-Error-Type") != "Runtime.Panic" {
		t.Fatalf("posts: %+v", posts)
	}
}

// TestRuntimeAnswersAnOverrunAndGoesOn: a buffered gateway event whose
// tool ignores its context is answered at the tool's deadline, its
// answer posted while the handler runs on; the runtime then serves the
// next invocation, on another goroutine, before the handler returns.
func TestRuntimeAnswersAnOverrunAndGoesOn(t *testing.T) {
	srv := stateless.NewServer(stateless.Implementation{Name: "s", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	release := make(chan struct{})
	defer close(release)
	var returned atomic.Bool
	var invoked, handled atomic.Value // goroutines
	srv.AddTool(&stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), MaxDuration: 200 * time.Millisecond},
		func(context.Context, *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			handled.Store(goroutine())
			<-release
			returned.Store(true)
			return &stateless.CallToolResult{}, nil
		})
	h := &Invocations{Server: srv, Gateway: &apigw.Handler{Server: srv}}
	list, err := os.ReadFile("../../events/tools-list.json")
	if err != nil {
		t.Fatal(err)
	}
	call := stubbornCall(t, "tools-list.json")
	type result struct {
		posts []posted
		err   error
	}
	done := make(chan result, 1)
	go func() {
		posts, err := runEvents(t, func(ctx context.Context, payload []byte, early func(io.Reader, error)) (io.Reader, error) {
			if invoked.Load() == nil {
				invoked.Store(goroutine())
			}
			return h.invokeEarly(ctx, payload, early)
		}, string(call), string(list))
		done <- result{posts, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime did not go on to the next invocation while the overrun handler ran")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if returned.Load() {
		t.Fatal("the stubborn handler returned: nothing was shown")
	}
	if len(r.posts) != 2 {
		t.Fatalf("%d posts, want 2", len(r.posts))
	}
	if invoked.Load() != handled.Load() {
		t.Errorf("the handler ran on goroutine %v, the invocation on %v", handled.Load(), invoked.Load())
	}
	var first, second struct {
		StatusCode int    `json:"statusCode"`
		Body       string `json:"body"`
	}
	if r.posts[0].path != "/2018-06-01/runtime/invocation/req-0/response" || json.Unmarshal(r.posts[0].body, &first) != nil ||
		first.StatusCode != 200 || !strings.Contains(first.Body, `"type":"timeout"`) {
		t.Errorf("the overrun call: %s %s", r.posts[0].path, r.posts[0].body)
	}
	if r.posts[1].path != "/2018-06-01/runtime/invocation/req-1/response" || json.Unmarshal(r.posts[1].body, &second) != nil ||
		second.StatusCode != 200 || !strings.Contains(second.Body, `"name":"stubborn"`) {
		t.Errorf("the next invocation: %s %s", r.posts[1].path, r.posts[1].body)
	}
}

// goroutine is the calling goroutine's number, as runtime.Stack names it.
func goroutine() string {
	b := make([]byte, 64)
	return strings.Fields(string(b[:runtime.Stack(b, false)]))[1]
}
