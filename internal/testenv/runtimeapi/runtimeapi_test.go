package runtimeapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the bootstrap of the tests below: with
// RUNTIMEAPI_BOOTSTRAP set it is a runtime that answers each invocation
// as its payload says, writing "first", then, 300 ms later, "second".
func TestMain(m *testing.M) {
	if os.Getenv("RUNTIMEAPI_BOOTSTRAP") != "" {
		bootstrap()
		return
	}
	os.Exit(m.Run())
}

func bootstrap() {
	base := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/invocation/"
	for {
		resp, err := http.Get(base + "next")
		if err != nil {
			os.Exit(1)
		}
		payload, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := resp.Header.Get("Lambda-Runtime-Aws-Request-Id")
		pr, pw := io.Pipe()
		mode := string(payload)
		go func() {
			pw.Write([]byte("first "))
			time.Sleep(300 * time.Millisecond)
			pw.Write([]byte("second"))
			pw.Close()
		}()
		req, _ := http.NewRequest(http.MethodPost, base+id+"/response", pr)
		req.ContentLength = -1
		if mode != "buffered-chunked" {
			req.Header.Set("Lambda-Runtime-Function-Response-Mode", "streaming")
		}
		if mode == "failed" {
			req.Trailer = http.Header{"Lambda-Runtime-Function-Error-Type": {"Runtime.StreamError"}}
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// TestStreamingContract: the stand-in passes a response on as it is
// written only when it is posted in streaming mode; a chunked response
// without the response mode header reaches the invoker whole, once the
// function posted all of it; a stream whose error trailer is set ends in
// ErrStreamFailed after what was written.
func TestStreamingContract(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := Start(Options{Bootstrap: exe, Env: []string{"RUNTIMEAPI_BOOTSTRAP=1"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	for mode, want := range map[string]struct {
		live bool
		err  error
	}{"streaming": {live: true}, "buffered-chunked": {live: false}, "failed": {live: true, err: ErrStreamFailed}} {
		start := time.Now()
		b, err := rt.InvokeStream(context.Background(), []byte(mode))
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		first := make([]byte, 1)
		if _, err := io.ReadFull(b, first); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		firstAt := time.Since(start)
		rest, err := io.ReadAll(b)
		b.Close()
		if live := firstAt < 250*time.Millisecond; live != want.live {
			t.Errorf("%s: the first byte after %v; want it live: %v", mode, firstAt, want.live)
		}
		if got := string(first) + string(rest); got != "first second" || !errors.Is(err, want.err) {
			t.Errorf("%s: %q, %v; want %v", mode, got, err, want.err)
		}
		if want.err != nil && !strings.Contains(err.Error(), "Runtime.StreamError") {
			t.Errorf("%s: the error does not name the trailer's type: %v", mode, err)
		}
	}
}

// TestFaults: without a bootstrap the stand-in serves a runtime in the
// test's process at Addr, and misbehaves as each invocation's Fault says:
// no deadline header, or one that is no number; the answer to a post held
// back until the runtime gives up (the post kept, unanswered); a streamed
// response cut after its first bytes, whose error post is then taken. It
// serves the next invocation after each.
func TestFaults(t *testing.T) {
	rt, err := Start(Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	base := "http://" + rt.Addr() + "/2018-06-01/runtime/invocation/"
	// next is the runtime's side: it takes an invocation and posts
	// body to its path with the headers h.
	type took struct {
		header http.Header
		err    error
	}
	next := func(path string, body io.Reader, h http.Header, timeout time.Duration) <-chan took {
		c := make(chan took, 1)
		go func() {
			resp, err := http.Get(base + "next")
			if err != nil {
				c <- took{err: err}
				return
			}
			resp.Body.Close()
			req, _ := http.NewRequest(http.MethodPost, base+resp.Header.Get("Lambda-Runtime-Aws-Request-Id")+"/"+path, body)
			for k, v := range h {
				req.Header[k] = v
			}
			post, err := (&http.Client{Timeout: timeout}).Do(req)
			if err == nil {
				post.Body.Close()
				if post.StatusCode != http.StatusAccepted {
					err = errors.New(post.Status)
				}
			}
			c <- took{header: resp.Header, err: err}
		}()
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, f := range []Fault{{NoDeadline: true}, {Deadline: "soon"}} {
		c := next("error", strings.NewReader(`{"errorMessage":"no deadline","errorType":"Runtime.InvalidDeadline"}`), nil, 5*time.Second)
		_, err := rt.InvokeWith(ctx, []byte("{}"), f)
		var fe *FunctionError
		if !errors.As(err, &fe) || !strings.Contains(string(fe.Body), "Runtime.InvalidDeadline") {
			t.Errorf("%+v: %v", f, err)
		}
		got := <-c
		if v, ok := got.header["Lambda-Runtime-Deadline-Ms"]; got.err != nil || f.NoDeadline && ok || f.Deadline != "" && (len(v) != 1 || v[0] != f.Deadline) {
			t.Errorf("%+v: the runtime saw %v, %v", f, got.header, got.err)
		}
	}

	c := next("response", strings.NewReader("whole"), nil, 300*time.Millisecond)
	start := time.Now()
	if b, err := rt.InvokeWith(ctx, []byte("{}"), Fault{Stall: time.Minute}); err != nil || string(b) != "whole" {
		t.Fatalf("stalled: %q, %v", b, err)
	}
	if got := <-c; got.err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a post held for a minute was answered: %v", got.err)
	}

	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("first "))
		time.Sleep(100 * time.Millisecond)
		pw.Write([]byte("second"))
		pw.Close()
	}()
	c = next("response", pr, http.Header{"Lambda-Runtime-Function-Response-Mode": {"streaming"}}, 5*time.Second)
	b, err := rt.InvokeStreamWith(ctx, []byte("{}"), Fault{CutAfter: 3})
	if err != nil {
		t.Fatal(err)
	}
	head, err := io.ReadAll(b)
	b.Close()
	if string(head) != "fir" || !errors.Is(err, ErrStreamCut) {
		t.Fatalf("cut: %q, %v", head, err)
	}
	if got := <-c; got.err == nil {
		t.Fatal("the runtime's post of a cut stream succeeded")
	}
	pr.Close()
	cutID := "invocation-4"
	req, _ := http.NewRequest(http.MethodPost, base+cutID+"/error", strings.NewReader(`{"errorMessage":"cut","errorType":"Runtime.ResponseFailed"}`))
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.ResponseFailed")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the error post after the cut: %v %v", resp, err)
	}

	c = next("response", strings.NewReader("fine"), nil, 5*time.Second)
	if b, err := rt.Invoke(ctx, []byte("{}")); err != nil || string(b) != "fine" || (<-c).err != nil {
		t.Fatalf("after the faults: %q, %v", b, err)
	}

	posts := rt.Posts()
	want := []Post{
		{ID: "invocation-1", Kind: "error", Status: 202},
		{ID: "invocation-2", Kind: "error", Status: 202},
		{ID: "invocation-3", Kind: "response", Status: 0},
		{ID: cutID, Kind: "response", Streaming: true, Cut: true},
		{ID: cutID, Kind: "error", ErrorType: "Runtime.ResponseFailed", Status: 202},
		{ID: "invocation-5", Kind: "response", Status: 202},
	}
	if len(posts) != len(want) {
		t.Fatalf("posts: %+v", posts)
	}
	for i, w := range want {
		p := posts[i]
		if p.ID != w.ID || p.Kind != w.Kind || p.Streaming != w.Streaming || p.ErrorType != w.ErrorType || p.Status != w.Status || p.Cut != w.Cut {
			t.Errorf("post %d: %+v, want %+v", i, p, w)
		}
	}
}
