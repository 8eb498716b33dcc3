//go:build unix && !integration

package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
)

// The authorization tests run the real endpoint, functions/fixture (the
// production composition serving the note book), built as
// the Lambda bootstrap of this machine's architecture, on two paths:
//
//   - Local: the binary as a local HTTP server on 127.0.0.1 (no Lambda
//     runtime API in its environment), whose canonical URL is its
//     listening URL, http://127.0.0.1:<port>/mcp.
//   - Lambda: the same binary under the runtime emulator, behind the
//     front that turns HTTP requests into API Gateway HTTP API events,
//     served over TLS on loopback as API Gateway is, so that the
//     canonical URL the function derives from the event (https://
//     <domainName><path>) is the URL the clients use.
//
// An endpoint is reserved before it starts, so that its URL is known
// first: a token can then be minted for it while the authorization server
// is still up, before an endpoint that has never fetched the keys starts.

// authTarget is one path to the endpoint.
type authTarget struct {
	name    string
	reserve func(t *testing.T) *authEndpoint
}

var authTargets = []authTarget{{"Local", reserveLocal}, {"Lambda", reserveLambda}}

// authEndpoint is one endpoint under test.
type authEndpoint struct {
	// URL is the endpoint's canonical URL, as clients use it.
	URL string
	// Origin is URL without its path.
	Origin string
	// Client reaches the endpoint (it trusts the TLS front's certificate).
	Client *http.Client
	// Front records the requests that reached the Lambda path's front;
	// nil locally.
	Front *frontLog
	// CAFile is a PEM file of the TLS front's certificate, for clients
	// other than Client (Node's); "" locally.
	CAFile string

	// pinAudience: AuthEnv names the canonical URL in MCP_AUTH_AUDIENCE
	// rather than leave the function to derive it (see AuthEnv).
	pinAudience bool

	// cutOK: call returns an answer whose connection was cut (Cut)
	// rather than fail the test.
	cutOK bool

	start func(env ...string)
	log   *syncbuf.Buffer
	ids   atomic.Int64
}

// AuthEnv is the environment that protects the endpoint with issuer's
// tokens. On the Lambda path it also sets MCP_AUTH_AUDIENCE to the URL
// the clients use: the front's domain name is 127.0.0.1:<port>, and the
// function derives no canonical URL from a domain name with a port (a
// real API Gateway's never has one), so the refusal matrix and the
// discovery run with the audience configured, as for a custom domain.
// TestAuthLambdaEndpointFromEvent checks the derivation itself.
func (ep *authEndpoint) AuthEnv(issuer string) []string {
	env := []string{"MCP_AUTH_ISSUER=" + issuer}
	if ep.pinAudience {
		env = append(env, "MCP_AUTH_AUDIENCE="+ep.URL)
	}
	return env
}

// Start starts the function with env (KEY=VALUE) added to its
// environment; it is stopped when the test ends.
func (ep *authEndpoint) Start(env ...string) { ep.start(env...) }

// MetadataURL is where the endpoint's protected-resource metadata is,
// RFC 9728's well-known URL for its path.
func (ep *authEndpoint) MetadataURL() string {
	return ep.Origin + "/.well-known/oauth-protected-resource/mcp"
}

var (
	fnOnce sync.Once
	fnBin  string
	fnErr  error
)

// TestMain removes the function binary the authorization tests built.
// (The integration build, which leaves these tests out, has its own.)
func TestMain(m *testing.M) {
	code := m.Run()
	if fnBin != "" {
		os.RemoveAll(filepath.Dir(fnBin))
	}
	os.Exit(code)
}

// functionBinary builds functions/fixture (the note book on the
// production composition) once per test binary, as the
// Lambda bootstrap (static, lambda.norpc); the same binary serves locally
// when its environment has no Lambda runtime API.
func functionBinary(t *testing.T) string {
	t.Helper()
	fnOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpfunction")
		if err != nil {
			fnErr = err
			return
		}
		fnBin = filepath.Join(dir, "bootstrap")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", fnBin, "./functions/fixture")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fnErr = fmt.Errorf("building functions/fixture: %v\n%s", err, out)
		}
	})
	if fnErr != nil {
		t.Fatal(fnErr)
	}
	return fnBin
}

// reserveLocal picks a free loopback port for the binary's local server.
func reserveLocal(t *testing.T) *authEndpoint {
	t.Helper()
	bin := functionBinary(t)
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := loopback.Addr(port)
	ep := &authEndpoint{URL: "http://" + addr + "/mcp", Origin: "http://" + addr,
		Client: &http.Client{Timeout: testTimeout}, log: &syncbuf.Buffer{}}
	ep.start = func(env ...string) {
		t.Helper()
		cmd := exec.Command(bin)
		cmd.Env = append(inheritedEnv(), append([]string{"MCP_ADDR=" + addr}, env...)...)
		cmd.Stderr = ep.log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		t.Cleanup(func() {
			stopGroup(cmd, done)
			if t.Failed() {
				t.Logf("local function output (the end):\n%s", tail(ep.log.String()))
			}
		})
		printed := make(chan string, 1)
		go func() {
			r := bufio.NewReader(stdout)
			for {
				line, err := r.ReadString('\n')
				ep.log.Write([]byte(line))
				if u, ok := strings.CutPrefix(strings.TrimSpace(line), "MCP endpoint: "); ok {
					select {
					case printed <- u:
					default:
					}
				}
				if err != nil {
					break
				}
			}
			cmd.Wait()
			close(done)
		}()
		select {
		case u := <-printed:
			if u != ep.URL {
				t.Fatalf("the function listens at %s, want %s", u, ep.URL)
			}
		case <-done:
			t.Fatalf("the function ended before listening:\n%s", ep.log.String())
		case <-time.After(20 * time.Second):
			t.Fatalf("the function printed no URL in time:\n%s", ep.log.String())
		}
	}
	return ep
}

// tail is the end of a process's output, for a failing test's log.
func tail(s string) string { return s[max(0, len(s)-6<<10):] }

// inheritedEnv is this process's environment without what would change
// the function's mode or configuration.
func inheritedEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MCP_") || strings.HasPrefix(kv, "AWS_LAMBDA_") || strings.HasPrefix(kv, "LOG_LEVEL=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// stopGroup ends cmd's process group (SIGTERM, then SIGKILL) and waits
// until done is closed.
func stopGroup(cmd *exec.Cmd, done <-chan struct{}) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// reserveLambda starts the TLS front on a loopback port; Start puts the
// function behind it, under the emulator. The front is the template's
// HTTP API door as the tests hold it to AWS's contract: the function's
// WWW-Authenticate renamed, the challenge set by API Gateway from the
// function's relay header (rie.TemplateResponseParameters).
func reserveLambda(t *testing.T) *authEndpoint { return reserveLambdaWith(t, nil) }

// reserveLambdaNoChallenge is reserveLambda behind a door that delivers no
// challenge at all: the function's renamed, none set by the gateway. A
// client then finds the metadata at RFC 9728's well-known URL.
func reserveLambdaNoChallenge(t *testing.T) *authEndpoint {
	return reserveLambdaWith(t, rie.ResponseParameters{})
}

func reserveLambdaWith(t *testing.T, params rie.ResponseParameters) *authEndpoint {
	t.Helper()
	bin := functionBinary(t)
	riePath, _ := filepath.Abs("../.tools/bin/aws-lambda-rie")
	if p := os.Getenv("AWS_LAMBDA_RIE"); p != "" {
		riePath = p
	}
	if _, err := os.Stat(riePath); err != nil {
		t.Fatalf("aws-lambda-rie is not installed (%v); run make tools", err)
	}
	ep, setFront := tlsFront(t)
	ep.start = func(env ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bin, Env: env, Output: ep.log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			setFront(nil)
			e.Stop()
			if t.Failed() {
				t.Logf("emulator and function output (the end):\n%s", tail(ep.log.String()))
			}
		})
		setFront(&rie.Front{Emulator: e, Parameters: params})
	}
	return ep
}

// reserveStreamREST starts the TLS front of the template's streaming
// door, protected: a REST API on a custom domain with its stage at the
// root, /mcp streamed from the function (invoked through the Runtime API
// stand-in, which holds it to Lambda's streaming contract), the
// metadata's mock integrations, and the function as the Lambda REQUEST
// authorizer whose refusals are the template's gateway responses. The
// function's own WWW-Authenticate is renamed (documented for REST APIs):
// every challenge a client sees is API Gateway's. The mock document and
// the challenges are the template's for the function's environment: its
// issuer, AuthScopesSupported from MCP_AUTH_SCOPES_SUPPORTED (the demo's
// two scopes when unset), and AuthStepUpScopes both scopes.
func reserveStreamREST(t *testing.T) *authEndpoint { return reserveStream(t, rie.RESTAPI, true, 0) }

// reserveStreamBuffering is reserveStreamREST behind a door that delivers
// every answer whole (the HTTP API's front): a streaming door that does
// not stream.
func reserveStreamBuffering(t *testing.T) *authEndpoint {
	return reserveStream(t, rie.HTTPAPI, true, 0)
}

// reserveStreamNoAuthorizer is reserveStreamREST without the authorizer
// and its gateway responses: the function's own challenges, renamed.
func reserveStreamNoAuthorizer(t *testing.T) *authEndpoint {
	return reserveStream(t, rie.RESTAPI, false, 0)
}

// reserveStream reserves a streaming door: door's front, with the
// template's authorizer or not, and idle (if set) in place of the door's
// idle timeout.
func reserveStream(t *testing.T, door rie.Door, authorizer bool, idle time.Duration) *authEndpoint {
	t.Helper()
	bin := functionBinary(t)
	ep, setFront := tlsFront(t)
	ep.start = func(env ...string) {
		t.Helper()
		// The template's parameters, as the function's environment says.
		setting := func(key string) string {
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, key+"="); ok {
					return v
				}
			}
			return ""
		}
		issuer, prefix := setting("MCP_AUTH_ISSUER"), setting("MCP_AUTH_SCOPE_PREFIX")
		facade, authz, token := setting("MCP_AUTH_REGISTRATION_CLIENT_ID"), setting("MCP_AUTH_AUTHORIZATION_ENDPOINT"), setting("MCP_AUTH_TOKEN_ENDPOINT")
		scopes := strings.Fields(setting("MCP_AUTH_SCOPES_SUPPORTED"))
		// The template's AuthScopesSupported and AuthStepUpScopes, as an
		// operator sets them: the provider's names of the demo's scopes.
		stepUp := []string{prefix + scopeRead, prefix + scopeWrite}
		if len(scopes) == 0 {
			scopes = stepUp
		}
		rt, err := runtimeapi.Start(runtimeapi.Options{Bootstrap: bin, Timeout: testTimeout,
			Env: append([]string{"MCP_STREAM_EVENTS=rest", "MCP_AUDIENCE=" + ep.URL}, env...)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			setFront(nil)
			rt.Stop()
			if t.Failed() {
				t.Logf("function output (the end):\n%s", tail(rt.Log()))
			}
		})
		f := &rie.StreamFront{Function: rt, Door: door, Idle: idle}
		if door == rie.RESTAPI {
			f.REST = rie.REST{Domain: true, Metadata: rie.TemplateMetadata(ep.URL, issuer, scopes)}
			switch {
			case setting("MCP_AUTH_PROXY") == "true":
				// The template's authorization proxy on this door
				// (AuthProxy): the endpoint names itself, and its
				// resources reach the function outside the authorizer.
				f.REST.Metadata = rie.TemplateMetadata(ep.URL, ep.URL, scopes)
				f.REST.Proxy = true
			case facade != "":
				// The template's registration facade on this door
				// (StreamingRegistration): the endpoint names itself.
				f.REST.Metadata = rie.TemplateMetadata(ep.URL, ep.URL, scopes)
				f.REST.ASMetadata = rie.TemplateAuthorizationServerMetadata(ep.URL, authz, token, scopes)
			}
			if authorizer {
				f.REST.Authorizer = rie.TemplateGatewayResponses(ep.MetadataURL(), stepUp)
			}
		}
		setFront(f)
	}
	return ep
}

// tlsFront starts a TLS server on loopback, as API Gateway serves a door,
// that records each request (frontLog) and passes it to the front set
// with set: 503 while none is (before the function behind it started, or
// after it stopped). The endpoint's start is left to the caller.
func tlsFront(t *testing.T) (ep *authEndpoint, set func(http.Handler)) {
	t.Helper()
	var front atomic.Pointer[http.Handler]
	set = func(h http.Handler) {
		if h == nil {
			front.Store(nil)
			return
		}
		front.Store(&h)
	}
	fl := &frontLog{}
	ts := httptest.NewUnstartedServer(fl.record(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := front.Load()
		if h == nil {
			http.Error(w, "front: the function has not started", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	})))
	ts.Config.ReadHeaderTimeout = 10 * time.Second
	ts.StartTLS()
	t.Cleanup(ts.Close)
	client := ts.Client()
	client.Timeout = testTimeout
	ca := filepath.Join(t.TempDir(), "front.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &authEndpoint{URL: ts.URL + "/mcp", Origin: ts.URL, Client: client, Front: fl, CAFile: ca, pinAudience: true, log: &syncbuf.Buffer{}}, set
}

// frontLog records what reached the front: the API Gateway side of a
// client's journey.
type frontLog struct {
	mu      sync.Mutex
	entries []frontEntry
}

// frontEntry is one request at the front and the status it got.
type frontEntry struct {
	Method, Path, RawQuery string
	Authorization          string
	Status                 int
	Challenge              []string
}

func (f *frontLog) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		f.mu.Lock()
		f.entries = append(f.entries, frontEntry{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
			Authorization: r.Header.Get("Authorization"), Status: sw.status, Challenge: w.Header().Values("WWW-Authenticate")})
		f.mu.Unlock()
	})
}

// Entries returns a copy of the log.
func (f *frontLog) Entries() []frontEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]frontEntry(nil), f.entries...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the front flush a streamed answer through the recorder
// (http.ResponseController).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// rpcCall is one JSON-RPC request to the endpoint.
type rpcCall struct {
	// Method is the JSON-RPC method; Tool the tool of a tools/call.
	Method, Tool string
	// Args are the tool's arguments (JSON; "{}" when empty).
	Args string
	// Extra is more of params (JSON members without braces), such as
	// requestState.
	Extra string
	// Caps are the client capabilities ("{}" when empty).
	Caps string
	// Meta is more of params._meta (JSON members without braces), such
	// as a progressToken.
	Meta string
	// Header is added to the request's headers.
	Header http.Header
	// Query is the request URL's query string.
	Query string
}

// reply is the endpoint's answer to an rpcCall.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
	ID     int64
	RPC    rpcResponse
	// Cut is the error the answer's body ended with, when the connection
	// was cut (only with authEndpoint.cutOK).
	Cut error
}

func (r reply) String() string {
	return fmt.Sprintf("HTTP %d, WWW-Authenticate %q: %s", r.Status, r.Header.Values("WWW-Authenticate"), r.Body)
}

// call sends c with token as its bearer token ("" for none) and decodes
// the JSON-RPC answer, from a JSON body or an event stream's last event.
func (ep *authEndpoint) call(ctx context.Context, t *testing.T, token string, c rpcCall) reply {
	t.Helper()
	id := ep.ids.Add(1)
	caps, args := c.Caps, c.Args
	if caps == "" {
		caps = "{}"
	}
	if args == "" {
		args = "{}"
	}
	meta := ""
	if c.Meta != "" {
		meta = "," + c.Meta
	}
	params := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + meta + `}`
	if c.Tool != "" {
		params = `"name":` + strconv.Quote(c.Tool) + `,"arguments":` + args + "," + params
	}
	if c.Extra != "" {
		params = c.Extra + "," + params
	}
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":` + strconv.Quote(c.Method) + `,"params":{` + params + `}}`
	u := ep.URL
	if c.Query != "" {
		u += "?" + c.Query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {v20260728}, "Mcp-Method": {c.Method}}
	if c.Tool != "" {
		req.Header.Set("Mcp-Name", c.Tool)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	resp, err := ep.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.Tool, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		if ep.cutOK {
			return reply{Status: resp.StatusCode, Header: resp.Header, Body: b, ID: id, Cut: err}
		}
		t.Fatalf("%s %s: reading the answer: %v", c.Method, c.Tool, err)
	}
	r := reply{Status: resp.StatusCode, Header: resp.Header, Body: b, ID: id}
	msg := b
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for line := range strings.Lines(string(b)) {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok {
				msg = []byte(strings.TrimSpace(d))
			}
		}
	}
	if err := json.Unmarshal(msg, &r.RPC); err != nil {
		t.Fatalf("%s %s: the answer is not JSON-RPC (%v): %s", c.Method, c.Tool, err, r)
	}
	return r
}

// result returns the reply's JSON-RPC result, failing t unless the call
// succeeded with HTTP 200.
func (r reply) result(t *testing.T) map[string]any {
	t.Helper()
	if r.Status != http.StatusOK || r.RPC.Error != nil || r.RPC.Result == nil {
		t.Fatalf("want a result: %s", r)
	}
	if r.RPC.Result["isError"] == true {
		t.Fatalf("the tool failed: %s", r)
	}
	return r.RPC.Result
}

// structuredOf returns a result's structuredContent.
func structuredOf(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	s, ok := res["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("no structuredContent in %v", res)
	}
	return s
}

// noteIDs returns the ids of the notes a notes_search result lists.
func noteIDs(t *testing.T, res map[string]any) []string {
	t.Helper()
	notes, ok := structuredOf(t, res)["notes"].([]any)
	if !ok {
		t.Fatalf("no notes in %v", res)
	}
	var ids []string
	for _, n := range notes {
		id, _ := n.(map[string]any)["id"].(string)
		ids = append(ids, id)
	}
	return ids
}

// parseChallenge parses a WWW-Authenticate value holding one challenge,
// strictly: auth-scheme, then comma-separated auth-params whose values
// are quoted strings (RFC 9110 11.6.1; RFC 6750 3 and RFC 9728 5.1 quote
// every parameter they define). A repeated parameter is an error.
func parseChallenge(s string) (scheme string, params map[string]string, err error) {
	scheme, rest, _ := strings.Cut(s, " ")
	if !isToken(scheme) {
		return "", nil, fmt.Errorf("bad auth-scheme in %q", s)
	}
	params = map[string]string{}
	rest = strings.TrimLeft(rest, " \t")
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || !isToken(rest[:eq]) {
			return "", nil, fmt.Errorf("bad auth-param name in %q", s)
		}
		name := rest[:eq]
		rest = rest[eq+1:]
		if !strings.HasPrefix(rest, `"`) {
			return "", nil, fmt.Errorf("%s is not a quoted string in %q", name, s)
		}
		var v strings.Builder
		i, closed := 1, false
		for ; i < len(rest); i++ {
			switch c := rest[i]; {
			case c == '\\' && i+1 < len(rest):
				i++
				v.WriteByte(rest[i])
			case c == '"':
				closed = true
			default:
				v.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return "", nil, fmt.Errorf("unterminated quoted string in %q", s)
		}
		if _, dup := params[name]; dup {
			return "", nil, fmt.Errorf("%s twice in %q", name, s)
		}
		params[name] = v.String()
		rest = strings.TrimLeft(rest[i+1:], " \t")
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return "", nil, fmt.Errorf("no comma after %s in %q", name, s)
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if rest == "" {
			return "", nil, errors.New("trailing comma in " + strconv.Quote(s))
		}
	}
	return scheme, params, nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// checkChallenge asserts that h carries exactly one WWW-Authenticate
// challenge, Bearer with exactly the parameters want (an
// error_description is allowed next to an error, as RFC 6750 allows).
func checkChallenge(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	vals := h.Values("WWW-Authenticate")
	if len(vals) != 1 {
		t.Errorf("WWW-Authenticate %q: want one challenge", vals)
		return
	}
	scheme, params, err := parseChallenge(vals[0])
	if err != nil {
		t.Errorf("WWW-Authenticate: %v", err)
		return
	}
	if scheme != "Bearer" {
		t.Errorf("WWW-Authenticate %q: scheme %q, want Bearer", vals[0], scheme)
	}
	if d, ok := params["error_description"]; ok && want["error"] != "" {
		t.Logf("error_description %q", d)
		delete(params, "error_description")
	}
	if !equalMaps(params, want) {
		t.Errorf("WWW-Authenticate %q:\n got params %v\nwant params %v", vals[0], params, want)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// getJSONDoc GETs url with no credentials and decodes its JSON answer.
func getJSONDoc(ctx context.Context, t *testing.T, c *http.Client, url string, out any) http.Header {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(out); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
	return resp.Header
}
