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
//
// It can also misbehave, one invocation at a time (Fault), in the ways a
// runtime has to survive: an invocation without a deadline header or with
// one that is no Unix time in milliseconds, an answer to a post held back
// (a stalled Runtime API), a streamed response's connection cut in the
// middle. Every post it receives is kept (Posts), so that a test can see
// what the runtime reported. Without a bootstrap it serves a runtime that
// runs in the test's own process (Addr).
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
	addr    string
	cmd     *exec.Cmd // nil without a bootstrap
	log     *syncbuf.Buffer
	timeout time.Duration
	quit    chan struct{} // closed by Stop: held answers are let go

	mu      sync.Mutex // one invocation at a time
	next    chan *invocation
	pending sync.Map // id -> *invocation
	cut     sync.Map // id -> struct{}: streams cut, whose error post is still taken
	seq     int

	postsMu sync.Mutex
	posts   []Post
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	fault    Fault
	answer   chan answer   // the function's response, as it starts
	done     chan struct{} // closed when the invoker has read it all
}

type answer struct {
	body        io.Reader
	contentType string
	err         bool // posted to /error
}

// Fault is how the stand-in departs from Lambda's Runtime API for one
// invocation. The zero Fault is none.
type Fault struct {
	// NoDeadline delivers the invocation without its
	// Lambda-Runtime-Deadline-Ms header.
	NoDeadline bool
	// Deadline, if set, is delivered as the Lambda-Runtime-Deadline-Ms
	// header instead of the invocation's deadline: a value that is no
	// Unix time in milliseconds, such as "soon".
	Deadline string
	// Stall holds back the stand-in's answer (202) to each post of the
	// invocation's response or error this long, or until the runtime
	// gives up on it: the invoker has the answer, the runtime waits.
	Stall time.Duration
	// CutAfter, if positive, closes the connection of the invocation's
	// streamed response once that many bytes of its body have arrived,
	// without an answer: the invoker reads them, then ErrStreamCut. The
	// stand-in then takes one post to the invocation's error path.
	CutAfter int
}

// Post is one post the stand-in received for an invocation.
type Post struct {
	// ID is the request id in its path.
	ID string
	// Kind is "response" or "error".
	Kind string
	// Streaming reports the Lambda-Runtime-Function-Response-Mode:
	// streaming header.
	Streaming bool
	// ErrorType is its Lambda-Runtime-Function-Error-Type header.
	ErrorType string
	// Body is an error post's body, the error document.
	Body []byte
	// Status is what the stand-in answered; 0 until it answered, and for
	// good when the runtime gave up first or the connection was cut.
	Status int
	// Cut reports that the stand-in cut its connection (Fault.CutAfter).
	Cut bool
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

// Addr is the Runtime API's host and port, the value of
// AWS_LAMBDA_RUNTIME_API: with no Options.Bootstrap, a runtime in the
// test's own process serves the invocations from there.

// Start starts the Runtime API on a free loopback port and the bootstrap,
// if any, against it.
func Start(o Options) (*Runtime, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Runtime{next: make(chan *invocation), log: &syncbuf.Buffer{}, timeout: o.Timeout, addr: ln.Addr().String(), quit: make(chan struct{})}
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
	if o.Bootstrap == "" {
		return r, nil
	}
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

// Addr returns the Runtime API's host and port (see Options).
func (r *Runtime) Addr() string { return r.addr }

// Log returns what the function printed.
func (r *Runtime) Log() string { return r.log.String() }

// Posts returns every post the stand-in received so far, in the order
// they arrived.
func (r *Runtime) Posts() []Post {
	r.postsMu.Lock()
	defer r.postsMu.Unlock()
	return append([]Post(nil), r.posts...)
}

// record keeps p and returns a function that updates it.
func (r *Runtime) record(p Post) func(func(*Post)) {
	r.postsMu.Lock()
	defer r.postsMu.Unlock()
	i := len(r.posts)
	r.posts = append(r.posts, p)
	return func(f func(*Post)) {
		r.postsMu.Lock()
		defer r.postsMu.Unlock()
		f(&r.posts[i])
	}
}

// Stop ends the bootstrap, if any, and the API.
func (r *Runtime) Stop() {
	if r.cmd != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
	close(r.quit)
	r.srv.Close()
}

func (r *Runtime) serveNext(w http.ResponseWriter, req *http.Request) {
	select {
	case inv := <-r.next:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		switch {
		case inv.fault.NoDeadline:
		case inv.fault.Deadline != "":
			h.Set("Lambda-Runtime-Deadline-Ms", inv.fault.Deadline)
		default:
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		}
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:function")
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0")
		h.Set("Content-Type", "application/json")
		w.Write(inv.payload)
	case <-req.Context().Done():
	}
}

// serveResponse passes the function's response body to the invoker as it
// arrives, and answers the function once the invoker has read it all (and
// the invocation's Fault.Stall has passed). A stream whose Fault.CutAfter
// is set is cut there instead, and one post to its error path is then
// taken and kept, with no invoker to pass it to.
func (r *Runtime) serveResponse(isErr bool) http.HandlerFunc {
	kind := "response"
	if isErr {
		kind = "error"
	}
	return func(w http.ResponseWriter, req *http.Request) {
		id := req.PathValue("id")
		streaming := !isErr && req.Header.Get("Lambda-Runtime-Function-Response-Mode") == "streaming"
		update := r.record(Post{ID: id, Kind: kind, Streaming: streaming, ErrorType: req.Header.Get("Lambda-Runtime-Function-Error-Type")})
		answered := func(status int) { update(func(p *Post) { p.Status = status }) }
		var all []byte
		if !streaming {
			var err error
			if all, err = io.ReadAll(req.Body); err != nil {
				answered(http.StatusBadRequest)
				http.Error(w, `{"errorMessage":"the response body did not arrive"}`, http.StatusBadRequest)
				return
			}
			if isErr {
				update(func(p *Post) { p.Body = all })
			}
		}
		if _, ok := r.cut.Load(id); ok && isErr {
			r.cut.Delete(id)
			answered(http.StatusAccepted)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		v, ok := r.pending.Load(id)
		if !ok {
			answered(http.StatusBadRequest)
			http.Error(w, `{"errorMessage":"unknown request id"}`, http.StatusBadRequest)
			return
		}
		inv := v.(*invocation)
		if streaming && inv.fault.CutAfter > 0 {
			r.cutStream(w, req, inv, update)
			return
		}
		var b io.Reader = &trailerCheck{req: req}
		if !streaming {
			b = bytes.NewReader(all)
		}
		inv.answer <- answer{body: b, contentType: req.Header.Get("Content-Type"), err: isErr}
		<-inv.done
		if inv.fault.Stall > 0 {
			select {
			case <-time.After(inv.fault.Stall):
			case <-req.Context().Done(): // the runtime gave up: no answer
				return
			case <-r.quit:
				return
			}
		}
		answered(http.StatusAccepted)
		w.WriteHeader(http.StatusAccepted)
	}
}

// cutStream reads the first Fault.CutAfter bytes of a streamed response,
// closes the connection, and gives the invoker those bytes, then
// ErrStreamCut.
func (r *Runtime) cutStream(w http.ResponseWriter, req *http.Request, inv *invocation, update func(func(*Post))) {
	head := make([]byte, inv.fault.CutAfter)
	n, _ := io.ReadFull(req.Body, head)
	r.cut.Store(inv.id, struct{}{}) // before the runtime can learn of the cut
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
	update(func(p *Post) { p.Cut = true })
	inv.answer <- answer{body: io.MultiReader(bytes.NewReader(head[:n]), failing{ErrStreamCut}), contentType: req.Header.Get("Content-Type")}
}

type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

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

// ErrStreamCut ends a streamed response whose connection the stand-in cut
// (Fault.CutAfter).
var ErrStreamCut = errors.New("runtimeapi: the stand-in cut the function's response stream")

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
// the body is closed. Request ids are "invocation-1", "invocation-2", and
// so on, in the order of the calls.
func (r *Runtime) InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	return r.InvokeStreamWith(ctx, payload, Fault{})
}

// InvokeStreamWith is InvokeStream with the stand-in misbehaving as f for
// this invocation.
func (r *Runtime) InvokeStreamWith(ctx context.Context, payload []byte, f Fault) (io.ReadCloser, error) {
	r.mu.Lock()
	r.seq++
	inv := &invocation{id: "invocation-" + strconv.Itoa(r.seq), payload: payload, deadline: time.Now().Add(r.timeout), fault: f,
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
		close(inv.done) // a post still to come is answered, not held
		release()
		return nil, ctx.Err()
	}
}

// Invoke runs one invocation and returns the whole response.
func (r *Runtime) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return r.InvokeWith(ctx, payload, Fault{})
}

// InvokeWith is Invoke with the stand-in misbehaving as f for this
// invocation.
func (r *Runtime) InvokeWith(ctx context.Context, payload []byte, f Fault) ([]byte, error) {
	b, err := r.InvokeStreamWith(ctx, payload, f)
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
