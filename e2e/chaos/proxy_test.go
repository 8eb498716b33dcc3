package chaos

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a stand-in for DynamoDB Local that counts what reached it.
type upstream struct {
	srv  *httptest.Server
	seen atomic.Int64
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.seen.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// post sends one DynamoDB-shaped request through the proxy: the body or
// an error.
func post(t *testing.T, addr, op, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	// A fresh connection each time: a dropped one must not be reused.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestProxyRules(t *testing.T) {
	up := newUpstream(t)
	p := NewProxy(up.srv.URL, 1)
	defer p.Close()
	a0, err := p.Listen("i0")
	if err != nil {
		t.Fatal(err)
	}
	a1, err := p.Listen("i1")
	if err != nil {
		t.Fatal(err)
	}
	var thenTags []string
	var mu sync.Mutex
	p.SetRules([]*Rule{
		{Name: "drop-request", Ops: []string{"PutItem"}, Action: DropRequest},
		{Name: "drop-response", Ops: []string{"UpdateItem", "TransactWriteItems"}, Contains: `":completed"`, Action: DropResponse,
			Then: func(tag string) { mu.Lock(); thenTags = append(thenTags, tag); mu.Unlock() }},
		{Name: "kill-one", Tag: "i1", Ops: []string{"TransactWriteItems"}, Limit: 1, Action: DropResponse},
		{Name: "delay", Ops: []string{"Query"}, Action: Delay, Delay: time.Millisecond},
		{Name: "delay-response", Ops: []string{"GetItem"}, Action: DelayResponse, Delay: time.Millisecond},
	})

	// Dropped before forwarding: the caller gets no answer, the service
	// saw nothing.
	if _, err := post(t, a0, "PutItem", "{}"); err == nil {
		t.Error("a dropped request was answered")
	}
	if n := up.seen.Load(); n != 0 {
		t.Errorf("the upstream saw %d requests, want 0", n)
	}
	// Forwarded, then the answer dropped: the service saw it.
	if _, err := post(t, a0, "UpdateItem", `{"ExpressionAttributeValues":{":completed":{"S":"completed"}}}`); err == nil {
		t.Error("a dropped response was answered")
	}
	if n := up.seen.Load(); n != 1 {
		t.Errorf("the upstream saw %d requests, want 1", n)
	}
	// The same operation without the marker passes.
	if body, err := post(t, a0, "UpdateItem", `{}`); err != nil || body != `{"ok":true}` {
		t.Errorf("a plain UpdateItem: %q, %v", body, err)
	}
	// A rule for one listener, once.
	if body, err := post(t, a0, "TransactWriteItems", `{}`); err != nil || body != `{"ok":true}` {
		t.Errorf("TransactWriteItems through i0: %q, %v", body, err)
	}
	if _, err := post(t, a1, "TransactWriteItems", `{}`); err == nil {
		t.Error("TransactWriteItems through i1 was answered")
	}
	if body, err := post(t, a1, "TransactWriteItems", `{}`); err != nil || body != `{"ok":true}` {
		t.Errorf("the limited rule fired twice: %q, %v", body, err)
	}
	// Delayed, then answered.
	if body, err := post(t, a1, "Query", `{}`); err != nil || body != `{"ok":true}` {
		t.Errorf("a delayed Query: %q, %v", body, err)
	}
	// A late answer, after the service saw the request.
	before := up.seen.Load()
	if body, err := post(t, a1, "GetItem", `{}`); err != nil || body != `{"ok":true}` || up.seen.Load() != before+1 {
		t.Errorf("a delayed GetItem answer: %q, %v", body, err)
	}
	want := map[string]int{"drop-request": 1, "drop-response": 1, "kill-one": 1, "delay": 1, "delay-response": 1}
	got := p.Counts()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("count %s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	mu.Lock()
	if len(thenTags) != 1 || thenTags[0] != "i0" {
		t.Errorf("Then ran with %v, want [i0]", thenTags)
	}
	mu.Unlock()
	if ops := p.Ops(); ops["TransactWriteItems"] != 3 || ops["PutItem"] != 1 {
		t.Errorf("operations seen: %v", ops)
	}

	// No rules: everything passes.
	p.SetRules(nil)
	if body, err := post(t, a0, "PutItem", "{}"); err != nil || body != `{"ok":true}` {
		t.Errorf("without rules: %q, %v", body, err)
	}
}

// TestProxyUpstreamDown: a service that refuses connections (being
// restarted) makes the proxy hang up, and it is counted.
func TestProxyUpstreamDown(t *testing.T) {
	up := newUpstream(t)
	url := up.srv.URL
	up.srv.Close()
	p := NewProxy(url, 1)
	defer p.Close()
	addr, err := p.Listen("i0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := post(t, addr, "GetItem", "{}"); err == nil {
		t.Error("answered with the upstream down")
	}
	if p.Refused() != 1 {
		t.Errorf("refused %d, want 1", p.Refused())
	}
}

// TestProxyProbability: a rule with a probability hits some requests and
// not others, the same ones for the same seed.
func TestProxyProbability(t *testing.T) {
	run := func() (int, []bool) {
		up := newUpstream(t)
		p := NewProxy(up.srv.URL, 42)
		defer p.Close()
		addr, err := p.Listen("i0")
		if err != nil {
			t.Fatal(err)
		}
		p.SetRules([]*Rule{{Name: "drop", Probability: 0.5, Action: DropRequest}})
		var hits []bool
		for range 40 {
			_, err := post(t, addr, "GetItem", "{}")
			hits = append(hits, err != nil)
		}
		return p.Counts()["drop"], hits
	}
	n1, h1 := run()
	n2, h2 := run()
	if n1 == 0 || n1 == 40 {
		t.Errorf("a rule at 0.5 hit %d of 40", n1)
	}
	if n1 != n2 || fmtBools(h1) != fmtBools(h2) {
		t.Errorf("the same seed hit different requests: %s / %s", fmtBools(h1), fmtBools(h2))
	}
}

func fmtBools(bs []bool) string {
	var b strings.Builder
	for _, x := range bs {
		if x {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	}
	return b.String()
}

// TestIsTaskOutcome: the writes of a task's outcome are told from the
// task's other writes and from other items.
func TestIsTaskOutcome(t *testing.T) {
	for body, want := range map[string]bool{
		`{"Item":{"pk":{"S":"task#abc"},"status":{"S":"completed"},"version":{"N":"3"}}}`: true,
		`{"Item":{"pk":{"S":"task#abc"},"status":{"S":"failed"}}}`:                        true,
		`{"Item":{"pk":{"S":"task#abc"},"status":{"S":"working"}}}`:                       false,
		`{"Item":{"pk":{"S":"task#abc"},"status":{"S":"cancelled"}}}`:                     false,
		`{"Item":{"pk":{"S":"claim#abc"},"status":{"S":"completed"}}}`:                    false,
	} {
		if got := IsTaskOutcome([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}

// TestIsTaskAnswer: the write of a task a tasks/update woke is told from
// a worker's take of it and from its other writes.
func TestIsTaskAnswer(t *testing.T) {
	for body, want := range map[string]bool{
		`{"Item":{"pk":{"S":"task#abc"},"responses":{"M":{".title":{"B":"e30="}}},"status":{"S":"working"}}}`:                    true,
		`{"Item":{"owner":{"S":"w1"},"pk":{"S":"task#abc"},"responses":{"M":{".title":{"B":"e30="}}},"status":{"S":"working"}}}`: false,
		`{"Item":{"pk":{"S":"task#abc"},"requests":{"M":{".title":{"B":"e30="}}},"status":{"S":"input_required"}}}`:              false,
		`{"Item":{"pk":{"S":"task#abc"},"status":{"S":"working"}}}`:                                                              false,
		`{"Item":{"pk":{"S":"claim#abc"},"responses":{"M":{}},"status":{"S":"working"}}}`:                                        false,
	} {
		if got := IsTaskAnswer([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}

// TestRuleEvery: a rule with Every hits the first matching request and
// every Every-th after it, and the next rule sees the others; an
// inserted rule is tried first.
func TestRuleEvery(t *testing.T) {
	p := NewProxy("http://127.0.0.1:1", 1)
	p.SetRules([]*Rule{
		{Name: "every2", Ops: []string{"PutItem"}, Every: 2, Action: DropResponse},
		{Name: "rest", Ops: []string{"PutItem"}, Action: DelayResponse},
	})
	var got []string
	for range 5 {
		got = append(got, p.pick("PutItem", "i0", nil).Name)
	}
	if p.pick("GetItem", "i0", nil) != nil {
		t.Error("a GetItem matched")
	}
	p.InsertRule(&Rule{Name: "first", Limit: 1, Action: DropResponse})
	got = append(got, p.pick("PutItem", "i0", nil).Name, p.pick("PutItem", "i0", nil).Name)
	if want := "every2 rest every2 rest every2 first rest"; strings.Join(got, " ") != want {
		t.Errorf("%s, want %s", strings.Join(got, " "), want)
	}
}
