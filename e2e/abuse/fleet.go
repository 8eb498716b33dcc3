package abuse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
)

// Headers between the load and the fleet's front. They stop at the
// front: the function never sees them.
const (
	// HeaderPrincipal names the caller as a Lambda authorizer would
	// (requestContext.authorizer.lambda.principalId); without it the
	// request is anonymous, known by its source address.
	HeaderPrincipal = "X-Abuse-Principal"
	// HeaderDoor, as DoorStream, sends the request through the streaming
	// door (a function URL's event, answered as a response stream).
	HeaderDoor = "X-Abuse-Door"
	DoorStream = "stream"
	// HeaderRequestID, on an answer, is the front's id of the request:
	// the event's requestContext.requestId, which the function logs as
	// gateway_request_id and the proxy tags the instance's DynamoDB
	// requests with.
	HeaderRequestID = "X-Abuse-Request-Id"
	// HeaderInstance, on an answer, is the instance that served it (i3).
	HeaderInstance = "X-Abuse-Instance"
)

// workerTag is the tag of an instance running a task's worker.
const workerTag = "worker:"

// FleetOptions configure StartFleet.
type FleetOptions struct {
	// RIE and Bootstrap are the emulator and the function binary.
	RIE, Bootstrap string
	// Env is every instance's environment but its DynamoDB endpoint
	// (AWS_ENDPOINT_URL_DYNAMODB, one proxy listener per instance) and
	// its Lambda endpoint (the Invoke API's stand-in).
	Env map[string]string
	// Proxy is the DynamoDB proxy the instances reach the table through.
	Proxy *Proxy
	// Warm instances are started at once; more are started as calls
	// find every instance busy, up to Max, as Lambda scales a function
	// out; past Max a call waits for an idle one.
	Warm, Max int
	// LogDir holds each instance's output (i3.log).
	LogDir string
}

// Fleet is the function as Lambda runs it: instances of the real
// bootstrap, each under its own runtime emulator and serving one
// invocation at a time, behind a front that turns each HTTP request into
// an API Gateway HTTP API event (or a function URL's, for the streaming
// door) and gives it to an idle instance. The function's asynchronous
// invocations of itself (task workers) reach the Invoke API's stand-in,
// which runs each on an idle instance too.
type Fleet struct {
	// URL is the front's MCP endpoint.
	URL string
	// Invoke is the Invoke API's stand-in.
	Invoke *rie.InvokeAPI

	o      FleetOptions
	mu     sync.Mutex
	ready  *sync.Cond
	slots  []*slot
	start  int // instances being started
	made   int // slots numbered so far
	done   bool
	peak   int // most instances busy at once
	front  *http.Server
	invoke *http.Server
	seq    atomic.Uint64
	errs   []error
}

type slot struct {
	idx  int
	emu  *rie.Emulator
	busy bool
	tag  string
	log  string
}

// StartFleet starts the warm instances, the front and the Invoke API's
// stand-in.
func StartFleet(ctx context.Context, o FleetOptions) (*Fleet, error) {
	if o.Max < max(1, o.Warm) {
		return nil, errors.New("abuse: a fleet of at least one instance, Max at least Warm")
	}
	f := &Fleet{o: o}
	f.ready = sync.NewCond(&f.mu)
	invokeLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("abuse: invoke API: %w", err)
	}
	env := map[string]string{}
	for k, v := range o.Env {
		env[k] = v
	}
	env["AWS_ENDPOINT_URL_LAMBDA"] = "http://" + invokeLn.Addr().String()
	f.o.Env = env
	// Lambda retries a failed asynchronous invocation twice; here 3 s
	// and then 6 s later. No event is delivered twice: duplicates are
	// the chaos run's.
	f.Invoke = &rie.InvokeAPI{Invoke: f.invokeWorker, Retries: 2, RetryDelay: 3 * time.Second}
	f.invoke = &http.Server{Handler: f.Invoke, ReadHeaderTimeout: 10 * time.Second}
	go f.invoke.Serve(invokeLn)
	for range o.Warm {
		s, err := f.newSlot(ctx)
		if err != nil {
			f.Close()
			return nil, err
		}
		f.mu.Lock()
		f.slots = append(f.slots, s)
		f.mu.Unlock()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("abuse: front: %w", err)
	}
	f.front = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go f.front.Serve(ln)
	f.URL = "http://" + ln.Addr().String() + "/mcp"
	return f, nil
}

// newSlot starts the instance of the next slot, with its own proxy
// listener and log file.
func (f *Fleet) newSlot(ctx context.Context) (*slot, error) {
	f.mu.Lock()
	idx := f.made
	f.made++
	f.mu.Unlock()
	name := fmt.Sprintf("i%d", idx)
	s := &slot{idx: idx, log: filepath.Join(f.o.LogDir, name+".log")}
	addr, err := f.o.Proxy.Listen(name, func() string { return f.tag(s) })
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(f.o.Env)+1)
	for k, v := range f.o.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, "AWS_ENDPOINT_URL_DYNAMODB=http://"+addr)
	out, err := os.Create(s.log)
	if err != nil {
		return nil, fmt.Errorf("abuse: %w", err)
	}
	// The emulator writes to the file; the child keeps it open.
	defer out.Close()
	if s.emu, err = rie.Start(ctx, rie.Options{RIE: f.o.RIE, Bootstrap: f.o.Bootstrap, Env: env, Output: out, OwnGroup: true}); err != nil {
		return nil, fmt.Errorf("abuse: instance %s: %w", name, err)
	}
	return s, nil
}

func (f *Fleet) tag(s *slot) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return s.tag
}

// acquire returns an idle instance, busy with tag: an idle one, a new
// one when all are busy and the fleet is under Max, or the first to be
// idle.
func (f *Fleet) acquire(ctx context.Context, tag string) (*slot, error) {
	stop := harness.WakeOnDone(ctx, f.ready)
	defer stop()
	f.mu.Lock()
	for {
		if err := ctx.Err(); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		if f.done {
			f.mu.Unlock()
			return nil, errors.New("abuse: the fleet is closed")
		}
		for _, s := range f.slots {
			if !s.busy {
				f.take(s, tag)
				f.mu.Unlock()
				return s, nil
			}
		}
		if len(f.slots)+f.start < f.o.Max {
			f.start++
			f.mu.Unlock()
			s, err := f.newSlot(context.WithoutCancel(ctx))
			f.mu.Lock()
			f.start--
			if err != nil {
				f.errs = append(f.errs, err)
				f.mu.Unlock()
				return nil, err
			}
			f.slots = append(f.slots, s)
			f.take(s, tag)
			f.mu.Unlock()
			return s, nil
		}
		f.ready.Wait()
	}
}

// take marks s busy with tag; f.mu is held.
func (f *Fleet) take(s *slot, tag string) {
	s.busy, s.tag = true, tag
	busy := 0
	for _, x := range f.slots {
		if x.busy {
			busy++
		}
	}
	f.peak = max(f.peak, busy)
}

func (f *Fleet) release(s *slot) {
	f.mu.Lock()
	s.busy, s.tag = false, ""
	f.ready.Broadcast()
	f.mu.Unlock()
}

// ServeHTTP implements http.Handler: one invocation on an idle instance.
func (f *Fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := harness.ReadBody(w, r)
	if !ok {
		return
	}
	id := fmt.Sprintf("abuse-%07d", f.seq.Add(1))
	principal := r.Header.Get(HeaderPrincipal)
	stream := r.Header.Get(HeaderDoor) == DoorStream
	r.Header.Del(HeaderPrincipal)
	r.Header.Del(HeaderDoor)
	source, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// API Gateway appends the address it saw to what the client sent.
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		r.Header.Set("X-Forwarded-For", xff+", "+source)
	} else {
		r.Header.Set("X-Forwarded-For", source)
	}
	payload, err := harness.Event(r, body, id, principal, stream)
	if err == nil {
		payload, err = withSourceIP(payload, source)
	}
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set(HeaderRequestID, id)
	s, err := f.acquire(r.Context(), id)
	if err != nil {
		// The caller went away while it waited: nothing was invoked.
		http.Error(w, "front: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set(HeaderInstance, fmt.Sprintf("i%d", s.idx))
	out, err := harness.Invoke(r, s.emu.Invoke, payload)
	f.release(s)
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusBadGateway)
		return
	}
	harness.Respond(w, out, stream)
}

// withSourceIP sets the event's requestContext.http.sourceIp, which API
// Gateway and function URLs fill with the address of the connection
// they accepted.
func withSourceIP(payload []byte, ip string) ([]byte, error) {
	var ev map[string]any
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	rc, _ := ev["requestContext"].(map[string]any)
	h, _ := rc["http"].(map[string]any)
	if h == nil {
		return nil, errors.New("the event has no requestContext.http")
	}
	h["sourceIp"] = ip
	return json.Marshal(ev)
}

// invokeWorker runs one asynchronous invocation of the function (a
// task's worker, {"mcpTask":"<id>"}) on an idle instance.
func (f *Fleet) invokeWorker(ctx context.Context, payload []byte) ([]byte, error) {
	var ev struct {
		Task string `json:"mcpTask"`
	}
	_ = json.Unmarshal(payload, &ev)
	s, err := f.acquire(ctx, workerTag+ev.Task)
	if err != nil {
		return nil, err
	}
	defer f.release(s)
	return s.emu.Invoke(ctx, payload)
}

// Logs are the instances' log files.
func (f *Fleet) Logs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.slots {
		out = append(out, s.log)
	}
	return out
}

// Size is how many instances were started, and the most that were busy
// at once.
func (f *Fleet) Size() (started, peak int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.slots), f.peak
}

// Errors are the failures to start an instance.
func (f *Fleet) Errors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// Close stops the front, the stand-in and every instance.
func (f *Fleet) Close() {
	if f.front != nil {
		f.front.Close()
	}
	if f.invoke != nil {
		f.invoke.Close()
	}
	f.mu.Lock()
	f.done = true
	slots := append([]*slot(nil), f.slots...)
	f.ready.Broadcast()
	f.mu.Unlock()
	for _, s := range slots {
		s.emu.Stop()
	}
}
