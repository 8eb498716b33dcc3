//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/need"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// The browser tests load two pages in a real headless Chromium: one from
// an origin the endpoint allows (app.test), one from an origin it does
// not (evil.test). Each page's script makes the MCP call a browser client
// makes, a tools/call of notes_add with the bearer token that forces a
// preflight, to the endpoint at api.test. The three names resolve to
// 127.0.0.1 inside the browser only (--host-resolver-rules), so that
// none of them is a loopback name and the endpoint's loopback rule does
// not apply: the allow-list decides. Each page posts what its script saw
// to its own origin, where the test collects it.
//
// They run against the demo served in-process over net/http and against
// the real bootstrap under the Lambda runtime emulator, behind the HTTP
// front that turns requests into API Gateway events. Chromium is
// installed by `make tools`; a machine without it fails the tests rather
// than skipping them, so that CI cannot pass without a browser.

const (
	appNote  = "from app.test"
	evilNote = "from evil.test"
)

func TestBrowserCORSInProcess(t *testing.T) {
	chrome := chromiumBinary(t)
	rig := newBrowserRig(t)
	notes := newMemoryNotes()
	srv := taskServer(stateless.Implementation{Name: "mcp-lambda-demo", Version: "test"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, AllowedOrigins: []string{rig.appOrigin}})
	(&demo{notes: notes}).register(srv)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	rig.serve(t, mux)

	rig.run(t, chrome)

	all, more, err := notes.List(context.Background(), stateless.Anonymous, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Text != appNote || more {
		t.Errorf("notes after both pages: %+v, want only %q", all, appNote)
	}
}

func TestBrowserCORSLambda(t *testing.T) {
	chrome := chromiumBinary(t)
	riePath := rieBinary(t)
	bootstrap := buildBootstrap(t, runtime.GOARCH)
	rig := newBrowserRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bootstrap,
		Env: []string{endpoint.EnvAllowedOrigins + "=" + rig.appOrigin, endpoint.EnvLogLevel + "=error", endpoint.EnvAllowAnonymous + "=true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Stop()
		if t.Failed() {
			t.Logf("emulator and function output:\n%s", e.Log())
		}
	})
	front := &rie.Front{Emulator: e}
	rig.serve(t, front)

	rig.run(t, chrome)

	// The same function instance, asked without an Origin: one note, the
	// allowed page's.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes_search","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/mcp", strings.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"notes_search"}}
	w := &bufferedResponse{header: http.Header{}}
	front.ServeHTTP(w, req)
	var out struct {
		Result struct {
			StructuredContent struct {
				Notes []Note `json:"notes"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(w.body.Bytes(), &out); err != nil {
		t.Fatalf("notes_search: %d %s", w.status, w.body.Bytes())
	}
	if n := out.Result.StructuredContent.Notes; len(n) != 1 || n[0].Text != appNote {
		t.Errorf("notes after both pages: %s, want only %q", w.body.Bytes(), appNote)
	}
}

// browserRig is the three servers of a browser test: the endpoint behind
// a recorder, and the two pages' origins.
type browserRig struct {
	appLn, evilLn, apiLn  net.Listener
	appOrigin, evilOrigin string
	apiURL                string
	rec                   recorder
	results               chan pageResult
}

// pageResult is what a page's script reports.
type pageResult struct {
	Page         string  `json:"page"`
	Origin       string  `json:"origin"`
	Status       int     `json:"status"`
	Body         string  `json:"body"`
	ContentType  *string `json:"contentType"`
	Exposed      *string `json:"exposed"`
	Unexposed    *string `json:"unexposed"`
	Error        string  `json:"error"`
	DeleteStatus int     `json:"deleteStatus"`
	DeleteBody   string  `json:"deleteBody"`
	DeleteError  string  `json:"deleteError"`
}

// newBrowserRig listens on three loopback ports chosen now.
func newBrowserRig(t *testing.T) *browserRig {
	t.Helper()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	r := &browserRig{appLn: listen(), evilLn: listen(), apiLn: listen(), results: make(chan pageResult, 4)}
	port := func(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }
	r.appOrigin = "http://app.test:" + port(r.appLn)
	r.evilOrigin = "http://evil.test:" + port(r.evilLn)
	r.apiURL = "http://api.test:" + port(r.apiLn) + "/mcp"
	return r
}

// serve starts the endpoint (behind the recorder) and the two pages. The
// allowed page goes on to the refused one when it is done, so one
// browser run loads both, in order.
func (r *browserRig) serve(t *testing.T, endpoint http.Handler) {
	t.Helper()
	start := func(ln net.Listener, h http.Handler) {
		s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go s.Serve(ln)
		t.Cleanup(func() { s.Close() })
	}
	r.rec.next = endpoint
	start(r.apiLn, &r.rec)
	start(r.appLn, r.page(pageConfig{Page: "app", API: r.apiURL, Text: appNote, ProbeDelete: true, Next: r.evilOrigin + "/"}))
	start(r.evilLn, r.page(pageConfig{Page: "evil", API: r.apiURL, Text: evilNote}))
}

type pageConfig struct {
	Page        string `json:"page"`
	API         string `json:"api"`
	Text        string `json:"text"`
	ProbeDelete bool   `json:"probeDelete"`
	Next        string `json:"next,omitempty"`
}

// pageScript makes the call a browser MCP client makes, reads the
// response's status, body and headers, tries a DELETE (whose 405 a page
// can read only because DELETE is among the allowed methods), reports to
// its own origin, and goes on to the next page if there is one.
const pageScript = `
(async () => {
  const out = {page: cfg.page, origin: location.origin};
  try {
    const res = await fetch(cfg.api, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "notes_add",
        "Authorization": "Bearer x",
      },
      body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "tools/call", params: {
        name: "notes_add", arguments: {text: cfg.text},
        _meta: {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
    });
    out.status = res.status;
    out.contentType = res.headers.get("Content-Type");
    out.exposed = res.headers.get("Retry-After");
    out.unexposed = res.headers.get("X-Not-Exposed");
    out.body = await res.text();
  } catch (e) {
    out.error = e.name + ": " + e.message;
  }
  if (cfg.probeDelete) {
    try {
      const res = await fetch(cfg.api, {method: "DELETE"});
      out.deleteStatus = res.status;
      out.deleteBody = await res.text();
    } catch (e) {
      out.deleteError = e.name + ": " + e.message;
    }
  }
  await fetch("/result", {method: "POST", body: JSON.stringify(out)});
  if (cfg.next) location.href = cfg.next;
})();
`

// page serves a page whose script runs with c, and collects its report.
func (r *browserRig) page(c pageConfig) http.Handler {
	cfg, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	html := "<!doctype html><meta charset=utf-8><title>" + c.Page + "</title><script>const cfg = " + string(cfg) + ";" + pageScript + "</script>"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, html)
	})
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, req *http.Request) {
		var res pageResult
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err := json.Unmarshal(b, &res); err != nil {
			res = pageResult{Page: c.Page, Error: "unreadable report: " + string(b)}
		}
		select {
		case r.results <- res:
		default:
		}
	})
	return mux
}

// run loads the allowed page, which goes on to the refused one, in a
// fresh headless Chromium, waits for both reports, and checks them and
// what the endpoint saw.
func (r *browserRig) run(t *testing.T, chrome string) {
	t.Helper()
	start := time.Now()
	stderr := startChromium(t, chrome, r.appOrigin+"/")
	got := map[string]pageResult{}
	timeout := time.After(30 * time.Second)
	for len(got) < 2 {
		select {
		case res := <-r.results:
			got[res.Page] = res
		case <-timeout:
			t.Fatalf("reports after 30s: %+v\nendpoint saw %v\nchromium:\n%s", got, r.rec.seen(), stderr.String())
		}
	}
	t.Logf("browser run: %v", time.Since(start).Round(time.Millisecond))

	app, evil := got["app"], got["evil"]
	if app.Origin != r.appOrigin || evil.Origin != r.evilOrigin {
		t.Errorf("pages ran at %q and %q", app.Origin, evil.Origin)
	}

	// The allowed origin's call goes through, and its script reads the
	// answer: status, body, and the headers the endpoint exposes.
	if app.Error != "" || app.Status != http.StatusOK {
		t.Errorf("allowed origin: status %d, error %q, body %s", app.Status, app.Error, app.Body)
	}
	var rpc struct {
		Result struct {
			StructuredContent struct {
				ID string `json:"id"`
			} `json:"structuredContent"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(app.Body), &rpc); err != nil || rpc.Error != nil || rpc.Result.StructuredContent.ID == "" {
		t.Errorf("allowed origin: body %s is not a notes_add result", app.Body)
	}
	if app.ContentType == nil || *app.ContentType != "application/json" {
		t.Errorf("allowed origin: Content-Type %v", deref(app.ContentType))
	}
	if app.Exposed == nil || *app.Exposed != probeExposed {
		t.Errorf("allowed origin: Retry-After, which is exposed, reads %v", deref(app.Exposed))
	}
	if app.Unexposed != nil {
		t.Errorf("allowed origin: X-Not-Exposed, which is not exposed, reads %q", *app.Unexposed)
	}
	if app.DeleteError != "" || app.DeleteStatus != http.StatusMethodNotAllowed || !strings.Contains(app.DeleteBody, `"code":-32600`) {
		t.Errorf("allowed origin: DELETE gave %d %q %s, want the readable 405", app.DeleteStatus, app.DeleteError, app.DeleteBody)
	}

	// The refused origin's fetch fails as a network error: the preflight
	// was refused, so nothing reached the page.
	if !strings.HasPrefix(evil.Error, "TypeError") || evil.Status != 0 || evil.Body != "" {
		t.Errorf("refused origin: error %q, status %d, body %q; want a TypeError", evil.Error, evil.Status, evil.Body)
	}

	// What the endpoint saw: the allowed page's preflight, then its call,
	// then its DELETE with no preflight of its own (the browser cached the
	// first answer, which admits DELETE, for Access-Control-Max-Age); the
	// refused page's preflight alone, and no call.
	want := []seen{
		{http.MethodOptions, r.appOrigin, http.MethodPost},
		{http.MethodPost, r.appOrigin, ""},
		{http.MethodDelete, r.appOrigin, ""},
		{http.MethodOptions, r.evilOrigin, http.MethodPost},
	}
	if s := r.rec.seen(); !slices.Equal(s, want) {
		t.Errorf("endpoint saw\n %v\nwant\n %v", s, want)
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// seen is one request the endpoint received.
type seen struct {
	Method, Origin, RequestMethod string
}

// probeExposed is the Retry-After value the recorder adds to answers.
const probeExposed = "7"

// recorder records the requests that reach the endpoint. On answers to
// actual requests it also sets two headers the endpoint itself does not
// send on a successful call: Retry-After, which the endpoint's
// Access-Control-Expose-Headers lists, and X-Not-Exposed, which it does
// not. What the page can read of them shows that the browser applies the
// endpoint's list.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, seen{r.Method, r.Header.Get("Origin"), r.Header.Get("Access-Control-Request-Method")})
	rc.mu.Unlock()
	if r.Method != http.MethodOptions {
		w.Header().Set("Retry-After", probeExposed)
		w.Header().Set("X-Not-Exposed", "1")
	}
	rc.next.ServeHTTP(w, r)
}

func (rc *recorder) seen() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs)
}

// bufferedResponse is an http.ResponseWriter that keeps the response.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }

// chromiumBinary finds Chromium: $CHROMIUM, else chromium on PATH, which
// `make tools` installs.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			need.Tool(t, "chromium", err)
		}
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		need.Tool(t, "chromium", err)
	}
	return p
}

// startChromium starts a headless Chromium on url, with a fresh profile,
// in its own process group, which the test's cleanup kills whole and
// waits out before the profile is removed. It returns the browser's
// output, for failure messages.
func startChromium(t *testing.T, chrome, url string) *syncbuf.Buffer {
	t.Helper()
	profile, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chrome,
		"--headless",
		// As root, and no GPU here.
		"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		// Nothing but the test's own requests: the machine's network is
		// closed, and the browser's background connections would fail.
		"--disable-quic", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--no-proxy-server",
		"--user-data-dir="+profile,
		// Non-loopback names for the pages and the endpoint, all served on
		// 127.0.0.1.
		"--host-resolver-rules=MAP *.test 127.0.0.1",
		url)
	cmd.Env = browserEnv(profile)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, to be killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		os.RemoveAll(profile)
		t.Fatalf("starting chromium: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		// The profile is thrown away: kill the whole group at once, then
		// wait until none of it runs before removing the profile.
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("chromium did not end")
		}
		for deadline := time.Now().Add(10 * time.Second); browserRunning(pgid, profile); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("chromium (process group %d) still runs", pgid)
				break
			}
		}
		if err := os.RemoveAll(profile); err != nil {
			t.Logf("removing the browser profile: %v", err)
		}
	})
	return out
}

// browserRunning reports whether a process of the browser runs: one of
// group pgid, or one that names the profile directory dir (the crash
// handlers, which leave the group and end soon after the browser). Killed
// processes stay as zombies until they are reaped, which for orphaned
// helpers is init's business; those hold no files and do not count.
func browserRunning(pgid int, dir string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if fields[2] == strconv.Itoa(pgid) {
			return true
		}
		if cmdline, err := os.ReadFile(p + "/cmdline"); err == nil && bytes.Contains(cmdline, []byte(dir)) {
			return true
		}
	}
	return false
}

// browserEnv is the environment the browser runs in: this process's,
// without proxy settings (everything is loopback), with the profile
// directory as home.
func browserEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}
