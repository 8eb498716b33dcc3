package stateless_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The exact header values a browser sees; pinned here so that a change to
// the lists is a deliberate one (the SAM template's CorsConfiguration has
// to follow it).
const (
	wantAllowMethods  = "GET, POST, DELETE"
	wantExpose        = "Mcp-Method, Mcp-Name, MCP-Protocol-Version, Retry-After, WWW-Authenticate"
	wantMaxAge        = "600"
	wantPreflightVary = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
	// What Chromium sends before an MCP fetch with a bearer token.
	browserRequestHeaders = "authorization,content-type,mcp-method,mcp-name,mcp-protocol-version"
)

func TestCORSLists(t *testing.T) {
	if got := strings.Join(stateless.CORSAllowMethods, ", "); got != wantAllowMethods {
		t.Errorf("CORSAllowMethods = %s", got)
	}
	if got := strings.Join(stateless.CORSAllowHeaders, ", "); got != "Accept, Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Mcp-Method, Mcp-Name, MCP-Protocol-Version, Traceparent" {
		t.Errorf("CORSAllowHeaders = %s", got)
	}
	if got := strings.Join(stateless.CORSExposeHeaders, ", "); got != wantExpose {
		t.Errorf("CORSExposeHeaders = %s", got)
	}
	if stateless.CORSMaxAge != 600 {
		t.Errorf("CORSMaxAge = %d", stateless.CORSMaxAge)
	}
}

// corsCase is one request from a browser page (or not) and the CORS
// answer it must get.
type corsCase struct {
	name    string
	origins []string // Options.AllowedOrigins
	host    string   // the host addressed; api.example.com when empty
	verb    string
	header  http.Header // full header set; wire.ModernHeaders("server/discover", "") when nil
	edit    func(h http.Header)
	body    string

	status int
	code   int               // JSON-RPC error code of the body, 0 for none or a result
	want   map[string]string // exact values of these headers
	noCORS bool              // no Access-Control-* header and no Vary
}

func preflightHeader(origin, method, headers string) http.Header {
	h := http.Header{"Origin": {origin}, "Access-Control-Request-Method": {method}}
	if headers != "" {
		h.Set("Access-Control-Request-Headers", headers)
	}
	return h
}

// allowedPreflight is the answer to an allowed preflight for origin that
// admits allowHeaders.
func allowedPreflight(origin, allowHeaders string) map[string]string {
	return map[string]string{
		"Access-Control-Allow-Origin":   origin,
		"Access-Control-Allow-Methods":  wantAllowMethods,
		"Access-Control-Allow-Headers":  allowHeaders,
		"Access-Control-Max-Age":        wantMaxAge,
		"Access-Control-Expose-Headers": "",
		"Vary":                          wantPreflightVary,
		"Content-Type":                  "",
	}
}

// allowedActual is what an answer to an allowed origin carries.
func allowedActual(origin string) map[string]string {
	return map[string]string{
		"Access-Control-Allow-Origin":   origin,
		"Access-Control-Expose-Headers": wantExpose,
		"Vary":                          "Origin",
		"Access-Control-Allow-Methods":  "",
		"Access-Control-Allow-Headers":  "",
		"Access-Control-Max-Age":        "",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestCORSPreflight(t *testing.T) {
	app := "https://app.example"
	list := []string{app}
	cases := []corsCase{
		{name: "allowed origin, MCP headers", origins: list, header: preflightHeader(app, "POST", browserRequestHeaders),
			status: 204, want: allowedPreflight(app, "authorization, content-type, mcp-method, mcp-name, mcp-protocol-version")},
		{name: "listed origin matches case-insensitively and is echoed as sent", origins: list, header: preflightHeader("https://APP.example", "POST", "content-type"),
			status: 204, want: allowedPreflight("https://APP.example", "content-type")},
		{name: "every listed header, in the request's spelling", origins: list,
			header: preflightHeader(app, "POST", "Accept,AUTHORIZATION,content-type,idempotency-key,last-event-id,mcp-method,mcp-name,mcp-protocol-version,traceparent"),
			status: 204, want: allowedPreflight(app, "Accept, AUTHORIZATION, content-type, idempotency-key, last-event-id, mcp-method, mcp-name, mcp-protocol-version, traceparent")},
		{name: "GET is admitted, to read the 405", origins: list, header: preflightHeader(app, "GET", "authorization"),
			status: 204, want: allowedPreflight(app, "authorization")},
		{name: "DELETE is admitted, to read the 405", origins: list, header: preflightHeader(app, "DELETE", ""),
			status: 204, want: allowedPreflight(app, "")},
		{name: "refused origin", origins: list, header: preflightHeader("https://evil.example", "POST", browserRequestHeaders),
			status: 403, code: -32600, noCORS: true},
		{name: "no list refuses a foreign origin", header: preflightHeader(app, "POST", "content-type"),
			status: 403, code: -32600, noCORS: true},
		{name: "star echoes the origin, never *", origins: []string{"*"}, header: preflightHeader("https://any.example:8443", "POST", "content-type"),
			status: 204, want: allowedPreflight("https://any.example:8443", "content-type")},
		{name: "star does not echo what is not an origin", origins: []string{"*"}, header: preflightHeader("https://any.example/path", "POST", "content-type"),
			status: 403, code: -32600, noCORS: true},
		{name: "star does not echo a list", origins: []string{"*"}, header: preflightHeader("https://a.example, https://b.example", "POST", "content-type"),
			status: 403, code: -32600, noCORS: true},
		{name: "loopback origin on a loopback host", host: "127.0.0.1:8080", header: preflightHeader("http://localhost:5173", "POST", "content-type"),
			status: 204, want: allowedPreflight("http://localhost:5173", "content-type")},
		{name: "IPv6 loopback origin on a loopback host", host: "[::1]:8080", header: preflightHeader("http://[::1]:5173", "POST", "content-type"),
			status: 204, want: allowedPreflight("http://[::1]:5173", "content-type")},
		{name: "loopback origin on a public host", header: preflightHeader("http://localhost:5173", "POST", "content-type"),
			status: 403, code: -32600, noCORS: true},
		{name: "method not listed", origins: list, header: preflightHeader(app, "PUT", "content-type"),
			status: 403, code: -32600, noCORS: true},
		{name: "methods are case-sensitive", origins: list, header: preflightHeader(app, "post", "content-type"),
			status: 403, code: -32600, noCORS: true},
		{name: "unlisted header is not echoed", origins: list, header: preflightHeader(app, "POST", "content-type,x-evil,cookie"),
			status: 204, want: allowedPreflight(app, "content-type")},
		{name: "only unlisted headers: no Allow-Headers", origins: list, header: preflightHeader(app, "POST", "x-evil"),
			status: 204, want: allowedPreflight(app, "")},
		{name: "Mcp-Param-* headers by prefix", origins: list, header: preflightHeader(app, "POST", "content-type,mcp-param-region,MCP-PARAM-Count"),
			status: 204, want: allowedPreflight(app, "content-type, mcp-param-region, MCP-PARAM-Count")},
		{name: "the bare Mcp-Param- prefix is no header", origins: list, header: preflightHeader(app, "POST", "mcp-param-"),
			status: 204, want: allowedPreflight(app, "")},
		{name: "names that are not tokens are not echoed", origins: list, header: preflightHeader(app, "POST", "mcp-param-a b,mcp-param-(x),mcp-param-\x7f, mcp-param-ok ,"),
			status: 204, want: allowedPreflight(app, "mcp-param-ok")},
		{name: "repeated request-headers fields", origins: list,
			header: http.Header{"Origin": {app}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type", "mcp-method"}},
			status: 204, want: allowedPreflight(app, "content-type, mcp-method")},
		{name: "OPTIONS without a requested method is 405", origins: list, header: http.Header{"Origin": {app}},
			status: 405, code: -32600, want: with(allowedActual(app), "Allow", "POST")},
		{name: "OPTIONS without an Origin is 405", origins: list, header: http.Header{"Access-Control-Request-Method": {"POST"}},
			status: 405, code: -32600, noCORS: true, want: map[string]string{"Allow": "POST"}},
	}
	for _, c := range cases {
		c.verb = http.MethodOptions
		t.Run(c.name, func(t *testing.T) { runCORS(t, c) })
	}
}

func TestCORSActual(t *testing.T) {
	app := "https://app.example"
	list := []string{app}
	discover := req("1", "server/discover", withMeta(""))
	origin := func(o string) func(h http.Header) { return func(h http.Header) { h.Set("Origin", o) } }
	progressMeta := `{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	cases := []corsCase{
		{name: "allowed origin, JSON result", origins: list, edit: origin(app), body: discover,
			status: 200, want: with(allowedActual(app), "Content-Type", "application/json")},
		{name: "allowed origin, event stream", origins: list, body: req("1", "tools/call", `{"name":"progress","arguments":{"text":"x"},"_meta":`+progressMeta+`}`),
			header: with2(wire.ModernHeaders("tools/call", "progress"), "Origin", app),
			status: 200, want: with(allowedActual(app), "Content-Type", "text/event-stream")},
		{name: "allowed origin, notification", origins: list, edit: origin(app), body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			status: 202, want: allowedActual(app)},
		{name: "allowed origin, refusal", origins: list, edit: func(h http.Header) { h.Set("Origin", app); h.Del("Mcp-Method") }, body: discover,
			status: 400, code: -32020, want: allowedActual(app)},
		{name: "allowed origin, unsupported media type", origins: list, edit: func(h http.Header) { h.Set("Origin", app); h.Set("Content-Type", "text/plain") }, body: discover,
			status: 415, code: -32600, want: allowedActual(app)},
		{name: "allowed origin, GET is a readable 405", origins: list, verb: "GET", edit: origin(app),
			status: 405, code: -32600, want: with(allowedActual(app), "Allow", "POST")},
		{name: "allowed origin, DELETE is a readable 405", origins: list, verb: "DELETE", edit: origin(app),
			status: 405, code: -32600, want: with(allowedActual(app), "Allow", "POST")},
		{name: "refused origin", origins: list, edit: origin("https://evil.example"), body: discover,
			status: 403, code: -32600, noCORS: true},
		{name: "refused origin, GET", origins: list, verb: "GET", edit: origin("https://evil.example"),
			status: 405, code: -32600, noCORS: true},
		{name: "no Origin: no CORS headers", origins: list, body: discover, status: 200, noCORS: true},
		{name: "star echoes the origin", origins: []string{"*"}, edit: origin("https://any.example"), body: discover,
			status: 200, want: allowedActual("https://any.example")},
		{name: "star serves but does not echo what is not an origin", origins: []string{"*"}, edit: origin("https://any.example/x"), body: discover,
			status: 200, noCORS: true},
		{name: "loopback rule", host: "localhost:8080", edit: origin("http://127.0.0.1:3000"), body: discover,
			status: 200, want: allowedActual("http://127.0.0.1:3000")},
		{name: "loopback origin on a public host", edit: origin("http://127.0.0.1:3000"), body: discover,
			status: 403, code: -32600, noCORS: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCORS(t, c) })
	}
}

func with2(h http.Header, k, v string) http.Header {
	h.Set(k, v)
	return h
}

func runCORS(t *testing.T, c corsCase) {
	t.Helper()
	f := newFixture(t, &stateless.Options{AllowedOrigins: c.origins})
	h := c.header
	if h == nil {
		h = wire.ModernHeaders("server/discover", "")
	}
	if c.edit != nil {
		c.edit(h)
	}
	host := c.host
	if host == "" {
		host = "api.example.com"
	}
	verb := c.verb
	if verb == "" {
		verb = http.MethodPost
	}
	resp := f.srv.Handle(context.Background(), &stateless.Request{Method: verb, Header: h, Body: []byte(c.body), Host: host})
	checkCORS(t, c, resp.Status, resp.Header, resp.Body)
}

func checkCORS(t *testing.T, c corsCase, status int, h http.Header, body []byte) {
	t.Helper()
	if status != c.status {
		t.Fatalf("status = %d, want %d; headers %v body %s", status, c.status, h, body)
	}
	for k, v := range c.want {
		got := strings.Join(h.Values(k), ", ")
		if got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if c.noCORS {
		for k := range h {
			if strings.HasPrefix(k, "Access-Control-") || k == "Vary" {
				t.Errorf("header %s: %q on an answer that allows no origin", k, h[k])
			}
		}
	}
	switch {
	case c.status == 204 || c.status == 202:
		if len(body) != 0 {
			t.Errorf("%d with a body: %s", c.status, body)
		}
	case c.code != 0:
		r := wire.DecodeRPC(t, body)
		if r.Error == nil || r.Error.Code != c.code {
			t.Errorf("body %s, want error %d", body, c.code)
		}
	}
	// Nothing the peer sent but its validated origin and listed header
	// names comes back.
	for k, vs := range h {
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x7f") || strings.Contains(v, "evil") {
				t.Errorf("header %s: %q echoes a peer string", k, v)
			}
		}
	}
}

// TestCORSOverHTTP runs a preflight and a call through net/http, and the
// body-size refusal that net/http answers before Handle.
func TestCORSOverHTTP(t *testing.T) {
	app := "http://app.test:8000"
	f := newFixture(t, &stateless.Options{AllowedOrigins: []string{app}, MaxBodyBytes: 1024})
	srv := httptest.NewServer(f.srv)
	defer srv.Close()
	do := func(method string, h http.Header, body string) *http.Response {
		t.Helper()
		r, err := http.NewRequest(method, srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header = h
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp
	}
	resp := do(http.MethodOptions, preflightHeader(app, "POST", browserRequestHeaders), "")
	c := corsCase{status: 204, want: allowedPreflight(app, "authorization, content-type, mcp-method, mcp-name, mcp-protocol-version")}
	checkCORS(t, c, resp.StatusCode, resp.Header, nil)

	resp = do(http.MethodPost, with2(wire.ModernHeaders("server/discover", ""), "Origin", app), req("1", "server/discover", withMeta("")))
	checkCORS(t, corsCase{status: 200, want: allowedActual(app)}, resp.StatusCode, resp.Header, nil)

	big := req("1", "server/discover", withMeta(`"pad":"`+strings.Repeat("x", 2048)+`"`))
	resp = do(http.MethodPost, with2(wire.ModernHeaders("server/discover", ""), "Origin", app), big)
	checkCORS(t, corsCase{status: 413, want: allowedActual(app)}, resp.StatusCode, resp.Header, nil)
	resp = do(http.MethodPost, with2(wire.ModernHeaders("server/discover", ""), "Origin", "http://evil.test"), big)
	if resp.StatusCode != 413 || slices.ContainsFunc(slices.Collect(maps.Keys(resp.Header)), func(k string) bool { return strings.HasPrefix(k, "Access-Control-") }) {
		t.Errorf("refused origin, body too large: %d %v", resp.StatusCode, resp.Header)
	}
}
