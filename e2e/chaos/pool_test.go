package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
)

// fakeInstance is an in-process stand-in for a function under the
// emulator: it answers each event with its request id and principal,
// and counts how many invocations run at once. An invocation whose body
// says "hold" waits until released or killed.
type fakeInstance struct {
	name    string
	running *atomic.Int64
	maxSeen *atomic.Int64
	held    chan struct{} // receives when a "hold" invocation has started
	release chan struct{}
	exited  chan struct{}
	once    sync.Once
}

func (f *fakeInstance) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	var ev struct {
		Body           string `json:"body"`
		Task           string `json:"mcpTask"` // a worker's event
		RequestContext struct {
			RequestID  string `json:"requestId"`
			DomainName string `json:"domainName"`
			Authorizer struct {
				Lambda map[string]string `json:"lambda"`
			} `json:"authorizer"`
		} `json:"requestContext"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	if strings.HasPrefix(ev.Task, "hold") {
		ev.Body = "hold"
	}
	select {
	case <-f.exited:
		return nil, errors.New("instance gone")
	default:
	}
	if ev.Body == "hold" {
		f.held <- struct{}{}
		select {
		case <-f.release:
		case <-f.exited:
			return nil, errors.New("rie: invoke: EOF")
		}
	}
	body, _ := json.Marshal(map[string]string{"instance": f.name, "requestId": ev.RequestContext.RequestID,
		"principal": ev.RequestContext.Authorizer.Lambda["principalId"], "task": ev.Task})
	if ev.RequestContext.DomainName == rie.StreamDomain {
		// A function URL's event: the answer is a response stream.
		return append([]byte(`{"statusCode":200,"headers":{"Content-Type":"application/json","X-Door":"stream"}}`+"\x00\x00\x00\x00\x00\x00\x00\x00"), body...), nil
	}
	return json.Marshal(map[string]any{"statusCode": 200, "headers": map[string]string{"Content-Type": "application/json"}, "body": string(body)})
}

func (f *fakeInstance) Kill()                   { f.once.Do(func() { close(f.exited) }) }
func (f *fakeInstance) Exited() <-chan struct{} { return f.exited }

type fakeFleet struct {
	running, maxSeen atomic.Int64
	held             chan struct{}
	release          chan struct{}
	mu               sync.Mutex
	started          []*fakeInstance
}

func (ff *fakeFleet) start(ctx context.Context, slot, gen int) (Instance, error) {
	f := &fakeInstance{name: fmt.Sprintf("i%d.g%d", slot, gen), running: &ff.running, maxSeen: &ff.maxSeen,
		held: ff.held, release: ff.release, exited: make(chan struct{})}
	ff.mu.Lock()
	ff.started = append(ff.started, f)
	ff.mu.Unlock()
	return f, nil
}

// call posts body to the front as principal. It reports a transport
// error as a response with status 0, so that goroutines can use it.
func call(url, principal, body string) (*http.Response, map[string]string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return &http.Response{Header: http.Header{}}, nil
	}
	req.Header.Set(HeaderPrincipal, principal)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &http.Response{Header: http.Header{}}, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]string
	_ = json.Unmarshal(b, &out)
	return resp, out
}

// TestPoolOneAtATime: each instance serves one invocation at a time, the
// front passes the principal and a request id of its own, and requests
// beyond the instances wait rather than fail.
func TestPoolOneAtATime(t *testing.T) {
	ff, p, srv := newTestPool(t, 2)

	// Both instances held: a third request waits for one.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(srv.URL, "", "hold")
		}()
	}
	<-ff.held
	<-ff.held
	done := make(chan map[string]string)
	go func() {
		_, out := call(srv.URL, "alice", "x")
		done <- out
	}()
	select {
	case out := <-done:
		t.Fatalf("answered while every instance was busy: %v", out)
	default:
	}
	close(ff.release)
	out := <-done
	wg.Wait()
	if out["principal"] != "alice" || !strings.HasPrefix(out["requestId"], "chaos-") {
		t.Errorf("the event: %v", out)
	}
	if m := ff.maxSeen.Load(); m > 2 {
		t.Errorf("%d invocations ran at once on 2 instances", m)
	}
	// A pinned request goes to its slot, whichever is idle.
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
		req.Header.Set(HeaderPin, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get(HeaderInstance); got != "i1.g0" {
			t.Errorf("pinned to 1, served by %s", got)
		}
	}
	if s := p.Stats(); s.Requests != 6 || s.GatewayErrors != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestPoolKill: a deliberately killed instance's invocation is answered
// 502 marked injected, and a fresh instance takes its place; an instance
// that ends on its own is a gateway error, not marked, and replaced too.
func TestPoolKill(t *testing.T) {
	ff, p, srv := newTestPool(t, 1)

	got := make(chan *http.Response)
	go func() {
		resp, _ := call(srv.URL, "", "hold")
		got <- resp
	}()
	<-ff.held
	slot, mid := p.KillBusy(context.Background(), 0)
	if slot != 0 || !mid {
		t.Errorf("KillBusy = %d, %v", slot, mid)
	}
	resp := <-got
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderInjected) != "kill" || resp.Header.Get(HeaderInstance) != "i0.g0" {
		t.Errorf("the killed call: %d %v", resp.StatusCode, resp.Header)
	}
	p.Settle()
	resp, out := call(srv.URL, "", "x")
	if resp.StatusCode != http.StatusOK || out["instance"] != "i0.g1" {
		t.Errorf("after the kill: %d %v", resp.StatusCode, out)
	}

	// The instance ends by itself before the next call.
	ff.mu.Lock()
	ff.started[len(ff.started)-1].Kill()
	ff.mu.Unlock()
	resp, _ = call(srv.URL, "", "x")
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderInjected) != "" {
		t.Errorf("an instance that ended by itself: %d %v", resp.StatusCode, resp.Header)
	}
	p.Settle()
	if resp, out := call(srv.URL, "", "x"); resp.StatusCode != http.StatusOK || out["instance"] != "i0.g2" {
		t.Errorf("after the unexpected end: %d %v", resp.StatusCode, out)
	}
	s := p.Stats()
	if s.Kills != 1 || s.KilledMidCall != 1 || s.InjectedGatewayErrors != 1 || s.GatewayErrors != 1 || s.UnexpectedExits != 1 || s.Replacements != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestPoolWorkers: a worker's event runs on an idle instance; a kill of
// the instance while it runs is counted against the task, not as a
// gateway error.
func TestPoolWorkers(t *testing.T) {
	ff := &fakeFleet{held: make(chan struct{}, 16), release: make(chan struct{})}
	p, err := NewPool(context.Background(), 1, ff.start, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	out, err := p.InvokeWorker(ctx, []byte(`{"mcpTask":"T1"}`))
	if err != nil || !strings.Contains(string(out), `\"task\":\"T1\"`) {
		t.Fatalf("a worker run: %s %v", out, err)
	}
	// No worker is running: nothing to kill.
	if slot, task := p.KillWorker(ctx, 0, 20*time.Millisecond); slot != -1 || task != "" {
		t.Fatalf("KillWorker with no worker = %d %q", slot, task)
	}
	failed := make(chan error)
	go func() {
		_, err := p.InvokeWorker(ctx, []byte(`{"mcpTask":"hold-2"}`))
		failed <- err
	}()
	<-ff.held
	if slot, task := p.KillWorker(ctx, 0, time.Second); slot != 0 || task != "hold-2" {
		t.Fatalf("KillWorker = %d %q", slot, task)
	}
	if err := <-failed; err == nil {
		t.Fatal("the killed worker's run did not fail")
	}
	p.Settle()
	if _, err := p.InvokeWorker(ctx, []byte(`{"mcpTask":"T3"}`)); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	if k := p.KilledTasks(); len(k) != 1 || k["hold-2"] != 1 {
		t.Errorf("killed tasks %v", k)
	}
	s := p.Stats()
	if s.WorkerRuns != 3 || s.KilledWorkers != 1 || s.WorkerErrors != 0 || s.InjectedGatewayErrors != 0 || s.GatewayErrors != 0 || s.Kills != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestPoolStreamDoor: a request marked for the streaming door reaches the
// function as a function URL's event, and its response stream is
// answered by its prelude; the others are buffered.
func TestPoolStreamDoor(t *testing.T) {
	_, p, srv := newTestPool(t, 1)
	for _, stream := range []bool{true, false} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
		req.Header.Set(HeaderPrincipal, "alice")
		if stream {
			req.Header.Set(HeaderDoor, DoorStream)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]string
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || out["principal"] != "alice" || (resp.Header.Get("X-Door") == "stream") != stream {
			t.Errorf("stream=%v: %d %v %v %v", stream, resp.StatusCode, resp.Header, out, err)
		}
	}
	if s := p.Stats(); s.Requests != 2 || s.Streamed != 1 {
		t.Errorf("stats %+v", s)
	}
}

// newTestPool is a pool of n instances of a fake fleet behind a test
// server, all stopped when the test ends.
func newTestPool(t *testing.T, n int) (*fakeFleet, *Pool, *httptest.Server) {
	t.Helper()
	ff := &fakeFleet{held: make(chan struct{}, 16), release: make(chan struct{})}
	p, err := NewPool(context.Background(), n, ff.start, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return ff, p, srv
}
