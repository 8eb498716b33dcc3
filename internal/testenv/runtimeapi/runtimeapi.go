// Package runtimeapi is a loopback stand-in for the Lambda Runtime API,
// enough of it to run a function's bootstrap and pass its response on as
// the function writes it: the runtime interface emulator buffers a
// response whole, so it cannot show a response stream's timing, and this
// can. It serves invocation/next, invocation/{id}/response and
// invocation/{id}/error (and init/error) for one bootstrap process, one
// invocation at a time, as Lambda runs an instance. It is a test tool,
// not part of the deployed product.
//
// It holds a function to AWS's streaming contract ("Implementing response
// streaming in a custom runtime", Lambda developer guide): a response is
// passed on as it is written only when the runtime posts it with
// Lambda-Runtime-Function-Response-Mode: streaming; any other response
// reaches the invoker whole, once the function has posted all of it, as
// a buffered response does. A streamed response whose
// Lambda-Runtime-Function-Error-Type trailer is set ends, after what was
// written, in an error naming it (ErrStreamFailed).
package runtimeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
)

// Runtime is one bootstrap process under the stand-in.
type Runtime struct {
	srv     *http.Server
	cmd     *exec.Cmd
	log     *syncbuf.Buffer
	timeout time.Duration

	mu      sync.Mutex // one invocation at a time
	next    chan *invocation
	pending sync.Map // id -> *invocation
	seq     int
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	answer   chan answer   // the function's response, as it starts
	done     chan struct{} // closed when the invoker has read it all
}

type answer struct {
	body        io.Reader
	contentType string
	err         bool // posted to /error
}

// Options configure Start.
type Options struct {
	// Bootstrap is the function binary.
	Bootstrap string
	// Env is added to its environment.
	Env []string
	// Timeout is each invocation's deadline from its start (the function's
	// timeout). Default 30s.
	Timeout time.Duration
}

// Start starts the Runtime API on a free loopback port and the bootstrap
// against it.
func Start(o Options) (*Runtime, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Runtime{next: make(chan *invocation), log: &syncbuf.Buffer{}, timeout: o.Timeout}
	if r.timeout <= 0 {
		r.timeout = 30 * time.Second
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", r.serveNext)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", r.serveResponse(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", r.serveResponse(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		fmt.Fprintf(r.log, "init error: %s\n", b)
		w.WriteHeader(http.StatusAccepted)
	})
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	r.cmd = exec.Command(o.Bootstrap)
	r.cmd.Env = append(append(os.Environ(), o.Env...), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(),
		"AWS_LAMBDA_FUNCTION_NAME=function", "AWS_LAMBDA_FUNCTION_VERSION=$LATEST", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(r.timeout/time.Second)))
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		r.srv.Close()
		return nil, err
	}
	return r, nil
}

// Log returns what the function printed.
func (r *Runtime) Log() string { return r.log.String() }

// Stop ends the bootstrap and the API.
func (r *Runtime) Stop() {
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.srv.Close()
}

func (r *Runtime) serveNext(w http.ResponseWriter, req *http.Request) {
	select {
	case inv := <-r.next:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:function")
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0")
		h.Set("Content-Type", "application/json")
		w.Write(inv.payload)
	case <-req.Context().Done():
	}
}

// serveResponse passes the function's response body to the invoker as it
// arrives, and answers the function once the invoker has read it all.
func (r *Runtime) serveResponse(isErr bool) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		v, ok := r.pending.Load(req.PathValue("id"))
		if !ok {
			http.Error(w, `{"errorMessage":"unknown request id"}`, http.StatusBadRequest)
			return
		}
		inv := v.(*invocation)
		var b io.Reader = &trailerCheck{req: req}
		if isErr || req.Header.Get("Lambda-Runtime-Function-Response-Mode") != "streaming" {
			all, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, `{"errorMessage":"the response body did not arrive"}`, http.StatusBadRequest)
				return
			}
			b = bytes.NewReader(all)
		}
		inv.answer <- answer{body: b, contentType: req.Header.Get("Content-Type"), err: isErr}
		<-inv.done
		w.WriteHeader(http.StatusAccepted)
	}
}

// trailerCheck reads a streamed response's body and, at its end, fails
// it when the runtime reported an error in the trailers.
type trailerCheck struct{ req *http.Request }

func (t *trailerCheck) Read(p []byte) (int, error) {
	n, err := t.req.Body.Read(p)
	if errors.Is(err, io.EOF) {
		if typ := t.req.Trailer.Get("Lambda-Runtime-Function-Error-Type"); typ != "" {
			return n, fmt.Errorf("%w: %s", ErrStreamFailed, typ)
		}
	}
	return n, err
}

// ErrStreamFailed ends a streamed response whose runtime reported, in its
// trailers, that it failed after it began.
var ErrStreamFailed = errors.New("runtimeapi: the function's response stream failed")

// ErrFunction is returned for an invocation the function failed.
var ErrFunction = errors.New("runtimeapi: the function returned an error")

// FunctionError is a failed invocation, with the error document the
// function posted (errorMessage, errorType); it is ErrFunction.
type FunctionError struct{ Body []byte }

func (e *FunctionError) Error() string {
	return ErrFunction.Error() + ": " + strings.TrimSpace(string(e.Body))
}

// Is reports whether target is ErrFunction.
func (e *FunctionError) Is(target error) bool { return target == ErrFunction }

// InvokeStream runs one invocation and returns the function's response
// as it is written, and its content type. The next invocation waits until
// the body is closed.
func (r *Runtime) InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	r.mu.Lock()
	r.seq++
	inv := &invocation{id: "invocation-" + strconv.Itoa(r.seq), payload: payload, deadline: time.Now().Add(r.timeout),
		answer: make(chan answer, 1), done: make(chan struct{})}
	r.pending.Store(inv.id, inv)
	release := func() {
		r.pending.Delete(inv.id)
		r.mu.Unlock()
	}
	select {
	case r.next <- inv:
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
	select {
	case a := <-inv.answer:
		if a.err {
			b, _ := io.ReadAll(a.body)
			close(inv.done)
			release()
			return nil, &FunctionError{Body: b}
		}
		return &body{r: a.body, done: inv.done, release: release}, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// Invoke runs one invocation and returns the whole response.
func (r *Runtime) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	b, err := r.InvokeStream(ctx, payload)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return io.ReadAll(b)
}

type body struct {
	r       io.Reader
	done    chan struct{}
	release func()
	once    sync.Once
}

func (b *body) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *body) Close() error {
	b.once.Do(func() {
		io.Copy(io.Discard, b.r) // the function's write completes, as Lambda's would
		close(b.done)
		b.release()
	})
	return nil
}
