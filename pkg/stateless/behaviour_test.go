package stateless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

const serverInfo = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fixture","version":"1.0.0"}}`

func TestDiscover(t *testing.T) {
	f := newFixture(t, &stateless.Options{Instructions: "Use echo."})
	resp := wire.Call(t, f.srv, "POST", wire.ModernHeaders("server/discover", ""), req(`"d1"`, "server/discover", withMeta("")))
	wantJSON(t, resp.Body, `{"jsonrpc":"2.0","id":"d1","result":{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"capabilities":{"completions":{},"prompts":{},"resources":{},"tools":{},"logging":{}},"instructions":"Use echo.","ttlMs":300000,"cacheScope":"public",`+serverInfo+`}}`)
}

func TestDiscoverAdvertisesOnlyWhatIsRegistered(t *testing.T) {
	s := stateless.NewServer(stateless.Implementation{Name: "bare", Version: "0"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	resp := wire.Call(t, s, "POST", wire.ModernHeaders("server/discover", ""), req("1", "server/discover", withMeta("")))
	r := wire.DecodeRPC(t, resp.Body)
	caps := r.Result["capabilities"].(map[string]any)
	if len(caps) != 1 || caps["logging"] == nil {
		t.Errorf("capabilities = %v, want only logging", caps)
	}
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "completion/complete"} {
		resp := wire.Call(t, s, "POST", wire.ModernHeaders(m, ""), req("2", m, withMeta("")))
		if resp.Status != 404 || wire.DecodeRPC(t, resp.Body).Error.Code != -32601 {
			t.Errorf("%s on a bare server: %d %s", m, resp.Status, resp.Body)
		}
	}
}

func TestToolsList(t *testing.T) {
	f := newFixture(t, nil)
	resp := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/list", ""), req("1", "tools/list", withMeta("")))
	r := wire.DecodeRPC(t, resp.Body)
	var names []string
	for _, tl := range r.Result["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	// Sorted, deterministic, and without the hidden tool.
	if got := strings.Join(names, ","); got != "add,badout,confirm,echo,fail,progress,region" {
		t.Errorf("tools = %s", got)
	}
	if r.Result["ttlMs"] != float64(60000) || r.Result["cacheScope"] != "private" {
		t.Errorf("cache hints %v %v: a list with hidden tools is private", r.Result["ttlMs"], r.Result["cacheScope"])
	}
	echo := r.Result["tools"].([]any)[3]
	b, _ := json.Marshal(echo)
	want := `{"annotations":{"readOnlyHint":true},"description":"Echo text.","inputSchema":{"additionalProperties":false,"properties":{"text":{"description":"the text to echo","type":"string"}},"required":["text"],"type":"object"},"name":"echo","outputSchema":{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}}`
	if string(b) != want {
		t.Errorf("echo tool\n got  %s\n want %s", b, want)
	}

	// The admin sees the hidden tool.
	resp = f.srv.Handle(context.Background(), &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/list", ""),
		Body: []byte(req("1", "tools/list", withMeta(""))), Principal: "admin"})
	if !bytes.Contains(resp.Body, []byte(`"secret"`)) {
		t.Errorf("admin does not see the secret tool: %s", resp.Body)
	}
}

func TestPagination(t *testing.T) {
	s := stateless.NewServer(stateless.Implementation{Name: "p", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, PageSize: 2})
	for _, n := range []string{"e", "a", "d", "c", "b"} {
		stateless.AddTool(s, &stateless.Tool{Name: n}, func(ctx context.Context, req *stateless.ToolRequest, in struct{}) (*stateless.CallToolResult, any, error) {
			return nil, nil, nil
		})
	}
	var got []string
	cursor := ""
	for page := 0; page < 5; page++ {
		params := withMeta("")
		if cursor != "" {
			params = withMeta(`"cursor":"` + cursor + `"`)
		}
		r := wire.DecodeRPC(t, wire.Call(t, s, "POST", wire.ModernHeaders("tools/list", ""), req("1", "tools/list", params)).Body)
		if r.Error != nil {
			t.Fatalf("page %d: %+v", page, r.Error)
		}
		tools := r.Result["tools"].([]any)
		for _, tl := range tools {
			got = append(got, tl.(map[string]any)["name"].(string))
		}
		next, _ := r.Result["nextCursor"].(string)
		if next == "" {
			break
		}
		if len(tools) != 2 {
			t.Errorf("page %d has %d tools", page, len(tools))
		}
		cursor = next
	}
	if strings.Join(got, "") != "abcde" {
		t.Errorf("pages gave %v", got)
	}
}

func TestCallTool(t *testing.T) {
	f := newFixture(t, nil)
	resp := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "echo"), req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"héllo <b>"}`)))
	wantJSON(t, resp.Body, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"text\":\"héllo <b>\"}"}],"structuredContent":{"text":"héllo <b>"},`+serverInfo+`}}`)
	resp = wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "add"), req("2", "tools/call", withMeta(`"name":"add","arguments":{"a":40,"b":2}`)))
	wantJSON(t, resp.Body, `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"sum\":42}"}],"structuredContent":{"sum":42},`+serverInfo+`}}`)
}

// TestHiddenToolAnswersLikeAbsent checks byte for byte that a tool hidden
// from the caller cannot be told from one that does not exist.
func TestHiddenToolAnswersLikeAbsent(t *testing.T) {
	f := newFixture(t, nil)
	hidden := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "secret"), req("1", "tools/call", withMeta(`"name":"secret","arguments":{"text":"x"}`)))
	absent := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "secrey"), req("1", "tools/call", withMeta(`"name":"secrey","arguments":{"text":"x"}`)))
	if hidden.Status != absent.Status || !bytes.Equal(hidden.Body, absent.Body) {
		t.Errorf("hidden: %d %s\nabsent: %d %s", hidden.Status, hidden.Body, absent.Status, absent.Body)
	}
	if bytes.Contains(absent.Body, []byte("secret")) {
		t.Errorf("a suggestion names the hidden tool: %s", absent.Body)
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		method, target, params, want string
	}{
		{"resources/list", "", withMeta(""), `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resources":[{"uri":"memo://readme","name":"readme","mimeType":"text/plain"}],"ttlMs":60000,"cacheScope":"public",` + serverInfo + `}}`},
		{"resources/templates/list", "", withMeta(""), `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resourceTemplates":[{"uriTemplate":"memo://notes/{id}","name":"note"}],"ttlMs":60000,"cacheScope":"public",` + serverInfo + `}}`},
		{"resources/read", "memo://readme", withMeta(`"uri":"memo://readme"`), `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","contents":[{"uri":"memo://readme","mimeType":"text/plain","text":"hello"}],"ttlMs":0,"cacheScope":"private",` + serverInfo + `}}`},
		{"resources/read", "memo://notes/42", withMeta(`"uri":"memo://notes/42"`), `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","contents":[{"uri":"memo://notes/42","text":"note 42"}],"ttlMs":0,"cacheScope":"private",` + serverInfo + `}}`},
		{"prompts/list", "", withMeta(""), `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","prompts":[{"name":"greet","description":"Greets.","arguments":[{"name":"name","required":true}]}],"ttlMs":60000,"cacheScope":"public",` + serverInfo + `}}`},
		{"prompts/get", "greet", withMeta(`"name":"greet","arguments":{"name":"Ada"}`), `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","messages":[{"role":"user","content":{"type":"text","text":"Hello, Ada"}}],` + serverInfo + `}}`},
		{"completion/complete", "", withMeta(`"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}`), `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","completion":{"values":["alice","albert"]},` + serverInfo + `}}`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			resp := wire.Call(t, f.srv, "POST", wire.ModernHeaders(tt.method, tt.target), req("1", tt.method, tt.params))
			wantJSON(t, resp.Body, tt.want)
		})
	}
}

// roundTrip drives the confirm tool through two rounds.
func TestMultiRoundTrip(t *testing.T) {
	f := newFixture(t, nil)
	caps := `{"elicitation":{}}`
	first := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "confirm"),
		req("1", "tools/call", `{"name":"confirm","arguments":{"text":"a"},"_meta":`+wire.MetaJSON(caps)+`}`))
	r := wire.DecodeRPC(t, first.Body)
	if r.Result["resultType"] != "input_required" {
		t.Fatalf("first round: %s", first.Body)
	}
	if _, ok := r.Result["ttlMs"]; ok {
		t.Error("an input_required result carries cache hints")
	}
	ir := r.Result["inputRequests"].(map[string]any)["ok"].(map[string]any)
	if ir["method"] != "elicitation/create" || ir["params"].(map[string]any)["mode"] != "form" {
		t.Errorf("input request %v", ir)
	}
	state := r.Result["requestState"].(string)

	retry := func(args, responses, st string) *stateless.Response {
		params := `{"name":"confirm","arguments":` + args + `,"inputResponses":` + responses + `,"_meta":` + wire.MetaJSON(caps)
		if st != "" {
			params += `,"requestState":"` + st + `"`
		}
		return wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "confirm"), req("2", "tools/call", params+"}"))
	}
	// The echoed state, the same arguments and an answer complete the call.
	ok := retry(`{"text":"a"}`, `{"ok":{"action":"accept","content":{"ok":true}}}`, state)
	wantJSON(t, ok.Body, `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"round1:accept:a"}],`+serverInfo+`}}`)
	// Missing answer: asked again, not an error.
	again := wire.DecodeRPC(t, retry(`{"text":"a"}`, `{"other":{"action":"accept"}}`, state).Body)
	if again.Result["resultType"] != "input_required" {
		t.Errorf("a retry without the answer: %+v", again)
	}

	// Every tampering is the same -32602, and the handler never runs.
	ran := f.confirmRan.Load()
	flip := []byte(state)
	flip[len(flip)/2] ^= 0x01
	other := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "confirm"),
		req("3", "tools/call", `{"name":"confirm","arguments":{"text":"b"},"_meta":`+wire.MetaJSON(caps)+`}`))
	otherState := wire.DecodeRPC(t, other.Body).Result["requestState"].(string)
	ran++ // that first round ran the handler
	for name, resp := range map[string]*stateless.Response{
		"flipped byte":   retry(`{"text":"a"}`, `{"ok":{"action":"accept"}}`, string(flip)),
		"suffix":         retry(`{"text":"a"}`, `{"ok":{"action":"accept"}}`, state+"-TAMPERED"),
		"other args":     retry(`{"text":"b"}`, `{"ok":{"action":"accept"}}`, state),
		"state of other": retry(`{"text":"a"}`, `{"ok":{"action":"accept"}}`, otherState),
		"empty":          retry(`{"text":"a"}`, `{"ok":{"action":"accept"}}`, ""+"x"),
	} {
		rr := wire.DecodeRPC(t, resp.Body)
		if resp.Status != 400 || rr.Error == nil || rr.Error.Code != -32602 || rr.Error.Message != "Invalid params: invalid or expired requestState" {
			t.Errorf("%s: %d %s", name, resp.Status, resp.Body)
		}
	}
	if got := f.confirmRan.Load(); got != ran {
		t.Errorf("the handler ran %d times on tampered state", got-ran)
	}

	// The same state under another principal does not open either.
	resp := f.srv.Handle(context.Background(), &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", "confirm"), Principal: "mallory",
		Body: []byte(req("4", "tools/call", `{"name":"confirm","arguments":{"text":"a"},"inputResponses":{"ok":{"action":"accept"}},"requestState":"`+state+`","_meta":`+wire.MetaJSON(caps)+`}`))})
	if resp.Status != 400 {
		t.Errorf("another principal's state: %d %s", resp.Status, resp.Body)
	}
}

func TestStateExpires(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	sealer := reqstate.NewLocal(nil, &reqstate.LocalOptions{TTL: time.Minute, Now: func() time.Time { return now }})
	f := newFixture(t, &stateless.Options{Sealer: sealer})
	caps := wire.MetaJSON(`{"elicitation":{}}`)
	first := wire.DecodeRPC(t, wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "confirm"),
		req("1", "tools/call", `{"name":"confirm","arguments":{"text":"a"},"_meta":`+caps+`}`)).Body)
	state := first.Result["requestState"].(string)
	now = now.Add(2 * time.Minute)
	resp := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "confirm"),
		req("2", "tools/call", `{"name":"confirm","arguments":{"text":"a"},"inputResponses":{"ok":{"action":"accept"}},"requestState":"`+state+`","_meta":`+caps+`}`))
	if resp.Status != 400 || wire.DecodeRPC(t, resp.Body).Error.Code != -32602 {
		t.Errorf("expired state: %d %s", resp.Status, resp.Body)
	}
}

func TestProgressAndLogging(t *testing.T) {
	f := newFixture(t, nil)
	meta := `{"progressToken":"p1","io.modelcontextprotocol/logLevel":"info","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	resp := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "progress"), req("1", "tools/call", `{"name":"progress","arguments":{"text":"x"},"_meta":`+meta+`}`))
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("headers %v", resp.Header)
	}
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p1\",\"progress\":1,\"total\":3,\"message\":\"step\"}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p1\",\"progress\":2,\"total\":3,\"message\":\"step\"}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p1\",\"progress\":3,\"total\":3,\"message\":\"step\"}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"warning\",\"logger\":\"fixture\",\"data\":\"warning detail\"}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]," + serverInfo + "}}\n\n"
	if string(resp.Body) != want {
		t.Errorf("stream\n got  %q\n want %q", resp.Body, want)
	}

	// Without a token or a level: plain JSON, no notifications.
	resp = wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "progress"), req("1", "tools/call", withMeta(`"name":"progress","arguments":{"text":"x"}`)))
	if resp.Header.Get("Content-Type") != "application/json" || bytes.Contains(resp.Body, []byte("notifications/")) {
		t.Errorf("without opt-in: %v %s", resp.Header, resp.Body)
	}
	// A client that does not accept a stream gets JSON.
	h := wire.ModernHeaders("tools/call", "progress")
	h.Set("Accept", "application/json")
	resp = wire.Call(t, f.srv, "POST", h, req("1", "tools/call", `{"name":"progress","arguments":{"text":"x"},"_meta":`+meta+`}`))
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("JSON-only client got %v", resp.Header)
	}
}

func TestOrigins(t *testing.T) {
	s := newFixture(t, &stateless.Options{AllowedOrigins: []string{"https://app.example.com"}}).srv
	tests := []struct {
		origin, host string
		status       int
	}{
		{"", "api.example.com", 200},
		{"https://app.example.com", "api.example.com", 200},
		{"https://APP.example.com", "api.example.com", 200},
		{"https://evil.example.com", "api.example.com", 403},
		{"http://localhost:3000", "localhost:8080", 200},
		{"http://127.0.0.1:3000", "127.0.0.1:8080", 200},
		{"http://[::1]:3000", "[::1]:8080", 200},
		{"http://localhost:3000", "api.example.com", 403},
		{"http://evil.example.com", "evil.example.com", 403}, // DNS rebinding
		{"null", "localhost:8080", 403},
	}
	for _, tt := range tests {
		h := wire.ModernHeaders("server/discover", "")
		if tt.origin != "" {
			h.Set("Origin", tt.origin)
		}
		resp := s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Host: tt.host, Body: []byte(req("1", "server/discover", withMeta("")))})
		if resp.Status != tt.status {
			t.Errorf("origin %q host %q: %d, want %d", tt.origin, tt.host, resp.Status, tt.status)
		}
	}
}

func TestHTTPHandler(t *testing.T) {
	f := newFixture(t, &stateless.Options{MaxBodyBytes: 1024})
	ts := httptest.NewServer(&stateless.HTTPHandler{Server: f.srv, Principal: func(r *http.Request) string { return r.Header.Get("X-Test-User") }})
	defer ts.Close()
	post := func(h http.Header, body string) (*http.Response, []byte) {
		rq, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		rq.Header = h
		resp, err := ts.Client().Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := post(wire.ModernHeaders("server/discover", ""), req("1", "server/discover", withMeta("")))
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"supportedVersions"`)) {
		t.Errorf("discover: %d %s", resp.StatusCode, body)
	}
	resp, body = post(wire.ModernHeaders("tools/call", "echo"), req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"`+strings.Repeat("x", 2000)+`"}`)))
	if resp.StatusCode != 413 || wire.DecodeRPC(t, body).Error.Code != -32600 {
		t.Errorf("oversized: %d %s", resp.StatusCode, body)
	}
	h := wire.ModernHeaders("tools/call", "secret")
	h.Set("X-Test-User", "admin")
	_, body = post(h, req("1", "tools/call", withMeta(`"name":"secret","arguments":{"text":"x"}`)))
	if !bytes.Contains(body, []byte("classified")) {
		t.Errorf("principal not carried: %s", body)
	}
	rq, _ := http.NewRequest("GET", ts.URL, nil)
	gr, err := ts.Client().Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	gr.Body.Close()
	if gr.StatusCode != 405 || gr.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d %v", gr.StatusCode, gr.Header)
	}
}

func TestObserve(t *testing.T) {
	var got []*stateless.Outcome
	f := newFixture(t, &stateless.Options{Observe: func(ctx context.Context, o *stateless.Outcome) { got = append(got, o) }})
	wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "echo"), req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`)))
	wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/call", "nope<script>"), req("1", "tools/call", withMeta(`"name":"nope<script>"`)))
	if len(got) != 2 {
		t.Fatalf("%d outcomes", len(got))
	}
	if o := got[0]; o.Method != "tools/call" || o.Target != "echo" || o.Status != 200 || o.Code != 0 || o.Version != "2026-07-28" {
		t.Errorf("success outcome %+v", o)
	}
	// An unknown tool's name is the peer's: it is not reported as a target.
	if o := got[1]; o.Target != "" || o.Kind != "unknown_tool" || o.Code != -32602 {
		t.Errorf("refusal outcome %+v", o)
	}
}

// TestRefusalCauses: a refusal for headers that do not agree with the
// body, or for an identity source without an identity, records why in
// its outcome (its request line's cause), naming the header, never what
// was sent.
func TestRefusalCauses(t *testing.T) {
	var got []*stateless.Outcome
	f := newFixture(t, &stateless.Options{Observe: func(ctx context.Context, o *stateless.Outcome) { got = append(got, o) }})
	echo := req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`))
	without := func(name string) http.Header {
		h := wire.ModernHeaders("tools/call", "echo")
		h.Del(name)
		return h
	}
	other := func(name, v string) http.Header {
		h := wire.ModernHeaders("tools/call", "echo")
		h.Set(name, v)
		return h
	}
	for _, c := range []struct {
		h    http.Header
		want string
	}{
		{without("Mcp-Method"), "no Mcp-Method header"},
		{other("Mcp-Method", "tools/list"), "the Mcp-Method header differs from the body's method"},
		{without("Mcp-Name"), "no Mcp-Name header"},
		{other("Mcp-Name", "secret-name"), "the Mcp-Name header differs from the body's target"},
		{without("Mcp-Protocol-Version"), "no MCP-Protocol-Version header"},
		{other("Mcp-Protocol-Version", "2025-11-25"), "the MCP-Protocol-Version header differs from params._meta's protocol version"},
	} {
		got = nil
		wire.Call(t, f.srv, "POST", c.h, echo)
		if len(got) != 1 || got[0].Code != -32020 || got[0].Err == nil || got[0].Err.Error() != c.want {
			t.Errorf("want %q: %+v", c.want, got)
		}
	}
	got = nil
	f.srv.Handle(context.Background(), &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", "echo"), Body: []byte(echo), Unidentified: true})
	if len(got) != 1 || got[0].Status != 401 || got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "without an identity") {
		t.Errorf("unidentified: %+v", got)
	}
}

// TestRegistrationPanics: what registration can check at once — the
// name, a duplicate, a missing schema — panics there.
func TestRegistrationPanics(t *testing.T) {
	s := stateless.NewServer(stateless.Implementation{Name: "r", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	noop := func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return nil, nil
	}
	s.AddTool(&stateless.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	for name, f := range map[string]func(){
		"duplicate": func() {
			s.AddTool(&stateless.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
		},
		"bad name": func() {
			s.AddTool(&stateless.Tool{Name: "a b", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
		},
		"no schema":  func() { s.AddTool(&stateless.Tool{Name: "x"}, noop) },
		"no handler": func() { s.AddTool(&stateless.Tool{Name: "y", InputSchema: json.RawMessage(`{"type":"object"}`)}, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

// TestVerifyFindsBadSchemas: schemas are resolved on a tool's first use,
// not at registration (a cold start pays for none of them); Verify
// resolves them all and names what is wrong, and a bad tool's first use is
// an internal error, not a panic.
func TestVerifyFindsBadSchemas(t *testing.T) {
	noop := func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return nil, nil
	}
	for name, schema := range map[string]string{
		"non-object root":  `{"type":"string"}`,
		"number header":    `{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`,
		"duplicate header": `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}`,
		"remote ref":       `{"type":"object","$ref":"https://example.com/s.json"}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := stateless.NewServer(stateless.Implementation{Name: "r", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
			s.AddTool(&stateless.Tool{Name: "good", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
			s.AddTool(&stateless.Tool{Name: "bad", InputSchema: json.RawMessage(schema)}, noop)
			if err := s.Verify(); err == nil || !strings.Contains(err.Error(), `tool "bad"`) || strings.Contains(err.Error(), `"good"`) {
				t.Errorf("Verify: %v", err)
			}
			r := wire.DecodeRPC(t, wire.Call(t, s, "POST", wire.ModernHeaders("tools/call", "bad"), req("1", "tools/call", withMeta(`"name":"bad","arguments":{}`))).Body)
			if r.Error == nil || r.Error.Code != -32603 {
				t.Errorf("calling it: %+v", r)
			}
		})
	}
	// A typed tool whose input is not an object is refused at
	// registration (TestTypedToolsNeedNoOptions); a given schema that is
	// not an object's, by Verify.
	s := stateless.NewServer(stateless.Implementation{Name: "r", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	s.AddTool(&stateless.Tool{Name: "str", InputSchema: json.RawMessage(`{"type":"string"}`)}, noop)
	if err := s.Verify(); err == nil || !strings.Contains(err.Error(), `tool "str": input schema must have type "object"`) {
		t.Errorf("Verify: %v", err)
	}
	if err := newFixture(t, nil).srv.Verify(); err != nil {
		t.Errorf("the fixture's tools: %v", err)
	}
}

func TestJSONSchema202012PassesThrough(t *testing.T) {
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`
	s := stateless.NewServer(stateless.Implementation{Name: "s", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	s.AddTool(&stateless.Tool{Name: "contact", InputSchema: json.RawMessage(schema)},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("ok")}}, nil
		})
	resp := wire.Call(t, s, "POST", wire.ModernHeaders("tools/list", ""), req("1", "tools/list", withMeta("")))
	if !bytes.Contains(resp.Body, []byte(`"inputSchema":`+schema)) {
		t.Errorf("schema not served verbatim: %s", resp.Body)
	}
	for args, isErr := range map[string]bool{
		`{"contactMethod":"phone","phone":"1"}`: false,
		`{"contactMethod":"phone","email":"a"}`: true, // if/then
		`{"name":"x"}`:                          true, // anyOf
		`{"email":"a","extra":1}`:               true, // additionalProperties
	} {
		r := wire.DecodeRPC(t, wire.Call(t, s, "POST", wire.ModernHeaders("tools/call", "contact"), req("1", "tools/call", withMeta(`"name":"contact","arguments":`+args))).Body)
		if got := r.Result["isError"] == true; got != isErr {
			t.Errorf("%s: isError=%v, want %v", args, got, isErr)
		}
	}
}

func TestLegacy(t *testing.T) {
	f := newFixture(t, nil)
	legacy := func(version string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		if version != "" {
			h.Set("Mcp-Protocol-Version", version)
		}
		return h
	}
	init := func(v string) string {
		return req("1", "initialize", `{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)
	}
	for asked, got := range map[string]string{
		"2025-11-25": "2025-11-25", "2025-06-18": "2025-06-18", "2025-03-26": "2025-03-26",
		"2024-11-05": "2025-11-25", "2026-07-28": "2025-11-25", "9999-01-01": "2025-11-25",
	} {
		resp := wire.Call(t, f.srv, "POST", legacy(""), init(asked))
		wantJSON(t, resp.Body, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"`+got+`","capabilities":{"completions":{},"prompts":{},"resources":{},"tools":{},"logging":{}},"serverInfo":{"name":"fixture","version":"1.0.0"}}}`)
		if _, ok := resp.Header["Mcp-Session-Id"]; ok {
			t.Error("a session id was minted")
		}
	}
	if resp := wire.Call(t, f.srv, "POST", legacy(""), req("1", "initialize", `{}`)); wire.DecodeRPC(t, resp.Body).Error.Code != -32602 {
		t.Errorf("initialize without a version: %s", resp.Body)
	}
	if resp := wire.Call(t, f.srv, "POST", legacy("2025-11-25"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.Status != 202 {
		t.Errorf("initialized: %d", resp.Status)
	}
	for _, m := range []string{"ping", "logging/setLevel", "resources/subscribe"} {
		params := `{"level":"debug","uri":"memo://readme"}`
		resp := wire.Call(t, f.srv, "POST", legacy("2025-11-25"), req("2", m, params))
		wantJSON(t, resp.Body, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	}
	resp := wire.Call(t, f.srv, "POST", legacy("2025-06-18"), req("3", "tools/call", `{"name":"add","arguments":{"a":1,"b":2}}`))
	wantJSON(t, resp.Body, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"sum\":3}"}],"structuredContent":{"sum":3}}}`)
	resp = wire.Call(t, f.srv, "POST", legacy(""), req("4", "tools/list", `{}`))
	if r := wire.DecodeRPC(t, resp.Body); r.Result["ttlMs"] != nil || r.Result["resultType"] != nil || r.Result["_meta"] != nil {
		t.Errorf("legacy list carries 2026 fields: %s", resp.Body)
	}
	// Refusals after the message was read travel in-band for legacy clients.
	resp = wire.Call(t, f.srv, "POST", legacy("2025-11-25"), req("5", "server/discover", `{}`))
	if resp.Status != 200 || wire.DecodeRPC(t, resp.Body).Error.Code != -32601 {
		t.Errorf("discover on the legacy wire: %d %s", resp.Status, resp.Body)
	}
	resp = wire.Call(t, f.srv, "POST", legacy("2025-11-25"), req("6", "tools/call", `{"name":"confirm","arguments":{"text":"a"}}`))
	if r := wire.DecodeRPC(t, resp.Body); r.Result["isError"] != true || !bytes.Contains(resp.Body, []byte("2026-07-28")) {
		t.Errorf("a multi-round tool on the legacy wire: %s", resp.Body)
	}
	// Progress and logging ride on the response stream, at the default level.
	resp = wire.Call(t, f.srv, "POST", legacy("2025-11-25"), req("7", "tools/call", `{"name":"progress","arguments":{"text":"x"},"_meta":{"progressToken":7}}`))
	if resp.Header.Get("Content-Type") != "text/event-stream" || bytes.Count(resp.Body, []byte("notifications/progress")) != 3 ||
		bytes.Count(resp.Body, []byte("notifications/message")) != 1 {
		t.Errorf("legacy stream: %s", resp.Body)
	}
	// An unknown version on the legacy wire.
	resp = wire.Call(t, f.srv, "POST", legacy("2024-01-01"), req("8", "tools/list", `{}`))
	if resp.Status != 400 || wire.DecodeRPC(t, resp.Body).Error.Code != -32022 {
		t.Errorf("unknown legacy version: %d %s", resp.Status, resp.Body)
	}
}

func TestConcurrentRegistrationAndServing(t *testing.T) {
	f := newFixture(t, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			stateless.AddTool(f.srv, &stateless.Tool{Name: fmt.Sprintf("t%02d", i)}, func(ctx context.Context, req *stateless.ToolRequest, in struct{}) (*stateless.CallToolResult, any, error) {
				return nil, nil, nil
			})
		}
	}()
	for i := 0; i < 50; i++ {
		resp := wire.Call(t, f.srv, "POST", wire.ModernHeaders("tools/list", ""), req("1", "tools/list", withMeta("")))
		if resp.Status != 200 {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
	}
	<-done
}

// TestCaseVariantArgumentsAreOtherMembers: member names are exact, for
// the schema's validator and the handler's decoder alike, so a name in
// another case is an unknown member to both: the handler gets exactly the
// value the schema checked, and a case variant cannot carry another
// (encoding/json's case-insensitive matching would have decoded "AMOUNT"
// into the field the schema checked as "amount").
func TestCaseVariantArgumentsAreOtherMembers(t *testing.T) {
	type payIn struct {
		Amount string `json:"amount"`
		Memo   struct {
			Note string `json:"note"`
		} `json:"memo"`
	}
	s := stateless.NewServer(stateless.Implementation{Name: "pay", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	var got []string
	stateless.AddTool(s, &stateless.Tool{Name: "pay", InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"string","maxLength":3}}}`)},
		func(ctx context.Context, req *stateless.ToolRequest, in payIn) (*stateless.CallToolResult, any, error) {
			got = append(got, in.Amount+"/"+in.Memo.Note)
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(in.Amount)}}, nil, nil
		})
	for args, want := range map[string]string{
		`{"amount":"1","AMOUNT":"1000000"}`:      "1/",
		`{"AMOUNT":"1000000"}`:                   "/",
		`{"amount":"1","memo":{"NOTE":"x"}}`:     "1/",
		`{"amount":"1","\u0041mount":"9999"}`:    "1/",
		`{"amount":"12","memo":{"note":"rent"}}`: "12/rent",
	} {
		got = nil
		r := wire.DecodeRPC(t, wire.Call(t, s, "POST", wire.ModernHeaders("tools/call", "pay"), req("1", "tools/call", withMeta(`"name":"pay","arguments":`+args))).Body)
		if r.Result["isError"] == true || len(got) != 1 || got[0] != want {
			t.Errorf("%s: handler got %q, want %q (%v)", args, got, want, r.Result)
		}
	}
	// The schema still checks the exact member.
	got = nil
	r := wire.DecodeRPC(t, wire.Call(t, s, "POST", wire.ModernHeaders("tools/call", "pay"), req("1", "tools/call", withMeta(`"name":"pay","arguments":{"amount":"1000000"}`))).Body)
	if r.Result["isError"] != true || len(got) != 0 {
		t.Errorf("over the schema's maxLength: %v, handler got %q", r.Result, got)
	}
}

// TestSingleUseState: a state the handler marks single-use opens once.
func TestSingleUseState(t *testing.T) {
	s := stateless.NewServer(stateless.Implementation{Name: "once", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{claims.New(claims.NewMemory(), nil).Interceptor()}})
	ran := 0
	stateless.AddTool(s, &stateless.Tool{Name: "approve"}, func(ctx context.Context, req *stateless.ToolRequest, in struct{}) (*stateless.CallToolResult, any, error) {
		if _, ok := req.State(); !ok {
			return nil, nil, &stateless.InputRequired{Requests: confirmRequest(), State: []byte("ask"), SingleUse: true}
		}
		ran++
		return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("approved")}}, nil, nil
	})
	caps := wire.MetaJSON(`{"elicitation":{}}`)
	first := wire.DecodeRPC(t, wire.Call(t, s, "POST", wire.ModernHeaders("tools/call", "approve"), req("1", "tools/call", `{"name":"approve","arguments":{},"_meta":`+caps+`}`)).Body)
	state := first.Result["requestState"].(string)
	retry := `{"name":"approve","arguments":{},"inputResponses":{"ok":{"action":"accept"}},"requestState":"` + state + `","_meta":` + caps + `}`
	if r := wire.Call(t, s, "POST", wire.ModernHeaders("tools/call", "approve"), req("2", "tools/call", retry)); r.Status != 200 || ran != 1 {
		t.Fatalf("first redemption: %d %s", r.Status, r.Body)
	}
	r := wire.Call(t, s, "POST", wire.ModernHeaders("tools/call", "approve"), req("3", "tools/call", retry))
	if r.Status != 400 || wire.DecodeRPC(t, r.Body).Error.Code != -32602 || ran != 1 {
		t.Errorf("second redemption: %d %s, ran %d", r.Status, r.Body, ran)
	}
	// Without a redeemer, a single-use state cannot be issued.
	s2 := stateless.NewServer(stateless.Implementation{Name: "x", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	stateless.AddTool(s2, &stateless.Tool{Name: "approve"}, func(ctx context.Context, req *stateless.ToolRequest, in struct{}) (*stateless.CallToolResult, any, error) {
		return nil, nil, &stateless.InputRequired{Requests: confirmRequest(), State: []byte("ask"), SingleUse: true}
	})
	if r := wire.Call(t, s2, "POST", wire.ModernHeaders("tools/call", "approve"), req("1", "tools/call", `{"name":"approve","arguments":{},"_meta":`+caps+`}`)); wire.DecodeRPC(t, r.Body).Error == nil || wire.DecodeRPC(t, r.Body).Error.Code != -32603 {
		t.Errorf("no redeemer: %d %s", r.Status, r.Body)
	}
}

// TestTransportRefusalsReported: a body over the limit over net/http is
// refused through the same exit as every answer: its outcome reaches
// Options.Observe and its refusal the log.
func TestTransportRefusalsReported(t *testing.T) {
	var got []*stateless.Outcome
	var logged bytes.Buffer
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{
		SchemaEngine: toolschema.Engine{}, MaxBodyBytes: 64,
		Logger:  slog.New(slog.NewJSONHandler(&logged, nil)),
		Observe: func(ctx context.Context, o *stateless.Outcome) { got = append(got, o) }})
	ts := httptest.NewServer(&stateless.HTTPHandler{Server: srv})
	defer ts.Close()
	rq, _ := http.NewRequest("POST", ts.URL, strings.NewReader(req("1", "tools/list", withMeta(`"x":"`+strings.Repeat("y", 200)+`"`))))
	rq.Header = wire.ModernHeaders("tools/list", "")
	resp, err := ts.Client().Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || len(got) != 1 || got[0].Status != 413 || got[0].Kind != "body_too_large" {
		t.Fatalf("status %d, outcomes %+v", resp.StatusCode, got)
	}
	if !strings.Contains(logged.String(), `"mcp request refused"`) || !strings.Contains(logged.String(), `"body_too_large"`) {
		t.Errorf("log: %s", logged.String())
	}
}
