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
