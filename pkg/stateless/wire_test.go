package stateless_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// wireCase is one request's bytes and what must come back.
type wireCase struct {
	name   string
	verb   string      // HTTP method; POST when empty
	header http.Header // full header set; nil means wire.ModernHeaders(method, target)
	edit   func(h http.Header)
	method string // Mcp-Method for the default headers
	target string // Mcp-Name for the default headers
	body   string

	status   int
	code     int    // JSON-RPC error code; 0 expects a result (or no body)
	id       string // the id the response must carry, exactly; "" for none
	data     string // exact JSON of error.data, when set
	respHdr  map[string]string
	noHeader []string
	check    func(t *testing.T, r *wire.RPC, raw []byte)
}

func req(id, method, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
}

func withMeta(extra string) string {
	if extra == "" {
		return `{"_meta":` + wire.MetaJSON(`{}`) + `}`
	}
	return `{` + extra + `,"_meta":` + wire.MetaJSON(`{}`) + `}`
}

func TestWire(t *testing.T) {
	f := newFixture(t, nil)
	discover := req("1", "server/discover", withMeta(""))
	cases := []wireCase{
		// Transport.
		{name: "GET is 405 with Allow", verb: "GET", method: "server/discover", status: 405, code: -32600,
			respHdr: map[string]string{"Allow": "POST", "Content-Type": "application/json"}},
		{name: "DELETE is 405", verb: "DELETE", method: "server/discover", body: discover, status: 405, code: -32600},
		{name: "foreign origin is 403", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Set("Origin", "https://evil.example") }, status: 403, code: -32600},
		{name: "no origin is allowed", method: "server/discover", body: discover, status: 200, id: "1"},
		{name: "unsupported content type is 415", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Set("Content-Type", "text/plain") }, status: 415, code: -32600},
		{name: "missing content type is 415", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Del("Content-Type") }, status: 415, code: -32600},
		{name: "a repeated content type is 415, even the same one", method: "server/discover", body: discover,
			edit: func(h http.Header) { h["Content-Type"] = []string{"application/json", "application/json"} }, status: 415, code: -32600},
		{name: "content type with charset", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Set("Content-Type", "application/json; charset=utf-8") }, status: 200, id: "1"},
		{name: "accept without json is 406", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Set("Accept", "text/html") }, status: 406, code: -32600},
		{name: "session id is ignored and not echoed", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Set("Mcp-Session-Id", "abc") }, status: 200, id: "1", noHeader: []string{"Mcp-Session-Id"}},

		{name: "a charset other than UTF-8 is 415", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Set("Content-Type", "application/json; charset=utf-16") }, status: 415, code: -32600},
		{name: "charset UTF-8 is accepted", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Set("Content-Type", "application/json; charset=UTF-8") }, status: 200, id: "1"},

		// Message shape.
		{name: "bad JSON", method: "server/discover", body: `{"jsonrpc":"2.0",`, status: 400, code: -32700},
		{name: "empty body", method: "server/discover", body: ``, status: 400, code: -32700},
		{name: "batch", method: "server/discover", body: `[` + discover + `]`, status: 400, code: -32600},
		{name: "response object", method: "server/discover", body: `{"jsonrpc":"2.0","id":7,"result":{}}`, status: 400, code: -32600, id: "7"},
		{name: "scalar body", method: "server/discover", body: `42`, status: 400, code: -32600},
		{name: "wrong jsonrpc version", method: "server/discover", body: `{"jsonrpc":"1.0","id":3,"method":"server/discover"}`, status: 400, code: -32600, id: "3"},
		{name: "null id", method: "server/discover", body: `{"jsonrpc":"2.0","id":null,"method":"server/discover","params":` + withMeta("") + `}`, status: 400, code: -32600},
		{name: "method of wrong type", method: "server/discover", body: `{"jsonrpc":"2.0","id":4,"method":5}`, status: 400, code: -32600, id: "4"},
		// Member names are exact: a name in another case is another, unknown member.
		{name: "envelope member in another case is another member", method: "server/discover", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"server/discover","params":` + withMeta("") + `}`, status: 400, code: -32020, id: "1"},
		{name: "id in another case is not an id: a notification", method: "server/discover", body: `{"jsonrpc":"2.0","ID":1,"method":"server/discover","params":` + withMeta("") + `}`, status: 202},
		{name: "params member in another case is ignored", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta(`"name":"echo","NAME":"add","arguments":{"text":"x"}`)), status: 200, id: "1",
			check: func(t *testing.T, r *wire.RPC, raw []byte) {
				if !strings.Contains(string(raw), `"structuredContent":{"text":"x"}`) {
					t.Errorf("not echo's answer: %s", raw)
				}
			}},
		{name: "_meta member in another case is ignored", method: "server/discover",
			body: req("1", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","IO.MODELCONTEXTPROTOCOL/PROTOCOLVERSION":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`), status: 200, id: "1"},
		// Duplicate names and invalid text are not JSON a strict reader accepts.
		{name: "envelope member twice", method: "tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":` + withMeta(`"name":"echo","arguments":{"text":"x"}`) + `}`, status: 400, code: -32700},
		{name: "params member twice", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta(`"name":"echo","name":"add","arguments":{"text":"x"}`)), status: 400, code: -32700},
		{name: "argument twice", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x","text":"y"}`)), status: 400, code: -32700},
		{name: "invalid UTF-8 in an argument", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta("\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\"}")), status: 400, code: -32700},
		{name: "lone surrogate in an argument", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"\ud800"}`)), status: 400, code: -32700},
		// Each method reads its own params: another method's member is unknown.
		{name: "tools/call with members named like other methods' params", method: "tools/call", target: "echo",
			body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"},"level":5,"uri":7,"cursor":{},"ref":"x","context":[1],"protocolVersion":false`)), status: 200, id: "1"},
		{name: "white space JSON does not allow", method: "server/discover", body: "\v" + discover, status: 400, code: -32700},
		{name: "string id with invalid UTF-8", method: "server/discover", body: req("\"\xff\"", "server/discover", withMeta("")), status: 400, code: -32700},
		{name: "notification is 202 with no body", method: "notifications/initialized", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: 202},
		{name: "cancel notification is 202", method: "notifications/cancelled", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, status: 202},

		// Ids come back exactly as sent.
		{name: "string id", method: "server/discover", body: req(`"abc\u00e9"`, "server/discover", withMeta("")), status: 200, id: `"abc\u00e9"`},
		{name: "id beyond 2^53", method: "server/discover", body: req("9007199254740993123", "server/discover", withMeta("")), status: 200, id: "9007199254740993123"},
		{name: "negative id", method: "server/discover", body: req("-7", "server/discover", withMeta("")), status: 200, id: "-7"},
		// The schema's RequestId is a string or an integer, written as one.
		{name: "fractional id", method: "server/discover", body: req("1.50", "server/discover", withMeta("")), status: 400, code: -32600},
		{name: "integer-valued fraction as id", method: "server/discover", body: req("1.0", "server/discover", withMeta("")), status: 400, code: -32600},
		{name: "exponent id", method: "server/discover", body: req("1e2", "server/discover", withMeta("")), status: 400, code: -32600},
		{name: "minus zero id", method: "server/discover", body: req("-0", "server/discover", withMeta("")), status: 400, code: -32600},
		{name: "leading zero id", method: "server/discover", body: req("07", "server/discover", withMeta("")), status: 400, code: -32700},
		{name: "id on an error", method: "server/discover", body: req("9007199254740993", "server/discover", `{}`), status: 400, code: -32602, id: "9007199254740993"},

		// _meta.
		{name: "missing _meta", method: "server/discover", body: req("101", "server/discover", `{}`), status: 400, code: -32602, id: "101"},
		{name: "missing params", method: "server/discover", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover"}`, status: 400, code: -32602, id: "5"},
		{name: "missing protocolVersion", method: "server/discover",
			body: req("102", "server/discover", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`), status: 400, code: -32602, id: "102"},
		{name: "missing clientCapabilities", method: "server/discover",
			body: req("104", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), status: 400, code: -32602, id: "104"},
		{name: "clientCapabilities not an object", method: "server/discover",
			body: req("6", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`), status: 400, code: -32602, id: "6"},
		{name: "protocolVersion not a string", method: "server/discover",
			body: req("7", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}`), status: 400, code: -32602, id: "7"},
		{name: "_meta not an object", method: "server/discover", body: req("8", "server/discover", `{"_meta":"x"}`), status: 400, code: -32602, id: "8"},
		{name: "clientInfo is optional", method: "server/discover", body: req("105", "server/discover", withMeta("")), status: 200, id: "105"},

		// Headers.
		{name: "version header differs from body", method: "server/discover",
			body:   req("302", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}`),
			status: 400, code: -32020, id: "302"},
		{name: "version header missing", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Del("Mcp-Protocol-Version") }, status: 400, code: -32020, id: "1"},
		{name: "Mcp-Method missing", method: "server/discover", body: discover,
			edit: func(h http.Header) { h.Del("Mcp-Method") }, status: 400, code: -32020, id: "1"},
		{name: "Mcp-Method differs", method: "prompts/list", body: req("1", "tools/list", withMeta("")), status: 400, code: -32020, id: "1"},
		{name: "Mcp-Method values are case-sensitive", method: "TOOLS/LIST", body: req("1", "tools/list", withMeta("")), status: 400, code: -32020, id: "1"},
		{name: "header names are case-insensitive", body: req("1", "tools/list", withMeta("")), status: 200, id: "1",
			header: http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/list"}}},
		{name: "Mcp-Name missing", method: "tools/call", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`)), status: 400, code: -32020, id: "1"},
		{name: "Mcp-Name differs", method: "tools/call", target: "wrong_tool_name", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`)), status: 400, code: -32020, id: "1"},
		{name: "Mcp-Name white space is trimmed", method: "tools/call", target: "  echo\t", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`)), status: 200, id: "1"},
		{name: "Mcp-Name in base64 form", method: "tools/call", target: "=?base64?ZWNobw==?=", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`)), status: 200, id: "1"},
		{name: "Mcp-Name base64 of non-ASCII", method: "resources/read", target: "=?base64?bWVtbzovL3LDqXN1bcOp?=", body: req("1", "resources/read", withMeta(`"uri":"memo://résumé"`)),
			status: 400, code: -32602, id: "1", data: `{"uri":"memo://résumé"}`},
		{name: "Mcp-Name base64 without padding is malformed", method: "tools/call", target: "=?base64?ZWNobw?=", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`)), status: 400, code: -32020, id: "1"},
		{name: "Mcp-Name repeated with different values", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`)),
			edit: func(h http.Header) { h.Add("Mcp-Name", "add") }, status: 400, code: -32020, id: "1"},
		{name: "Mcp-Param matches", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"eu-west-1","count":3,"dry":true}`)),
			edit: func(h http.Header) {
				h.Set("Mcp-Param-Region", "eu-west-1")
				h.Set("Mcp-Param-Count", "3")
				h.Set("Mcp-Param-Dry", "true")
			}, status: 200, id: "1"},
		{name: "Mcp-Param header missing", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"eu-west-1"}`)),
			status: 400, code: -32020, id: "1"},
		{name: "Mcp-Param differs", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"eu-west-1"}`)),
			edit: func(h http.Header) { h.Set("Mcp-Param-Region", "us-east-1") }, status: 400, code: -32020, id: "1"},
		{name: "Mcp-Param without a body value", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"x"}`)),
			edit: func(h http.Header) { h.Set("Mcp-Param-Region", "x"); h.Set("Mcp-Param-Count", "2") }, status: 400, code: -32020, id: "1"},
		{name: "Mcp-Param integer compared as a number", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"x","count":2.0}`)),
			edit: func(h http.Header) { h.Set("Mcp-Param-Region", "x"); h.Set("Mcp-Param-Count", "2") }, status: 200, id: "1"},
		{name: "Mcp-Param base64", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"Hello"}`)),
			edit: func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?SGVsbG8=?=") }, status: 200, id: "1"},
		{name: "Mcp-Param bad base64", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"Hello"}`)),
			edit: func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?SGVs!!!bG8=?=") }, status: 400, code: -32020, id: "1"},
		{name: "Mcp-Param literal without the wrapper", method: "tools/call", target: "region", body: req("1", "tools/call", withMeta(`"name":"region","arguments":{"region":"=?base64?SGVsbG8="}`)),
			edit: func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?SGVsbG8=") }, status: 200, id: "1"},

		// Versions.
		{name: "unsupported version", method: "server/discover",
			edit:   func(h http.Header) { h.Set("Mcp-Protocol-Version", "v999.0.0") },
			body:   req("301", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}`),
			status: 400, code: -32022, id: "301", data: `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"v999.0.0"}`},
		{name: "old unsupported version is -32022 too", method: "tools/call", target: "echo",
			edit:   func(h http.Header) { h.Set("Mcp-Protocol-Version", "1999-01-01") },
			body:   req("2", "tools/call", `{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`),
			status: 400, code: -32022, id: "2", data: `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"1999-01-01"}`},

		// Methods.
		{name: "unknown method", method: "unknown/method", body: req("601", "unknown/method", withMeta("")), status: 404, code: -32601, id: "601"},
		{name: "initialize is removed", method: "initialize", body: req("500", "initialize", withMeta("")), status: 404, code: -32601, id: "500"},
		{name: "ping is removed", method: "ping", body: req("500", "ping", withMeta("")), status: 404, code: -32601, id: "500"},
		{name: "logging/setLevel is removed", method: "logging/setLevel", body: req("500", "logging/setLevel", withMeta(`"level":"info"`)), status: 404, code: -32601, id: "500"},
		{name: "resources/subscribe is removed", method: "resources/subscribe", body: req("500", "resources/subscribe", withMeta(`"uri":"memo://readme"`)), status: 404, code: -32601, id: "500"},
		{name: "subscriptions/listen is not advertised", method: "subscriptions/listen", body: req("9", "subscriptions/listen", withMeta(`"notifications":{"toolsListChanged":true}`)), status: 404, code: -32601, id: "9"},

		// Params.
		{name: "tools/call without name", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta(`"arguments":{}`)), status: 400, code: -32020, id: "1"},
		{name: "tools/call name of wrong type", method: "tools/call", body: req("1", "tools/call", withMeta(`"name":5`)), status: 400, code: -32602, id: "1"},
		{name: "arguments not an object", method: "tools/call", target: "echo", body: req("1", "tools/call", withMeta(`"name":"echo","arguments":[1]`)), status: 400, code: -32602, id: "1"},
		{name: "unknown tool suggests a visible name", method: "tools/call", target: "ecoh", body: req("1", "tools/call", withMeta(`"name":"ecoh"`)),
			status: 400, code: -32602, id: "1", data: `{"didYouMean":"echo"}`},
		{name: "unknown tool with nothing close", method: "tools/call", target: "zzzzzzzzzz", body: req("1", "tools/call", withMeta(`"name":"zzzzzzzzzz"`)),
			status: 400, code: -32602, id: "1"},
		{name: "bad cursor", method: "tools/list", body: req("1", "tools/list", withMeta(`"cursor":"not-a-cursor!"`)), status: 400, code: -32602, id: "1"},
		{name: "cursor of another list", method: "tools/list", body: req("1", "tools/list", withMeta(`"cursor":"cHJvbXB0"`)), status: 400, code: -32602, id: "1"},
		{name: "inputResponses null", method: "tools/call", target: "confirm", body: req("1", "tools/call", withMeta(`"name":"confirm","arguments":{"text":"a"},"inputResponses":null`)), status: 400, code: -32602, id: "1"},
		{name: "inputResponses value not an object", method: "tools/call", target: "confirm", body: req("1", "tools/call", withMeta(`"name":"confirm","arguments":{"text":"a"},"inputResponses":{"ok":12345}`)), status: 400, code: -32602, id: "1"},
		{name: "requestState not from this server", method: "tools/call", target: "confirm", body: req("1", "tools/call", withMeta(`"name":"confirm","arguments":{"text":"a"},"requestState":"l1.AAAA"`)), status: 400, code: -32602, id: "1"},
		{name: "unknown resource carries its uri", method: "resources/read", target: "memo://nothing", body: req("1", "resources/read", withMeta(`"uri":"memo://nothing"`)),
			status: 400, code: -32602, id: "1", data: `{"uri":"memo://nothing"}`},
		{name: "template handler says not found", method: "resources/read", target: "memo://notes/missing", body: req("1", "resources/read", withMeta(`"uri":"memo://notes/missing"`)),
			status: 400, code: -32602, id: "1", data: `{"uri":"memo://notes/missing"}`},
		{name: "unknown prompt", method: "prompts/get", target: "nope", body: req("1", "prompts/get", withMeta(`"name":"nope"`)), status: 400, code: -32602, id: "1"},
		{name: "prompt missing a required argument", method: "prompts/get", target: "greet", body: req("1", "prompts/get", withMeta(`"name":"greet"`)), status: 400, code: -32602, id: "1"},
		{name: "prompt arguments must be strings", method: "prompts/get", target: "greet", body: req("1", "prompts/get", withMeta(`"name":"greet","arguments":{"name":5}`)), status: 400, code: -32602, id: "1"},

		// Capabilities.
		{name: "input request the client did not declare", method: "tools/call", target: "confirm", body: req("1", "tools/call", withMeta(`"name":"confirm","arguments":{"text":"a"}`)),
			status: 400, code: -32021, id: "1", data: `{"requiredCapabilities":{"elicitation":{}}}`},
		{name: "url-only elicitation does not cover a form", method: "tools/call", target: "confirm",
			body:   req("1", "tools/call", `{"name":"confirm","arguments":{"text":"a"},"_meta":`+wire.MetaJSON(`{"elicitation":{"url":{}}}`)+`}`),
			status: 400, code: -32021, id: "1", data: `{"requiredCapabilities":{"elicitation":{}}}`},
		{name: "handler-declared missing capability", method: "tools/call", target: "fail", body: req("401", "tools/call", withMeta(`"name":"fail","arguments":{"text":"sampling"}`)),
			status: 400, code: -32021, id: "401", data: `{"requiredCapabilities":{"sampling":{}}}`},

		// Handler outcomes.
		{name: "tool error is an isError result", method: "tools/call", target: "fail", body: req("1", "tools/call", withMeta(`"name":"fail","arguments":{"text":"tool"}`)),
			status: 200, id: "1", check: func(t *testing.T, r *wire.RPC, raw []byte) {
				wantJSON(t, raw, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"Not found: no such note"}],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fixture","version":"1.0.0"},"io.github.serverless-mcp/failure":{"type":"not_found"}}}}`)
			}},
		{name: "plain handler error is an isError result", method: "tools/call", target: "fail", body: req("1", "tools/call", withMeta(`"name":"fail","arguments":{"text":"plain"}`)),
			status: 200, id: "1", check: func(t *testing.T, r *wire.RPC, raw []byte) {
				if r.Result["isError"] != true || !strings.Contains(string(raw), "disk full") {
					t.Errorf("got %s", raw)
				}
			}},
		{name: "handler refusal is a JSON-RPC error", method: "tools/call", target: "fail", body: req("1", "tools/call", withMeta(`"name":"fail","arguments":{"text":"refuse"}`)),
			status: 200, code: -32603, id: "1", data: `{"retryable":true,"type":"rate_limited"}`},
		{name: "panicking handler is an internal error, in-band", method: "tools/call", target: "fail", body: req("1", "tools/call", withMeta(`"name":"fail","arguments":{"text":"panic"}`)),
			status: 200, code: -32603, id: "1"},
		{name: "invalid arguments are an isError result", method: "tools/call", target: "add", body: req("1", "tools/call", withMeta(`"name":"add","arguments":{"a":"one","b":2}`)),
			status: 200, id: "1", check: func(t *testing.T, r *wire.RPC, raw []byte) {
				if r.Result["isError"] != true || !strings.Contains(string(raw), `"invalid_arguments"`) {
					t.Errorf("got %s", raw)
				}
			}},
		{name: "missing required argument is an isError result", method: "tools/call", target: "add", body: req("1", "tools/call", withMeta(`"name":"add","arguments":{"a":1}`)),
			status: 200, id: "1", check: func(t *testing.T, r *wire.RPC, raw []byte) {
				if r.Result["isError"] != true {
					t.Errorf("got %s", raw)
				}
			}},
		{name: "output schema violation is an internal error", method: "tools/call", target: "badout", body: req("1", "tools/call", withMeta(`"name":"badout","arguments":{"text":"x"}`)),
			status: 200, code: -32603, id: "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runWire(t, f.srv, c) })
	}
}

func runWire(t *testing.T, s *stateless.Server, c wireCase) {
	t.Helper()
	h := c.header
	if h == nil {
		h = wire.ModernHeaders(c.method, c.target)
	}
	if c.edit != nil {
		c.edit(h)
	}
	verb := c.verb
	if verb == "" {
		verb = http.MethodPost
	}
	resp := wire.Call(t, s, verb, h, c.body)
	if resp.Status != c.status {
		t.Fatalf("status = %d, want %d; body %s", resp.Status, c.status, resp.Body)
	}
	for k, v := range c.respHdr {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	for _, k := range c.noHeader {
		if _, ok := resp.Header[http.CanonicalHeaderKey(k)]; ok {
			t.Errorf("header %s present", k)
		}
	}
	if c.status == http.StatusAccepted {
		if len(resp.Body) != 0 {
			t.Errorf("202 with body %s", resp.Body)
		}
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	r := wire.DecodeRPC(t, resp.Body)
	if string(r.ID) != c.id {
		t.Errorf("id = %s, want %s", r.ID, c.id)
	}
	if c.code == 0 {
		if r.Error != nil {
			t.Fatalf("error %+v, want a result; body %s", r.Error, resp.Body)
		}
		if r.Result == nil {
			t.Fatalf("no result: %s", resp.Body)
		}
	} else {
		if r.Error == nil {
			t.Fatalf("result, want error %d; body %s", c.code, resp.Body)
		}
		if r.Error.Code != c.code {
			t.Errorf("code = %d, want %d; body %s", r.Error.Code, c.code, resp.Body)
		}
		if r.Error.Message == "" {
			t.Error("empty message")
		}
		if c.data != "" && !jsonEqual(r.Error.Data, []byte(c.data)) {
			t.Errorf("data = %s, want %s", r.Error.Data, c.data)
		}
	}
	if c.check != nil {
		c.check(t, r, resp.Body)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// wantJSON compares exact bytes: the server's output is deterministic.
func wantJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	if string(got) != want {
		t.Errorf("body\n got  %s\n want %s", got, want)
	}
}

// TestLegacyHeadersMustAgree: a legacy-era request (no _meta, a legacy
// version header) need not send Mcp-Method and Mcp-Name, but when it
// does they must agree with the body, as for 2026-07-28: a gateway that
// routes or authorizes on them must not be told one call while the
// server runs another.
func TestLegacyHeadersMustAgree(t *testing.T) {
	f := newFixture(t, nil)
	echo := req("1", "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	with := func(method, name string) http.Header {
		h := legacyHeaders()
		if method != "" {
			h.Set("Mcp-Method", method)
		}
		if name != "" {
			h.Set("Mcp-Name", name)
		}
		return h
	}
	for _, c := range []struct {
		name   string
		header http.Header
		ok     bool
	}{
		{"no MCP headers", with("", ""), true},
		{"headers that agree", with("tools/call", "echo"), true},
		{"Mcp-Method of another method", with("tools/list", ""), false},
		{"Mcp-Name of another tool", with("tools/call", "add"), false},
		{"both of another call", with("tools/list", "notes_search"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := wire.Call(t, f.srv, "POST", c.header, echo)
			r := wire.DecodeRPC(t, resp.Body)
			switch {
			case c.ok && (r.Error != nil || resp.Status != 200):
				t.Errorf("%d %s", resp.Status, resp.Body)
			case !c.ok && (r.Error == nil || r.Error.Code != -32020):
				t.Errorf("%d %s, want -32020", resp.Status, resp.Body)
			}
		})
	}
	// An Mcp-Param header a legacy client sends must agree with its
	// argument; one it does not send is not required.
	region := req("1", "tools/call", `{"name":"region","arguments":{"region":"eu-west-1"}}`)
	for value, ok := range map[string]bool{"": true, "eu-west-1": true, "us-east-1": false} {
		h := legacyHeaders()
		if value != "" {
			h.Set("Mcp-Param-Region", value)
		}
		r := wire.DecodeRPC(t, wire.Call(t, f.srv, "POST", h, region).Body)
		if ok != (r.Error == nil) {
			t.Errorf("Mcp-Param-Region %q: %+v", value, r.Error)
		}
	}
}
