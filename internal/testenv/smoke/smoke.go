// Package smoke checks a deployed endpoint from outside, as a client
// sees it after `sam deploy`: the OAuth discovery walk from an
// unauthenticated call, the protocol's refusals, a keyed call and its
// replay, the first progress event through the streaming door, a CORS
// preflight. `make smoke URL=...` runs it (cmd/ is its command); `make
// test` runs it against the emulated stack. Each check prints one verdict
// line; Failed counts those that failed. What the endpoint sent (URLs,
// versions, bodies) is quoted or JSON-encoded in a verdict, never printed
// raw to the terminal.
package smoke

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Config is what to check.
type Config struct {
	// URL is the endpoint (the stack's EndpointUrl output, or the custom
	// domain's).
	URL string
	// Token, if set, is a bearer token for URL; without it a protected
	// endpoint's calls are not checked.
	Token string
	// StreamURL, if set, is the streaming door's endpoint (StreamingUrl);
	// StreamToken a bearer token for it (its audience is its own URL
	// unless the stack names one canonical URL), Token when empty.
	StreamURL, StreamToken string
	// Origin, if set, is a browser origin the stack allows
	// (AllowedOrigins): the preflight is checked.
	Origin string
	// KeyedTool and KeyedArgs are the tool called twice with one
	// idempotency key; ProgressTool and ProgressArgs the tool that
	// reports progress. Their defaults are the demo's.
	KeyedTool, KeyedArgs       string
	ProgressTool, ProgressArgs string
	// ProgressGap is how long the progress tool runs on after its first
	// report, as its arguments make it (the demo's pauseMs): the first
	// progress event must arrive at least half of it before the result,
	// or the door delivered the stream whole. Default 1 s.
	ProgressGap time.Duration
	// ConformanceURL, if set, is the conformance fixture's endpoint (the
	// ConformanceUrl output of ConformanceFixture=true): the official
	// suite's server scenarios that 2026-07-28 requires are run against
	// it, but those that need a loopback URL. Tools is the directory of
	// the npm test tools that hold the suite (default "tools").
	ConformanceURL, Tools string
	// Client makes the requests; nil is a client with a 60-second
	// timeout.
	Client *http.Client
}

const revision = stateless.Version20260728

// Verdict is one check's outcome.
type Verdict struct {
	Check  string
	Result string // PASS, FAIL or SKIP
	Detail string
}

func (v Verdict) String() string { return fmt.Sprintf("%s %-20s %s", v.Result, v.Check, v.Detail) }

// Run runs the checks, writes each verdict to w as it is reached, and
// returns the verdicts.
func Run(ctx context.Context, c Config, w io.Writer) []Verdict {
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 60 * time.Second}
	}
	if c.StreamToken == "" {
		c.StreamToken = c.Token
	}
	r := &run{c: c, w: w, demoKeyed: c.KeyedTool == "", demoProgress: c.ProgressTool == ""}
	if r.demoKeyed {
		r.c.KeyedTool, r.c.KeyedArgs = "notes_add", `{"text":"smoke test"}`
	}
	if r.demoProgress {
		r.c.ProgressTool, r.c.ProgressArgs = "notes_digest", `{"pauseMs":1000}`
	}
	if r.c.ProgressGap <= 0 {
		r.c.ProgressGap = time.Second
	}
	r.discovery(ctx)
	r.protocol(ctx)
	r.keyed(ctx)
	r.streamDiscovery(ctx)
	r.streaming(ctx)
	r.preflight(ctx)
	r.conformance(ctx)
	return r.verdicts
}

// Conformance runs the conformance check alone (c.ConformanceURL and
// c.Tools), writes its verdict to w and returns it.
func Conformance(ctx context.Context, c Config, w io.Writer) Verdict {
	r := &run{c: c, w: w}
	r.conformance(ctx)
	return r.verdicts[0]
}

// Failed counts the failed verdicts.
func Failed(vs []Verdict) int {
	n := 0
	for _, v := range vs {
		if v.Result == "FAIL" {
			n++
		}
	}
	return n
}

type run struct {
	c         Config
	w         io.Writer
	verdicts  []Verdict
	protected bool
	// unreachable is why the endpoint's URL gave no HTTP answer to the
	// first call ("" when it answered): every check after it is skipped,
	// rather than failing again for the same reason.
	unreachable string
	// tools are the names tools/list answered (nil: not listed);
	// demoKeyed and demoProgress say the checks call the demo's tools,
	// as no other was named.
	tools                   []string
	demoKeyed, demoProgress bool
}

func (r *run) verdict(check, result, format string, args ...any) {
	v := Verdict{Check: check, Result: result, Detail: fmt.Sprintf(format, args...)}
	r.verdicts = append(r.verdicts, v)
	fmt.Fprintln(r.w, v)
}

func (r *run) pass(check, format string, args ...any) { r.verdict(check, "PASS", format, args...) }
func (r *run) fail(check, format string, args ...any) { r.verdict(check, "FAIL", format, args...) }
func (r *run) skip(check, format string, args ...any) { r.verdict(check, "SKIP", format, args...) }

// answer is an HTTP answer to a JSON-RPC request: its messages (one for a
// JSON answer, the events' for a stream) and when each arrived.
type answer struct {
	Status   int
	Header   http.Header
	Messages []map[string]any
	Arrived  []time.Duration
}

// last is the answer's final message (the response), or nil.
func (a *answer) last() map[string]any {
	if len(a.Messages) == 0 {
		return nil
	}
	return a.Messages[len(a.Messages)-1]
}

// errorOf returns the response's error code and data, if it is an error.
func (a *answer) errorOf() (code int, data map[string]any, ok bool) {
	e, ok := a.last()["error"].(map[string]any)
	if !ok {
		return 0, nil, false
	}
	c, _ := e["code"].(float64)
	data, _ = e["data"].(map[string]any)
	return int(c), data, true
}

// call posts one JSON-RPC request; meta false leaves out params._meta.
func (r *run) call(ctx context.Context, endpoint, token, method, name string, params map[string]any, meta bool, extra http.Header) (*answer, error) {
	if params == nil {
		params = map[string]any{}
	}
	if meta {
		m, _ := params["_meta"].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m["io.modelcontextprotocol/protocolVersion"], m["io.modelcontextprotocol/clientCapabilities"] = revision, map[string]any{}
		params["_meta"] = m
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", revision)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	start := time.Now()
	resp, err := r.c.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	a := &answer{Status: resp.StatusCode, Header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					return nil, fmt.Errorf("an event that is not JSON: %.80q", data)
				}
				a.Messages, a.Arrived = append(a.Messages, m), append(a.Arrived, time.Since(start))
			}
		}
		return a, sc.Err()
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		a.Messages, a.Arrived = []map[string]any{m}, []time.Duration{time.Since(start)}
	}
	return a, nil
}

// getJSON fetches a JSON document.
func (r *run) getJSON(ctx context.Context, u string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.c.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// discovery is the OAuth walk a client makes from an unauthenticated
// call: the 401 and its challenge, the protected-resource metadata where
// the challenge (or RFC 9728's well-known URL) says, the authorization
// server's metadata.
func (r *run) discovery(ctx context.Context) {
	a, err := r.call(ctx, r.c.URL, "", "server/discover", "", nil, true, nil)
	if err != nil {
		r.unreachable = err.Error()
		r.fail("unauthenticated", "no answer from %s: %q; the checks that call it are skipped", r.c.URL, err.Error())
		return
	}
	switch a.Status {
	case http.StatusOK:
		r.pass("unauthenticated", "200: the endpoint is open (AllowAnonymous)")
		r.skip("challenge", "open endpoint")
		return
	case http.StatusUnauthorized:
		r.protected = true
		r.pass("unauthenticated", "401")
	default:
		r.fail("unauthenticated", "status %d, want 401 (protected) or 200 (open)", a.Status)
		return
	}
	prm := auth.MetadataURL(r.c.URL)
	challenge := a.Header.Get("WWW-Authenticate")
	switch rm := challengeParam(challenge, "resource_metadata"); {
	case challenge == "" && a.Header.Get("X-Amzn-Remapped-WWW-Authenticate") != "":
		r.fail("challenge", "no WWW-Authenticate: the door renamed it to x-amzn-Remapped-WWW-Authenticate (docs/aws-contract.md)")
	case challenge == "":
		r.fail("challenge", "the 401 has no WWW-Authenticate")
	case rm == "":
		r.fail("challenge", "WWW-Authenticate names no resource_metadata: %.200q", challenge)
	default:
		r.pass("challenge", "resource_metadata %q", rm)
		prm = rm
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	status, err := r.getJSON(ctx, prm, &meta)
	switch {
	case err != nil:
		r.fail("metadata", "%q: %q", prm, err.Error())
		return
	case status != http.StatusOK:
		r.fail("metadata", "%q answered %d", prm, status)
		return
	case !strings.EqualFold(strings.TrimSuffix(meta.Resource, "/"), strings.TrimSuffix(r.c.URL, "/")):
		r.fail("metadata", "resource %q is not the endpoint %s: clients refuse it", meta.Resource, r.c.URL)
		return
	case len(meta.AuthorizationServers) == 0:
		r.fail("metadata", "no authorization_servers")
		return
	}
	r.pass("metadata", "%q: authorization server %q, scopes %q", prm, meta.AuthorizationServers[0], meta.ScopesSupported)
	issuer := strings.TrimSuffix(meta.AuthorizationServers[0], "/")
	u, err := url.Parse(issuer)
	if err != nil {
		r.fail("authorization-server", "issuer %q: %q", issuer, err.Error())
		return
	}
	// RFC 8414's well-known URL, then OpenID Connect discovery's.
	candidates := []string{u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + u.EscapedPath(), issuer + "/.well-known/openid-configuration"}
	for _, cand := range candidates {
		var as struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"token_endpoint"`
		}
		if status, err := r.getJSON(ctx, cand, &as); err == nil && status == http.StatusOK && as.TokenEndpoint != "" {
			r.pass("authorization-server", "%q: token endpoint %q", cand, as.TokenEndpoint)
			return
		}
	}
	r.fail("authorization-server", "no metadata with a token endpoint at %q", candidates)
}

// challengeParam returns a parameter of a Bearer challenge.
func challengeParam(challenge, name string) string {
	i := strings.Index(challenge, name+`="`)
	if i < 0 {
		return ""
	}
	rest := challenge[i+len(name)+2:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// callable reports whether calls can be checked: the endpoint is open or
// a token was given.
func (r *run) callable(check string) bool {
	if r.unreachable != "" {
		r.skip(check, "the endpoint did not answer (unauthenticated, above)")
		return false
	}
	if r.protected && r.c.Token == "" {
		r.skip(check, "protected endpoint: set TOKEN")
		return false
	}
	return true
}

// notDemo says why a check that calls the demo's tool (demo: no other
// was named) cannot run here: the endpoint lists no such tool, as a
// fork's does not; set names the settings that name one of its own.
func (r *run) notDemo(demo bool, tool, set string) string {
	if !demo || r.tools == nil || slices.Contains(r.tools, tool) {
		return ""
	}
	return fmt.Sprintf("the endpoint has no %s (the demo's): on a fork, set %s", tool, set)
}

// protocol checks the answers every client depends on: discovery, the
// tool list, and the refusals of a request without its _meta and of an
// unsupported revision.
func (r *run) protocol(ctx context.Context) {
	if r.callable("discover") {
		a, err := r.call(ctx, r.c.URL, r.c.Token, "server/discover", "", nil, true, nil)
		res, _ := resultOf(a, err)
		if versions, _ := res["supportedVersions"].([]any); slices.Contains(versions, any(revision)) {
			r.pass("discover", "supported versions %s", encoded(versions))
		} else {
			r.fail("discover", "%s", describe(a, err, "supportedVersions with "+revision))
		}
	}
	if r.callable("tools-list") {
		a, err := r.call(ctx, r.c.URL, r.c.Token, "tools/list", "", nil, true, nil)
		res, _ := resultOf(a, err)
		if tools, _ := res["tools"].([]any); len(tools) > 0 {
			r.tools = []string{}
			for _, t := range tools {
				if m, ok := t.(map[string]any); ok {
					name, _ := m["name"].(string)
					r.tools = append(r.tools, name)
				}
			}
			r.pass("tools-list", "%d tools", len(tools))
		} else {
			r.fail("tools-list", "%s", describe(a, err, "a list of tools"))
		}
	}
	if r.callable("missing-meta") {
		a, err := r.call(ctx, r.c.URL, r.c.Token, "tools/list", "", nil, false, nil)
		if code, _, ok := errorCode(a, err); ok && code == -32602 && a.Status == http.StatusBadRequest {
			r.pass("missing-meta", "400, -32602")
		} else {
			r.fail("missing-meta", "%s", describe(a, err, "400 with -32602"))
		}
	}
	if r.callable("unsupported-version") {
		params := map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "1999-01-01", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}}
		// The header says what the body says: a mismatch is refused first.
		a, err := r.call(ctx, r.c.URL, r.c.Token, "tools/list", "", params, false, http.Header{"Mcp-Protocol-Version": {"1999-01-01"}})
		if code, data, ok := errorCode(a, err); ok && code == -32022 && data["supported"] != nil {
			r.pass("unsupported-version", "-32022, supported %s", encoded(data["supported"]))
		} else {
			r.fail("unsupported-version", "%s", describe(a, err, "-32022 with data.supported"))
		}
	}
}

// keyed calls the keyed tool twice with one idempotency key: the second
// must be the first's answer again.
func (r *run) keyed(ctx context.Context) {
	if !r.callable("keyed-call") {
		r.skip("keyed-replay", "no first call")
		return
	}
	if why := r.notDemo(r.demoKeyed, r.c.KeyedTool, "KEYED_TOOL=<a side-effecting tool of yours> KEYED_ARGS='<its arguments, JSON>'"); why != "" {
		r.skip("keyed-call", "%s", why)
		r.skip("keyed-replay", "no first call")
		return
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(r.c.KeyedArgs), &args); err != nil {
		r.fail("keyed-call", "the keyed tool's arguments: %v", err)
		r.skip("keyed-replay", "no first call")
		return
	}
	key := make([]byte, 16)
	rand.Read(key)
	h := http.Header{"Idempotency-Key": {"smoke-" + hex.EncodeToString(key)}}
	params := map[string]any{"name": r.c.KeyedTool, "arguments": args}
	call := func() (map[string]any, string) {
		a, err := r.call(ctx, r.c.URL, r.c.Token, "tools/call", r.c.KeyedTool, params, true, h)
		if res, ok := resultOf(a, err); ok && res["isError"] != true {
			return res, ""
		}
		return nil, describe(a, err, r.c.KeyedTool+"'s result")
	}
	first, why := call()
	if first == nil {
		r.fail("keyed-call", "%s", why)
		r.skip("keyed-replay", "no first call")
		return
	}
	r.pass("keyed-call", "%q answered", r.c.KeyedTool)
	second, why := call()
	if second == nil {
		r.fail("keyed-replay", "%s", why)
		return
	}
	// The replay is the first answer again, marked as one (its _meta
	// aside, the same result).
	meta, _ := second["_meta"].(map[string]any)
	delete(first, "_meta")
	delete(second, "_meta")
	a, b := encoded(first), encoded(second)
	switch {
	case meta[stateless.MetaReplay] != true:
		r.fail("keyed-replay", "the second call with the key is not marked %s: the call ran twice (%.200s, then %.200s)", stateless.MetaReplay, a, b)
	case a != b:
		r.fail("keyed-replay", "the replay answered %.200s, the call %.200s", b, a)
	default:
		r.pass("keyed-replay", "the first answer, marked a replay: %.120s", a)
	}
}

// streamDiscovery checks the start of the OAuth walk through the
// streaming door: an unauthenticated call is answered 401 with a
// challenge naming metadata that is served and names the door's URL as
// its resource. (A REST API renames the function's own WWW-Authenticate:
// the template's authorizer and gateway responses send this one.)
func (r *run) streamDiscovery(ctx context.Context) {
	const check = "stream-discovery"
	if r.c.StreamURL == "" {
		r.skip(check, "no STREAM_URL")
		return
	}
	a, err := r.call(ctx, r.c.StreamURL, "", "server/discover", "", nil, true, nil)
	switch {
	case err != nil:
		r.fail(check, "%q", err.Error())
		return
	case a.Status == http.StatusOK && !r.protected:
		r.skip(check, "open endpoint")
		return
	case a.Status != http.StatusUnauthorized:
		r.fail(check, "status %d, want 401", a.Status)
		return
	}
	challenge := a.Header.Get("WWW-Authenticate")
	rm := challengeParam(challenge, "resource_metadata")
	if rm == "" {
		r.fail(check, "the 401 names no resource_metadata (WWW-Authenticate %.200q, x-amzn-Remapped-WWW-Authenticate %.200q)",
			challenge, a.Header.Get("X-Amzn-Remapped-WWW-Authenticate"))
		return
	}
	var meta struct {
		Resource string `json:"resource"`
	}
	status, err := r.getJSON(ctx, rm, &meta)
	switch {
	case err != nil:
		r.fail(check, "%q: %q", rm, err.Error())
	case status != http.StatusOK:
		r.fail(check, "%q answered %d", rm, status)
	case !strings.EqualFold(strings.TrimSuffix(meta.Resource, "/"), strings.TrimSuffix(r.c.StreamURL, "/")):
		r.fail(check, "resource %q is not the door's URL %s: clients refuse it", meta.Resource, r.c.StreamURL)
	default:
		r.pass(check, "401, resource_metadata %q", rm)
	}
}

// streaming calls the progress tool through the streaming door and times
// its first progress event and its result.
func (r *run) streaming(ctx context.Context) {
	if r.c.StreamURL == "" {
		r.skip("streaming", "no STREAM_URL")
		return
	}
	if !r.callable("streaming") {
		return
	}
	if why := r.notDemo(r.demoProgress, r.c.ProgressTool, "PROGRESS_TOOL=<a tool of yours that reports progress> PROGRESS_ARGS='<JSON>' PROGRESS_GAP=<how long it runs on after its first report>"); why != "" {
		r.skip("streaming", "%s", why)
		return
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(r.c.ProgressArgs), &args); err != nil {
		r.fail("streaming", "the progress tool's arguments: %v", err)
		return
	}
	params := map[string]any{"name": r.c.ProgressTool, "arguments": args, "_meta": map[string]any{"progressToken": "smoke"}}
	a, err := r.call(ctx, r.c.StreamURL, r.c.StreamToken, "tools/call", r.c.ProgressTool, params, true, nil)
	if err != nil {
		r.fail("streaming", "%q", err.Error())
		return
	}
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		r.fail("streaming", "status %d, Content-Type %q: want an event stream", a.Status, ct)
		return
	}
	first := -1
	for i, m := range a.Messages {
		if m["method"] == "notifications/progress" {
			first = i
			break
		}
	}
	if _, ok := a.last()["result"]; !ok || first < 0 {
		r.fail("streaming", "%d events, no progress before the result: %.200v", len(a.Messages), a.last())
		return
	}
	// A buffered answer brings every event with the result; a tool that
	// runs on after its first report shows, in the gap, that they came
	// live.
	firstAt, resultAt := a.Arrived[first], a.Arrived[len(a.Arrived)-1]
	if gap := resultAt - firstAt; gap < r.c.ProgressGap/2 {
		r.fail("streaming", "the first progress event came %v before the result, the tool ran on for %v after it: the door delivered the stream whole",
			gap.Round(time.Millisecond), r.c.ProgressGap)
		return
	}
	r.pass("streaming", "first progress event after %v, result after %v", firstAt.Round(time.Millisecond), resultAt.Round(time.Millisecond))
}

// preflight checks the CORS preflight a browser on Origin sends.
func (r *run) preflight(ctx context.Context) {
	if r.c.Origin == "" {
		r.skip("cors-preflight", "no ORIGIN")
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, r.c.URL, nil)
	if err != nil {
		r.fail("cors-preflight", "%v", err)
		return
	}
	req.Header.Set("Origin", r.c.Origin)
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,mcp-method,mcp-protocol-version")
	resp, err := r.c.Client.Do(req)
	if err != nil {
		r.fail("cors-preflight", "%v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 || resp.Header.Get("Access-Control-Allow-Origin") != r.c.Origin {
		r.fail("cors-preflight", "status %d, Access-Control-Allow-Origin %q: want 2xx allowing %s", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), r.c.Origin)
		return
	}
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"authorization", "mcp-method"} {
		if !strings.Contains(allowed, h) && !strings.Contains(allowed, "*") {
			r.fail("cors-preflight", "Access-Control-Allow-Headers %q lacks %s", allowed, h)
			return
		}
	}
	r.pass("cors-preflight", "%d, allows %s", resp.StatusCode, r.c.Origin)
}

// resultOf returns an answer's result.
func resultOf(a *answer, err error) (map[string]any, bool) {
	if err != nil || a == nil || a.Status != http.StatusOK {
		return nil, false
	}
	res, ok := a.last()["result"].(map[string]any)
	return res, ok
}

// errorCode returns an answer's JSON-RPC error.
func errorCode(a *answer, err error) (int, map[string]any, bool) {
	if err != nil || a == nil {
		return 0, nil, false
	}
	return a.errorOf()
}

// encoded is v as JSON, which escapes what a terminal would act on.
func encoded(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// describe says what an answer was, for a failed check.
func describe(a *answer, err error, want string) string {
	switch {
	case err != nil:
		return fmt.Sprintf("%q", err.Error())
	case a == nil:
		return "no answer"
	}
	b, _ := json.Marshal(a.last())
	return fmt.Sprintf("status %d, %.200s: want %s", a.Status, b, want)
}
