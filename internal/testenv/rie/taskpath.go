package rie

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
)

// TaskPath is a function on the Lambda path with its task workers: the
// real bootstrap under an emulator behind an API Gateway front (URL), and
// worker emulators of the same function that its asynchronous
// invocations of itself reach through the Invoke API's stand-in
// (AWS_ENDPOINT_URL_LAMBDA is set for every emulator). A test of the
// tasks extension through Lambda, for any function that serves it.
type TaskPath struct {
	// URL is the front's MCP endpoint.
	URL string
	// Invoke is the Invoke API the workers' invocations go through.
	Invoke *InvokeAPI

	front   *Emulator
	stream  *runtimeapi.Runtime
	servers []*http.Server
	mu      sync.Mutex
	current *Emulator
	started []*Emulator
}

// TaskPathOptions configure StartTaskPath.
type TaskPathOptions struct {
	RIE, Bootstrap string
	// Env is every emulator's environment besides the Lambda endpoint.
	Env []string
	// Duplicate delivers every worker invocation twice, to two workers:
	// the second runs beside the first, as Lambda may run it.
	Duplicate bool
	// Stream puts the front behind the template's streaming door instead
	// of the HTTP API door: the function invoked in response-streaming
	// mode through the Runtime API stand-in (MCP_STREAM_EVENTS=rest),
	// behind a REST API whose stage is at a custom domain's root.
	Stream bool
}

// StartTaskPath starts the front, the workers and the Invoke API.
func StartTaskPath(ctx context.Context, o TaskPathOptions) (*TaskPath, error) {
	invokeLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &TaskPath{}
	env := append([]string{"AWS_ENDPOINT_URL_LAMBDA=http://" + invokeLn.Addr().String()}, o.Env...)
	start := func() (*Emulator, error) {
		e, err := Start(ctx, Options{RIE: o.RIE, Bootstrap: o.Bootstrap, Env: env, OwnGroup: true})
		if err == nil {
			p.mu.Lock()
			p.started = append(p.started, e)
			p.current = e
			p.mu.Unlock()
		}
		return e, err
	}
	fail := func(err error) (*TaskPath, error) {
		invokeLn.Close()
		p.Stop()
		return nil, err
	}
	workers := make([]*Emulator, 1, 2)
	if workers[0], err = start(); err != nil {
		return fail(err)
	}
	if o.Duplicate {
		w, err := start()
		if err != nil {
			return fail(err)
		}
		workers = append(workers, w)
	}
	var front http.Handler
	if o.Stream {
		if p.stream, err = runtimeapi.Start(runtimeapi.Options{Bootstrap: o.Bootstrap, Env: append([]string{"MCP_STREAM_EVENTS=rest"}, env...)}); err != nil {
			return fail(err)
		}
		front = &StreamFront{Function: p.stream, Door: RESTAPI, REST: REST{Domain: true}}
	} else {
		if p.front, err = Start(ctx, Options{RIE: o.RIE, Bootstrap: o.Bootstrap, Env: env, OwnGroup: true}); err != nil {
			return fail(err)
		}
		front = &Front{Emulator: p.front}
	}
	p.mu.Lock()
	p.current = workers[0]
	p.mu.Unlock()
	p.Invoke = &InvokeAPI{Workers: workers, Retries: 2, Duplicate: o.Duplicate, Restart: start}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	api := &http.Server{Handler: p.Invoke, ReadHeaderTimeout: 10 * time.Second}
	gw := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}
	p.servers = []*http.Server{api, gw}
	go api.Serve(invokeLn)
	go gw.Serve(ln)
	p.URL = "http://" + ln.Addr().String() + "/mcp"
	return p, nil
}

// Worker is the worker emulator a test may kill: the first one, or the
// one started in the place of a killed one.
func (p *TaskPath) Worker() *Emulator {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

// Logs are the front's and the current worker's output.
func (p *TaskPath) Logs() (front, worker string) {
	if p.front != nil {
		front = p.front.Log()
	}
	if p.stream != nil {
		front = p.stream.Log()
	}
	if w := p.Worker(); w != nil {
		worker = w.Log()
	}
	return front, worker
}

// Stop stops the servers and every emulator.
func (p *TaskPath) Stop() {
	for _, s := range p.servers {
		s.Close()
	}
	if p.front != nil {
		p.front.Stop()
	}
	if p.stream != nil {
		p.stream.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.started {
		e.Stop()
	}
}

// Post sends one 2026-07-28 JSON-RPC request to the front: method, with
// params (a JSON object, its _meta included) and Mcp-Name name, and the
// headers the revision requires. It returns the answer's result or error
// member; err when there is no JSON-RPC answer.
func (p *TaskPath) Post(ctx context.Context, method, name, params string) (result, rpcErr map[string]any, err error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, fmt.Errorf("%s answered %d %.300s", method, resp.StatusCode, raw)
	}
	return out.Result, out.Error, nil
}
