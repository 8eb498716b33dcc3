package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
)

// A runtime against a misbehaving Runtime API (the stand-in's Faults):
// each failure is that invocation's, posted to its error path where the
// API can still be told, logged once, and the runtime serves the next
// invocation.

// faultRig is this package's runtime, in the test's process, against the
// Runtime API stand-in.
type faultRig struct {
	t    *testing.T
	api  *runtimeapi.Runtime
	logs *syncbuf.Buffer
	done chan struct{} // closed when serveRuntime returned err
	err  error
}

// newFaultRig serves invoke; each invocation's deadline is timeout after
// its start.
func newFaultRig(t *testing.T, timeout time.Duration, invoke invokeFunc) *faultRig {
	t.Helper()
	api, err := runtimeapi.Start(runtimeapi.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	r := &faultRig{t: t, api: api, logs: &syncbuf.Buffer{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(r.done)
		r.err = serveRuntime(ctx, api.Addr(), invoke, slog.New(slog.NewJSONHandler(r.logs, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("the runtime did not return after its context ended")
		}
		api.Stop()
	})
	return r
}

// invoke runs one invocation with the stand-in misbehaving as f, and
// fails the test if the runtime ends meanwhile.
func (r *faultRig) invoke(payload string, f runtimeapi.Fault) (io.ReadCloser, error) {
	r.t.Helper()
	type result struct {
		body io.ReadCloser
		err  error
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := make(chan result, 1)
	go func() {
		b, err := r.api.InvokeStreamWith(ctx, []byte(payload), f)
		c <- result{b, err}
	}()
	select {
	case res := <-c:
		if errors.Is(res.err, context.DeadlineExceeded) {
			r.t.Fatalf("invocation %q (%+v): no answer within 10s", payload, f)
		}
		return res.body, res.err
	case <-r.done:
		r.t.Fatalf("invocation %q (%+v): the runtime ended: %v", payload, f, r.err)
	}
	return nil, nil
}

// whole runs one invocation and reads all of its answer.
func (r *faultRig) whole(payload string, f runtimeapi.Fault) (string, error) {
	r.t.Helper()
	b, err := r.invoke(payload, f)
	if err != nil {
		return "", err
	}
	defer b.Close()
	all, err := io.ReadAll(b)
	return string(all), err
}

// logged returns the runtime's log lines about invocation id.
func (r *faultRig) logged(id string) []map[string]any {
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["request_id"] == id {
			lines = append(lines, m)
		}
	}
	return lines
}

// failureLogged checks that invocation id's failure was logged once, at
// ERROR, with its error type.
func (r *faultRig) failureLogged(id, errType string) map[string]any {
	r.t.Helper()
	lines := r.logged(id)
	if len(lines) != 1 || lines[0]["level"] != "ERROR" || lines[0]["err_type"] != errType {
		r.t.Errorf("log lines of %s: %v; want one at ERROR with err_type %s (the log: %s)", id, lines, errType, r.logs.String())
		return nil
	}
	return lines[0]
}

// errorDoc reads the error document of an invocation the function failed.
func errorDoc(t *testing.T, err error) (errorType, message string) {
	t.Helper()
	var fe *runtimeapi.FunctionError
	var doc struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if !errors.As(err, &fe) || json.Unmarshal(fe.Body, &doc) != nil {
		t.Fatalf("not a failed invocation: %v", err)
	}
	return doc.Type, doc.Message
}

func answerWhole(ctx context.Context, payload []byte, _ func(io.Reader, error)) (io.Reader, error) {
	switch string(payload) {
	case "fails":
		return nil, errors.New("no such task")
	case "runs to its deadline":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &buffered{bytes.NewReader([]byte(`{"ok":true}`))}, nil
}

// TestRuntimeInvalidDeadline: an invocation without a
// Lambda-Runtime-Deadline-Ms header, or with one that is no number, is
// failed without calling the handler, as aws-lambda-go does: posted to its
// error path, logged, and the runtime serves the next invocation. Neither
// the error document nor the log line repeats the header's value.
func TestRuntimeInvalidDeadline(t *testing.T) {
	var called []string
	r := newFaultRig(t, 30*time.Second, func(ctx context.Context, payload []byte, _ func(io.Reader, error)) (io.Reader, error) {
		called = append(called, string(payload))
		return answerWhole(ctx, payload, nil)
	})
	const bad = `12:00 "<tomorrow>"`
	for _, f := range []runtimeapi.Fault{{NoDeadline: true}, {Deadline: bad}} {
		_, err := r.whole("event", f)
		typ, msg := errorDoc(t, err)
		if typ != "Runtime.InvalidDeadline" || strings.Contains(msg, "tomorrow") {
			t.Errorf("%+v: posted %s %q", f, typ, msg)
		}
	}
	if got, err := r.whole("next", runtimeapi.Fault{}); err != nil || got != `{"ok":true}` {
		t.Fatalf("the invocation after: %q, %v", got, err)
	}
	// The runtime logs a failure once it was posted, before it takes the
	// next invocation: the lines are there now.
	for _, id := range []string{"invocation-1", "invocation-2"} {
		r.failureLogged(id, "Runtime.InvalidDeadline")
	}
	if len(called) != 1 || called[0] != "next" {
		t.Errorf("the handler was called for %q", called)
	}
	if strings.Contains(r.logs.String(), "tomorrow") {
		t.Errorf("the log repeats the header's value: %s", r.logs.String())
	}
}

// TestRuntimeLogsFailures: a handler's error is posted to the invocation's
// error path and logged once, at ERROR, with the request id, the error
// type and its message; a successful invocation logs nothing; a handler
// that panics is reported and logged as Runtime.Panic, and the runtime
// then returns, as aws-lambda-go does.
func TestRuntimeLogsFailures(t *testing.T) {
	r := newFaultRig(t, 30*time.Second, func(ctx context.Context, payload []byte, _ func(io.Reader, error)) (io.Reader, error) {
		if string(payload) == "panics" {
			panic("boom")
		}
		return answerWhole(ctx, payload, nil)
	})
	_, err := r.whole("fails", runtimeapi.Fault{})
	if typ, msg := errorDoc(t, err); typ != "errorString" || msg != "no such task" {
		t.Errorf("posted %s %q", typ, msg)
	}
	if got, err := r.whole("fine", runtimeapi.Fault{}); err != nil || got != `{"ok":true}` {
		t.Fatalf("the invocation after: %q, %v", got, err)
	}
	if line := r.failureLogged("invocation-1", "errorString"); line != nil && (line["err"] != "no such task" || line["reported"] != true) {
		t.Errorf("the line: %v", line)
	}
	if lines := r.logged("invocation-2"); len(lines) != 0 {
		t.Errorf("a successful invocation logged %v", lines)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = r.api.Invoke(ctx, []byte("panics"))
	if typ, msg := errorDoc(t, err); typ != "Runtime.Panic" || msg != "boom" {
		t.Errorf("the panic: posted %s %q", typ, msg)
	}
	select {
	case <-r.done:
		if r.err == nil || !strings.Contains(r.err.Error(), "panicked") {
			t.Errorf("the runtime returned %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime went on after a panic")
	}
	if line := r.failureLogged("invocation-3", "Runtime.Panic"); line != nil && (line["err"] != "boom" || !strings.Contains(fmt.Sprint(line["stack"]), "panic(")) {
		t.Errorf("the panic's line: %v", line)
	}
}

// TestRuntimeStalledAPI: a Runtime API that takes the answer but does not
// acknowledge it holds the runtime no longer than the invocation's
// deadline and postGrace; the invocation has failed, is logged, and the
// runtime serves the next one. This holds for a response and for an
// error. A handler that runs to its deadline still has its error posted.
func TestRuntimeStalledAPI(t *testing.T) {
	const timeout = 300 * time.Millisecond
	r := newFaultRig(t, timeout, answerWhole)
	stall := runtimeapi.Fault{Stall: time.Minute}

	start := time.Now()
	_, err := r.whole("runs to its deadline", runtimeapi.Fault{})
	if typ, _ := errorDoc(t, err); typ != "deadlineExceededError" {
		t.Errorf("the handler that ran to its deadline: posted %s", typ)
	}
	if got, err := r.whole("fine", stall); err != nil || got != `{"ok":true}` {
		t.Fatalf("the stalled response: %q, %v", got, err)
	}
	if _, err := r.whole("fails", stall); !errors.Is(err, runtimeapi.ErrFunction) {
		t.Fatalf("the stalled error: %v", err)
	}
	if got, err := r.whole("fine", runtimeapi.Fault{}); err != nil || got != `{"ok":true}` {
		t.Fatalf("the invocation after: %q, %v", got, err)
	}
	if d := time.Since(start); d > 3*(timeout+postGrace)+time.Second {
		t.Errorf("four invocations took %v: the stalls held the runtime", d)
	}
	r.failureLogged("invocation-1", "deadlineExceededError")
	for id, want := range map[string]string{"invocation-2": "Runtime.ResponseFailed", "invocation-3": "errorString"} {
		if line := r.failureLogged(id, want); line != nil && line["reported"] != false {
			t.Errorf("%s: %v", id, line)
		}
	}
	for _, p := range r.api.Posts() {
		if (p.ID == "invocation-2" || p.ID == "invocation-3") && p.Status != 0 {
			t.Errorf("a stalled post was answered: %+v", p)
		}
	}
}

// TestRuntimeCutStream: a streamed response whose connection is cut in the
// middle fails that invocation, not the runtime: the failure is posted to
// the invocation's error path, logged, and the runtime serves the next.
func TestRuntimeCutStream(t *testing.T) {
	r := newFaultRig(t, 30*time.Second, func(ctx context.Context, payload []byte, _ func(io.Reader, error)) (io.Reader, error) {
		if string(payload) != "stream" {
			return answerWhole(ctx, payload, nil)
		}
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte("first "))
			time.Sleep(100 * time.Millisecond)
			pw.Write([]byte("second"))
			pw.Close()
		}()
		return &streamed{pr}, nil
	})
	b, err := r.invoke("stream", runtimeapi.Fault{CutAfter: 3})
	if err != nil {
		t.Fatal(err)
	}
	head, err := io.ReadAll(b)
	b.Close()
	if string(head) != "fir" || !errors.Is(err, runtimeapi.ErrStreamCut) {
		t.Fatalf("the cut stream: %q, %v", head, err)
	}
	if got, err := r.whole("fine", runtimeapi.Fault{}); err != nil || got != `{"ok":true}` {
		t.Fatalf("the invocation after: %q, %v", got, err)
	}
	var reported bool
	for _, p := range r.api.Posts() {
		reported = reported || p.ID == "invocation-1" && p.Kind == "error" && p.ErrorType == "Runtime.ResponseFailed" && p.Status == 202
	}
	if !reported {
		t.Errorf("the cut stream's failure was not posted: %+v", r.api.Posts())
	}
	if line := r.failureLogged("invocation-1", "Runtime.ResponseFailed"); line != nil && line["reported"] != true {
		t.Errorf("the line: %v", line)
	}
}

// TestRuntimeRefusedPost: a post the Runtime API answers with a status
// other than 202 (500 is its "Container error. Non-recoverable state")
// still ends the runtime, as in aws-lambda-go, after the failure is
// logged.
func TestRuntimeRefusedPost(t *testing.T) {
	for _, payload := range []string{"fine", "fails"} {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-1")
				w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
				w.Write([]byte(payload))
				return
			}
			http.Error(w, `{"errorMessage":"Container error"}`, http.StatusInternalServerError)
		}))
		logs := &syncbuf.Buffer{}
		err := serveRuntime(context.Background(), strings.TrimPrefix(api.URL, "http://"), answerWhole, slog.New(slog.NewJSONHandler(logs, nil)))
		api.Close()
		if err == nil || !strings.Contains(err.Error(), "status 500") {
			t.Errorf("%s: serveRuntime returned %v", payload, err)
		}
		if !strings.Contains(logs.String(), `"level":"ERROR","msg":"invocation failed","request_id":"req-1"`) {
			t.Errorf("%s: the log: %s", payload, logs.String())
		}
	}
}
