package abuse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// countedMethods are the methods the calls quota counts
// (ratelimit.CallMethods).
var countedMethods = []string{"tools/call", "prompts/get", "resources/read"}

// Actor is one caller of the run: honest or hostile, named on the
// fleet's front by a Lambda authorizer's principal or anonymous, and
// connecting from a loopback address of its own (all of 127/8 is
// loopback), which is what an anonymous caller is charged by.
type Actor struct {
	Name    string
	Hostile bool
	// Principal is the authorizer's principal id on the fleet's front
	// (the function's principal "authorizer:<id>"); "" is anonymous.
	Principal string
	// Addr is the address the actor's connections come from.
	Addr string
	// Forge, if set, is the X-Forwarded-For every request of the actor
	// carries: another caller's address, which the endpoint must not
	// charge.
	Forge string
	// QuotaKey is whom the endpoint should charge for the actor's calls
	// (stateless.Call.QuotaKey).
	QuotaKey string

	target *Target
	index  int
	client *http.Client
	seq    atomic.Uint64
}

// newActor adds an actor to target t, connecting from addr.
func newActor(t *Target, name string, hostile bool, principal, addr string) *Actor {
	a := &Actor{Name: name, Hostile: hostile, Principal: principal, Addr: addr, target: t, index: len(t.Actors)}
	if principal != "" {
		a.QuotaKey = "authorizer:" + principal
	} else {
		a.QuotaKey = "anonymous@" + addr
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: 10 * time.Second}
	a.client = &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}}
	t.Actors = append(t.Actors, a)
	return a
}

// Role is "hostile" or "honest".
func (a *Actor) Role() string {
	if a.Hostile {
		return "hostile"
	}
	return "honest"
}

// Call is one request to send.
type Call struct {
	Method string
	// Name is the Mcp-Name header: the tool, or the task id.
	Name   string
	Params map[string]any
	// Tasks declares the tasks extension (notes_export needs it).
	Tasks bool
	// Stream sends it through the fleet's streaming door.
	Stream bool
	// HangUp, if set, closes the connection that long after sending, as
	// a client that gives up does.
	HangUp time.Duration
}

// Exchange is one request and what came of it.
type Exchange struct {
	Actor *Actor
	// Behaviour is what the actor was doing (search, flood, hang-up, ...).
	Behaviour    string
	Method, Name string
	Stream       bool
	// Trace is the W3C trace id the request carried in traceparent,
	// which the function logs: it finds the request's log line.
	Trace string
	// RequestID and Instance are the fleet's front's.
	RequestID, Instance string
	Sent, Done          time.Time
	Status              int
	Err                 error
	// Abandoned is a request whose client hung up before the answer
	// (Call.HangUp).
	Abandoned bool
	Result    map[string]any
	Error     *harness.RPCError
}

// Class is how the run reads an answer.
type Class string

// The classes of exchanges.
const (
	OK        Class = "ok"         // a result that is no tool error
	Refused   Class = "refused"    // a JSON-RPC error
	ToolError Class = "tool-error" // a result with isError
	HungUp    Class = "hung-up"    // the client closed the connection first
	Transport Class = "transport"  // no HTTP answer
	Gateway   Class = "gateway"    // an HTTP error or no JSON-RPC answer
)

// Class reads the exchange.
func (e *Exchange) Class() Class {
	switch {
	case e.Abandoned:
		return HungUp
	case e.Err != nil && e.Status == 0:
		return Transport
	case e.Err != nil, e.Status >= 400, e.Result == nil && e.Error == nil:
		return Gateway
	case e.Error != nil:
		return Refused
	case e.Result["isError"] == true:
		return ToolError
	}
	return OK
}

// Counted reports whether the calls quota counts the request's method.
func (e *Exchange) Counted() bool { return slices.Contains(countedMethods, e.Method) }

// ErrorType is a refusal's error.data.type ("rate_limited"), or "".
func (e *Exchange) ErrorType() string {
	if e.Error == nil {
		return ""
	}
	t, _ := e.Error.Data["type"].(string)
	return t
}

// TaskID is the taskId of an answer that started a task, or "".
func (e *Exchange) TaskID() string {
	if e.Result["resultType"] != "task" {
		return ""
	}
	id, _ := e.Result["taskId"].(string)
	return id
}

// Latency is how long the answer took.
func (e *Exchange) Latency() time.Duration { return e.Done.Sub(e.Sent) }

// Describe is a short account of the exchange for reports.
func (e *Exchange) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", e.Actor.Name, e.Behaviour, e.Method)
	if e.Name != "" {
		fmt.Fprintf(&b, " %s", e.Name)
	}
	fmt.Fprintf(&b, ": %s", e.Class())
	r := harness.Reply{Status: e.Status, RequestID: e.RequestID, Instance: e.Instance, Err: e.Err, Error: e.Error}
	if !r.Describe(&b) && e.Result["isError"] == true {
		c, _ := json.Marshal(e.Result["content"])
		fmt.Fprintf(&b, " content=%.200s", c)
	}
	fmt.Fprintf(&b, " trace=%s", e.Trace)
	return b.String()
}

// Recorder keeps every exchange of a run.
type Recorder struct {
	run     uint32
	mu      sync.Mutex
	all     []*Exchange
	byTrace map[string]*Exchange
}

// NewRecorder returns a recorder whose trace ids begin with run.
func NewRecorder(run uint32) *Recorder {
	return &Recorder{run: run, byTrace: map[string]*Exchange{}}
}

// Exchanges returns every exchange so far.
func (r *Recorder) Exchanges() []*Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// ByTrace finds the exchange that sent trace id t.
func (r *Recorder) ByTrace(t string) *Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byTrace[t]
}

// Do sends c as a, for behaviour, and records the exchange.
func (r *Recorder) Do(ctx context.Context, a *Actor, behaviour string, c Call) *Exchange {
	seq := a.seq.Add(1)
	e := &Exchange{Actor: a, Behaviour: behaviour, Method: c.Method, Name: c.Name, Stream: c.Stream,
		Trace: fmt.Sprintf("%08x%04x%04x%016x", r.run, a.target.index, a.index, seq)}
	r.mu.Lock()
	r.all = append(r.all, e)
	r.byTrace[e.Trace] = e
	r.mu.Unlock()
	body, err := harness.Encode(seq, c.Method, c.Params, harness.Caps{Tasks: c.Tasks})
	if err != nil {
		e.Err = err
		return e
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var hungUp atomic.Bool
	if c.HangUp > 0 {
		t := time.AfterFunc(c.HangUp, func() {
			hungUp.Store(true)
			cancel()
		})
		defer t.Stop()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.target.URL, bytes.NewReader(body))
	if err != nil {
		e.Err = err
		return e
	}
	h := req.Header
	harness.SetHeaders(h, c.Method, c.Name)
	h.Set("Traceparent", "00-"+e.Trace+"-"+fmt.Sprintf("%016x", seq)+"-01")
	if a.Principal != "" {
		h.Set(HeaderPrincipal, a.Principal)
	}
	if a.Forge != "" {
		h.Set("X-Forwarded-For", a.Forge)
	}
	if c.Stream {
		h.Set(HeaderDoor, DoorStream)
	}
	e.Sent = time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		e.Done, e.Err, e.Abandoned = time.Now(), err, hungUp.Load()
		return e
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	e.Done, e.Status = time.Now(), resp.StatusCode
	e.RequestID, e.Instance = resp.Header.Get(HeaderRequestID), resp.Header.Get(HeaderInstance)
	if err != nil {
		e.Err, e.Abandoned = err, hungUp.Load()
		return e
	}
	if m, err := harness.Decode(resp.Header.Get("Content-Type"), raw); err == nil {
		e.Result, e.Error = m.Result, m.Error
	} else if e.Status < 400 {
		e.Err = errors.New("the answer is no JSON-RPC response: " + fmt.Sprintf("%.200q", raw))
	}
	return e
}
