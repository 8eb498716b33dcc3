package abuse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// writeOps are the DynamoDB operations that write.
var writeOps = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}

// Op is one DynamoDB request the proxy passed on.
type Op struct {
	// Listener is the listener it came through: an instance slot of the
	// fleet ("i3"), or a local server ("local").
	Listener string
	// Tag is what the listener's instance was doing when the request came
	// (Fleet: the front's request id, or "worker:<task id>"); "" when
	// the listener cannot tell (a local server serves many requests at
	// once) or the instance was idle.
	Tag string
	// Name is the operation (X-Amz-Target's part after the dot).
	Name string
	// Keys are the partition keys the request names, each as written
	// ("rate#<digest>#<window>", "slots#tasks#<digest>", "task#<id>").
	Keys []string
	// Count is what an UpdateItem of a calls counter (a "rate#" key)
	// answered the count to be; -1 for any other request.
	Count int64
	// Status is DynamoDB Local's HTTP status; 0 when it could not be
	// reached.
	Status int
	At     time.Time
}

// Write reports whether the operation writes.
func (o Op) Write() bool { return slices.Contains(writeOps, o.Name) }

// Applied reports whether DynamoDB answered the request 200: a write
// it applied (a 400 is a condition that failed, or a transaction
// cancelled, which changed nothing).
func (o Op) Applied() bool { return o.Status == http.StatusOK }

// Kinds are the kinds of item the request names: each key's part before
// its first '#' (rate, slots, claim, task, notes, redeem), sorted, once
// each.
func (o Op) Kinds() []string {
	var out []string
	for _, k := range o.Keys {
		kind, _, _ := strings.Cut(k, "#")
		if !slices.Contains(out, kind) {
			out = append(out, kind)
		}
	}
	slices.Sort(out)
	return out
}

// Delay holds matching requests back before they are passed on: a slow
// table, so that a caller who hangs up does so while its call waits.
type Delay struct {
	// Listener, if set, is the one listener whose requests match; one
	// ending in '*' matches every listener it is a prefix of.
	Listener string
	// Op, if set, is the one operation that matches (Query).
	Op string
	// Contains, if set, must occur in the request's body (a note book's
	// partition key: one caller's reads).
	Contains string
	// When, if set, says whether the delay is on now (while a caller
	// hangs up, say).
	When func() bool
	For  time.Duration
}

func (d Delay) matches(listener, op string, body []byte) bool {
	return (d.Listener == "" || Listens(d.Listener, listener)) && (d.Op == "" || d.Op == op) && (d.When == nil || d.When()) &&
		(d.Contains == "" || bytes.Contains(body, []byte(d.Contains)))
}

// Listens reports whether the listener name is pattern's: pattern
// itself, or one it is the prefix of when it ends in '*'.
func Listens(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

// Proxy is a loopback HTTP proxy in front of DynamoDB Local that records
// every request it passes on (Ops), one listener per instance slot or
// local server, so that a request is known by who made it; a fleet's
// instance serves one invocation at a time, so its listener's Tagger
// names the very request or task run that made it.
type Proxy struct {
	upstream string
	client   *http.Client
	delays   []Delay

	mu   sync.Mutex
	ops  []Op
	srvs harness.Servers
}

// NewProxy returns a proxy to upstream (http://127.0.0.1:port) that
// applies delays.
func NewProxy(upstream string, delays ...Delay) *Proxy {
	return &Proxy{upstream: upstream, delays: delays, client: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
	}}
}

// Listen starts a listener named name on a free loopback port and
// returns its address (host:port); tag, if set, tells what its caller is
// doing when a request comes.
func (p *Proxy) Listen(name string, tag func() string) (string, error) {
	addr, err := p.srvs.Listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serve(w, r, name, tag) }))
	if err != nil {
		return "", fmt.Errorf("abuse: proxy: %w", err)
	}
	return addr, nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, listener string, tag func() string) {
	op := Op{Listener: listener, Count: -1, At: time.Now()}
	if tag != nil {
		op.Tag = tag()
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, op.Name, _ = strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	op.Keys = partitionKeys(body)
	for _, d := range p.delays {
		if d.matches(listener, op.Name, body) {
			select {
			case <-time.After(d.For):
			case <-r.Context().Done():
			}
		}
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		p.record(op)
		// As the service's endpoint would: the connection goes.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	op.Status = resp.StatusCode
	if err == nil && op.Name == "UpdateItem" && resp.StatusCode == http.StatusOK && slices.ContainsFunc(op.Keys, isRateKey) {
		op.Count = answeredCount(out)
	}
	p.record(op)
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

func (p *Proxy) record(op Op) {
	p.mu.Lock()
	p.ops = append(p.ops, op)
	p.mu.Unlock()
}

// Ops returns the requests passed on so far, in the order they came.
func (p *Proxy) Ops() []Op {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ops)
}

// WriteOps writes ops to path, one JSON object a line.
func WriteOps(path string, ops []Op) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Close stops every listener.
func (p *Proxy) Close() { p.srvs.Close() }

func isRateKey(k string) bool { return strings.HasPrefix(k, "rate#") }

// attr is a DynamoDB attribute value, as far as keys need it.
type attr struct {
	S string `json:"S"`
}

type keyed struct {
	Key  map[string]attr `json:"Key"`
	Item map[string]attr `json:"Item"`
}

// partitionKeys are the "pk" values a request names: its Key or Item,
// each item of a transaction, each request of a batch write.
func partitionKeys(body []byte) []string {
	var b struct {
		keyed
		TransactItems []struct {
			Put, Update, Delete, ConditionCheck *keyed
		} `json:"TransactItems"`
		RequestItems map[string][]struct {
			PutRequest    *keyed `json:"PutRequest"`
			DeleteRequest *keyed `json:"DeleteRequest"`
		} `json:"RequestItems"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil
	}
	var out []string
	add := func(k *keyed) {
		if k == nil {
			return
		}
		for _, m := range []map[string]attr{k.Key, k.Item} {
			if v := m["pk"].S; v != "" {
				out = append(out, v)
			}
		}
	}
	add(&b.keyed)
	for _, t := range b.TransactItems {
		add(t.Put)
		add(t.Update)
		add(t.Delete)
		add(t.ConditionCheck)
	}
	for _, rs := range b.RequestItems {
		for _, r := range rs {
			add(r.PutRequest)
			add(r.DeleteRequest)
		}
	}
	return out
}

// answeredCount is the count "n" an UpdateItem answered (ReturnValues
// UPDATED_NEW), or -1.
func answeredCount(body []byte) int64 {
	var out struct {
		Attributes map[string]struct {
			N string `json:"N"`
		} `json:"Attributes"`
	}
	if json.Unmarshal(body, &out) != nil {
		return -1
	}
	n, err := strconv.ParseInt(out.Attributes["n"].N, 10, 64)
	if err != nil {
		return -1
	}
	return n
}
