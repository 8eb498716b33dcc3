// Package chaos runs the function as a small fleet of Lambda instances
// (the real bootstrap, each under its own runtime emulator) against
// DynamoDB Local and local-kms, drives it with a bounded MCP load while
// faults are injected — instances killed mid-call, DynamoDB requests
// delayed and dropped, responses lost after DynamoDB applied them,
// DynamoDB Local restarted, local-kms stopped for a while — and then
// checks from the table and the answers that every keyed call ran
// exactly once, no acknowledged write was lost and every single-use
// state was redeemed at most once (docs/chaos.md). It is a test tool,
// not part of the deployed product.
package chaos

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// Action is what a fault rule does to a request it matches.
type Action int

// The actions of a fault rule.
const (
	// Delay waits Rule.Delay, then forwards the request.
	Delay Action = iota + 1
	// DropRequest closes the connection without forwarding the request:
	// the service never saw it.
	DropRequest
	// DropResponse forwards the request, reads the service's answer, and
	// closes the connection without answering: the service applied the
	// write, the caller cannot know (a lost write acknowledgement).
	DropResponse
	// DelayResponse forwards the request, then waits Rule.Delay before
	// answering: the write is applied, its acknowledgement late.
	DelayResponse
)

func (a Action) String() string {
	switch a {
	case Delay:
		return "delay"
	case DropRequest:
		return "drop-request"
	case DropResponse:
		return "drop-response"
	case DelayResponse:
		return "delay-response"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Rule is one fault: the requests it matches (all of Ops, Contains and
// Tag that are set), how often it fires, and what it does.
type Rule struct {
	// Name counts the rule's injections (Proxy.Counts); rules may share
	// one.
	Name string
	// Ops are DynamoDB operations (the X-Amz-Target header's part after
	// the dot, such as TransactWriteItems); empty matches any.
	Ops []string
	// Contains, if set, must occur in the request body: `":completed"`
	// picks the claim-completing write among the UpdateItem and
	// TransactWriteItems calls.
	Contains string
	// Match, if set, must accept the request body (IsTaskOutcome picks
	// the writes of a task's outcome).
	Match func(body []byte) bool
	// Tag, if set, is the listener the request came through (one per
	// instance slot): a rule for one instance.
	Tag string
	// Probability that a matching request is hit, in (0, 1]; 0 means 1.
	Probability float64
	// Every, if above 1, hits one in Every of the matching requests (the
	// first, the Every+1-th, ...) rather than by chance: a rule that must
	// fire in a run that makes few such requests, perhaps only one.
	Every int
	// Limit is how many requests the rule hits at most; 0 is no limit.
	Limit  int
	Action Action
	// Delay is the wait of Delay and DelayResponse.
	Delay time.Duration
	// Then, if set, runs after the action with the listener's tag, before
	// the connection is closed: DropResponse with Then killing the
	// instance behind the tag is a crash right after a write was applied.
	Then func(tag string)

	hits int
	seen int // matching requests, for Every
}

// Proxy is a loopback HTTP proxy in front of DynamoDB Local that injects
// faults by rule. It listens once per tag (Listen): each instance gets a
// listener of its own, so a rule can name the instance that made a
// request. An upstream that refuses connections (DynamoDB Local being
// restarted) makes the proxy close the caller's connection, as the
// service's own endpoint would refuse it.
type Proxy struct {
	upstream string // http://host:port
	client   *http.Client

	mu     sync.Mutex
	rules  []*Rule
	rng    *rand.Rand
	counts map[string]int
	down   int // requests the upstream refused
	total  int
	ops    map[string]int
	watch  func(op, tag string, body []byte)
	srvs   harness.Servers
}

// NewProxy returns a proxy to upstream (http://127.0.0.1:port) whose
// random choices follow seed, so that a run's faults can be replayed.
func NewProxy(upstream string, seed uint64) *Proxy {
	return &Proxy{
		upstream: strings.TrimSuffix(upstream, "/"),
		// The proxy's own client: no retries of its own, no idle
		// connection outliving a restart that matters.
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Second}},
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		counts: map[string]int{},
		ops:    map[string]int{},
	}
}

// Listen starts a listener on a free loopback port for requests tagged
// tag and returns its address (127.0.0.1:port).
func (p *Proxy) Listen(tag string) (string, error) {
	addr, err := p.srvs.Listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serve(w, r, tag) }))
	if err != nil {
		return "", fmt.Errorf("chaos: proxy listener %s: %w", tag, err)
	}
	return addr, nil
}

// Close stops every listener.
func (p *Proxy) Close() { p.srvs.Close() }

// SetRules replaces the rules; nil clears them (no more faults).
func (p *Proxy) SetRules(rules []*Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = rules
}

// AddRule adds a rule after the current ones.
func (p *Proxy) AddRule(r *Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(slices.Clone(p.rules), r)
}

// InsertRule adds a rule before the current ones: it is tried first.
func (p *Proxy) InsertRule(r *Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append([]*Rule{r}, p.rules...)
}

// Watch has f see every request the proxy gets, its operation, its
// listener's tag and its body, before any rule acts on it (Writes.Watch
// records the note writes).
func (p *Proxy) Watch(f func(op, tag string, body []byte)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watch = f
}

// Counts returns the injections so far by rule name.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Refused is how many requests found the upstream down.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

// Ops returns the requests seen so far by operation.
func (p *Proxy) Ops() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.ops)
}

// pick returns the first rule that matches and fires, counting it.
func (p *Proxy) pick(op, tag string, body []byte) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	p.ops[op]++
	for _, r := range p.rules {
		if r.Limit > 0 && r.hits >= r.Limit {
			continue
		}
		if len(r.Ops) > 0 && !slices.Contains(r.Ops, op) {
			continue
		}
		if r.Tag != "" && r.Tag != tag {
			continue
		}
		if r.Contains != "" && !bytes.Contains(body, []byte(r.Contains)) {
			continue
		}
		if r.Match != nil && !r.Match(body) {
			continue
		}
		if r.Every > 1 {
			if r.seen++; (r.seen-1)%r.Every != 0 {
				continue
			}
		}
		if r.Probability > 0 && r.Probability < 1 && p.rng.Float64() >= r.Probability {
			continue
		}
		r.hits++
		p.counts[r.Name]++
		return r
	}
	return nil
}

// IsTaskOutcome reports whether a PutItem's body writes a task item
// (pk "task#<id>") whose status is completed or failed: a worker
// recording its run's outcome. A cancellation writes "cancelled", a
// worker taking its task "working".
func IsTaskOutcome(body []byte) bool {
	return bytes.Contains(body, []byte(`"task#`)) &&
		(bytes.Contains(body, []byte(`"status":{"S":"completed"}`)) || bytes.Contains(body, []byte(`"status":{"S":"failed"}`)))
}

// IsOneStepCommit reports whether a TransactWriteItems's body puts a
// claim item as completed: a keyed call of a tool with no effect but its
// enlisted writes (notes_add), whose claim, writes and result are that
// one request.
func IsOneStepCommit(body []byte) bool {
	return bytes.Contains(body, []byte(`"claim#`)) && bytes.Contains(body, []byte(`"status":{"S":"completed"}`))
}

// IsTaskAnswer reports whether a PutItem's body writes a task item that
// a tasks/update has just woken: working, no worker holding it, and
// answers among its responses (a worker's take writes its owner).
func IsTaskAnswer(body []byte) bool {
	return bytes.Contains(body, []byte(`"task#`)) && bytes.Contains(body, []byte(`"status":{"S":"working"}`)) &&
		bytes.Contains(body, []byte(`"responses":{"M":{`)) && !bytes.Contains(body, []byte(`"owner":`))
}

// operation is the DynamoDB operation of a request: the X-Amz-Target
// header's part after the dot.
func operation(r *http.Request) string {
	t := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		return t[i+1:]
	}
	return t
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, tag string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(w)
		return
	}
	op := operation(r)
	p.mu.Lock()
	watch := p.watch
	p.mu.Unlock()
	if watch != nil {
		watch(op, tag, body)
	}
	rule := p.pick(op, tag, body)
	if rule != nil {
		switch rule.Action {
		case Delay:
			t := time.NewTimer(rule.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		case DropRequest:
			if rule.Then != nil {
				rule.Then(tag)
			}
			hangUp(w)
			return
		}
	}
	resp, err := p.forward(r, body)
	if err != nil {
		p.mu.Lock()
		p.down++
		p.mu.Unlock()
		hangUp(w)
		return
	}
	if rule != nil && rule.Action == DropResponse {
		if rule.Then != nil {
			rule.Then(tag)
		}
		hangUp(w)
		return
	}
	if rule != nil && rule.Action == DelayResponse {
		t := time.NewTimer(rule.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	for k, vs := range resp.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.status)
	w.Write(resp.body)
}

type upstreamResponse struct {
	status int
	header http.Header
	body   []byte
}

// forward sends the request to the upstream and reads its whole answer.
func (p *Proxy) forward(r *http.Request, body []byte) (*upstreamResponse, error) {
	// The caller's cancellation does not reach DynamoDB: a request that
	// was sent is applied or not by the service alone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &upstreamResponse{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// hangUp closes the caller's connection without an answer.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		// The server closes the connection without an answer.
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		// An RST, not a FIN: what a crashed or restarted peer sends.
		_ = tc.SetLinger(0)
	}
	conn.Close()
}
