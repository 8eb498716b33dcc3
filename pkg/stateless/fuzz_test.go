package stateless

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// violated fails t for a broken property, named by id.
func violated(t *testing.T, id, format string, args ...any) {
	t.Helper()
	t.Errorf(id+": "+format, args...)
}

// fuzzing reports whether this process runs generated inputs for go test
// -fuzz (a fuzz worker), not the seed corpus under go test.
func fuzzing() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// The bounds below are the input sizes the fuzz targets look at while
// fuzzing; under go test every seed runs in full, however long. Longer
// generated inputs only cost time: the engine minimizes every input that
// brings new coverage, trying up to n²/2 shorter candidates for n bytes,
// one run each, for up to -fuzzminimizetime, and counts no executions
// meanwhile (the 0 execs/s status lines). Mutants of the deep, wide and
// long seeds (5 to 80 KB) brought new coverage, through the per-byte loop
// counters, and stalled fuzzing for 30 s to a minute each.
const (
	maxFuzzBody   = 512 // a JSON-RPC message; the usual seeds are under 460
	maxFuzzMeta   = 512 // params._meta; the usual seeds are under 210
	maxFuzzHeader = 256 // a header value; the usual seeds are under 60
)

// documentedCodes are the JSON-RPC error codes the taxonomy defines.
var documentedCodes = []int{
	mcperr.CodeParseError, mcperr.CodeInvalidRequest, mcperr.CodeMethodNotFound,
	mcperr.CodeInvalidParams, mcperr.CodeInternalError, mcperr.CodeHeaderMismatch,
	mcperr.CodeMissingRequiredClientCapability, mcperr.CodeUnsupportedProtocolVersion,
}

// fuzzEpoch is the fixed clock of the fuzz server's sealer, so that
// sealed states in seed files never expire.
var fuzzEpoch = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// newFuzzServer returns a server with one tool, one resource and one
// prompt, whose handlers reach progress, logging and input requests.
func newFuzzServer() *Server {
	sealer := reqstate.NewLocal(bytes.Repeat([]byte{7}, 32), &reqstate.LocalOptions{
		Now: func() time.Time { return fuzzEpoch },
	})
	s := NewServer(Implementation{Name: "fuzz", Version: "1.0.0"}, &Options{SchemaEngine: toolschema.Engine{}, Sealer: sealer})
	s.AddTool(&Tool{
		Name: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"text":{"type":"string"},` +
			`"region":{"type":"string","x-mcp-header":"Region"},` +
			`"count":{"type":"integer","x-mcp-header":"Count"},` +
			`"ask":{"type":"boolean"}},"additionalProperties":false}`),
	}, func(ctx context.Context, req *ToolRequest) (*CallToolResult, error) {
		req.Progress(1, 2, "working")
		req.Log(LevelInfo, "echo", map[string]any{"step": 1})
		var in struct {
			Text string `json:"text"`
			Ask  bool   `json:"ask"`
		}
		_ = json.Unmarshal(req.Arguments, &in)
		if _, answered := req.ElicitResult("confirm"); in.Ask && !answered {
			return nil, &InputRequired{
				Requests: map[string]InputRequest{"confirm": ElicitForm("Sure?", map[string]any{"type": "object"})},
				State:    []byte("round-1"),
			}
		}
		return &CallToolResult{Content: []Content{Text(in.Text)}}, nil
	})
	s.AddResource(&Resource{URI: "file:///greeting.txt", Name: "greeting", MIMEType: "text/plain"},
		func(ctx context.Context, req *ResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{{URI: req.URI, Text: "hello"}}}, nil
		})
	s.AddPrompt(&Prompt{Name: "greet", Arguments: []PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, req *PromptRequest) (*GetPromptResult, error) {
			if req.Arguments["who"] == "ask" {
				return nil, &InputRequired{State: []byte("prompt-state")}
			}
			return &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: Text("hi " + req.Arguments["who"])}}}, nil
		})
	// A method of the server's own that names its target (Mcp-Name
	// against params.id), as an extension's do.
	AddMethod(s, "io.example.fuzz/lookup", func(ctx context.Context, req *MethodRequest, p struct {
		ID    *string `json:"id"`
		Depth int     `json:"depth"`
	}) (map[string]any, error) {
		if p.ID == nil {
			return nil, mcperr.New(mcperr.KindMalformedParams)
		}
		return map[string]any{"id": *p.ID, "depth": p.Depth}, nil
	}, &MethodOptions{Target: "id", Extension: "io.example.fuzz"})
	return s
}

// modernMeta is a valid params._meta of revision 2026-07-28.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"fuzz-client","version":"0.1"},` +
	`"io.modelcontextprotocol/logLevel":"debug","progressToken":"p-1"}`

// modernRequest is a valid 2026-07-28 request body.
func modernRequest(id, method, params string) string {
	if params != "" {
		params = "," + params
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + modernMeta + params + `}}`
}

// requestSeeds are realistic and hostile request bodies.
func requestSeeds() []string {
	return []string{
		modernRequest("1", "server/discover", ""),
		modernRequest(`"abc"`, "tools/list", ""),
		modernRequest("2", "tools/list", `"cursor":"dGVjaG8"`),
		modernRequest("3", "tools/call", `"name":"echo","arguments":{"text":"hi","region":"eu-west-1","count":3}`),
		modernRequest("4", "tools/call", `"name":"echo","arguments":{"ask":true}`),
		modernRequest("5", "tools/call", `"name":"echo","arguments":{"ask":true},"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"l1.AAAA"`),
		modernRequest("6", "tools/call", `"name":"echo","arguments":{"text":5}`),
		modernRequest("7", "tools/call", `"name":"ech","arguments":{}`),
		modernRequest("8", "tools/call", `"name":"echo","arguments":[1]`),
		modernRequest("9", "tools/call", `"name":"echo","idempotencyKey":"k-1","arguments":null`),
		modernRequest("10", "resources/list", ""),
		modernRequest("11", "resources/templates/list", ""),
		modernRequest("12", "resources/read", `"uri":"file:///greeting.txt"`),
		modernRequest("13", "resources/read", `"uri":"file:///missing"`),
		modernRequest("14", "prompts/list", ""),
		modernRequest("15", "prompts/get", `"name":"greet","arguments":{"who":"world"}`),
		modernRequest("16", "prompts/get", `"name":"greet","arguments":{"who":"ask"}`),
		modernRequest("17", "prompts/get", `"name":"greet","arguments":{"who":1}`),
		modernRequest("18", "completion/complete", `"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"w"}`),
		modernRequest("19", "ping", ""),
		modernRequest("20", "initialize", `"protocolVersion":"2026-07-28","capabilities":{}`),
		modernRequest("9007199254740993", "server/discover", ""),
		modernRequest("1.5", "server/discover", ""),
		modernRequest("-0", "server/discover", ""),
		modernRequest("1e400", "server/discover", ""),
		modernRequest("null", "server/discover", ""),
		modernRequest("true", "server/discover", ""),
		modernRequest("30", "io.example.fuzz/lookup", `"id":"a1","depth":2`),
		modernRequest("31", "io.example.fuzz/lookup", `"id":7`),
		modernRequest("32", "io.example.fuzz/lookup", `"id":"a1","id":"b2"`),
		modernRequest("33", "io.example.fuzz/lookup", `"depth":"deep"`),
		modernRequest(`{"x":1}`, "server/discover", ""),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"legacy"},"_meta":{"progressToken":7}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"file:///greeting.txt"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`[]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`,
		`null`, `1`, `"x"`, ``, `{`, `{}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":5,"io.modelcontextprotocol/clientCapabilities":[]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":null}}`,
		`{"jsonrpc":"2.0","id":1,"id":"dup","method":"ping","method":"server/discover"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"ping\"}",
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":` + strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat(`}`, 500) + `}}`,
	}
}

// Header selector bits of FuzzHandle; the zero selector builds headers
// that agree with the body.
const (
	selContentType = 3 << 0  // application/json, with charset, text/plain, absent
	selAccept      = 3 << 2  // both, JSON only, absent, SSE only
	selVersion     = 3 << 4  // from _meta, 2026-07-28, absent, 2025-06-18
	selFuzzNames   = 1 << 6  // Mcp-Method and Mcp-Name from the fuzz strings
	selBase64Name  = 1 << 7  // Mcp-Name in the =?base64?...?= form
	selGet         = 1 << 8  // HTTP GET
	selOrigin      = 1 << 9  // a foreign Origin
	selRepeat      = 1 << 10 // Mcp-Method sent twice, the second from the fuzz string
	selNoParams    = 1 << 11 // no Mcp-Param-* headers
	selIdemKey     = 1 << 12 // an Idempotency-Key header
)

// buildRequest makes an HTTP request carrying body with the headers sel
// chooses; method and name feed the headers sel says to take from them.
func buildRequest(body []byte, sel uint16, method, name string) *Request {
	var peek struct {
		Method string `json:"method"`
		Params struct {
			Name *string `json:"name"`
			URI  *string `json:"uri"`
			Meta struct {
				Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &peek)
	h := http.Header{}
	switch sel & selContentType {
	case 0:
		h.Set("Content-Type", "application/json")
	case 1:
		h.Set("Content-Type", "application/json; charset=utf-8")
	case 2:
		h.Set("Content-Type", "text/plain")
	}
	switch sel & selAccept >> 2 {
	case 0:
		h.Set("Accept", "application/json, text/event-stream")
	case 1:
		h.Set("Accept", "application/json")
	case 3:
		h.Set("Accept", "text/event-stream")
	}
	switch sel & selVersion >> 4 {
	case 0:
		if v, ok := jsonString(peek.Params.Meta.Version); ok {
			h.Set(headerProtocolVersion, v)
		} else {
			h.Set(headerProtocolVersion, Version20260728)
		}
	case 1:
		h.Set(headerProtocolVersion, Version20260728)
	case 3:
		h.Set(headerProtocolVersion, "2025-06-18")
	}
	if sel&selFuzzNames == 0 {
		method = peek.Method
		name = ""
		if peek.Params.Name != nil {
			name = *peek.Params.Name
		}
		if peek.Method == "resources/read" && peek.Params.URI != nil {
			name = *peek.Params.URI
		}
	}
	h.Set(headerMethod, method)
	if sel&selRepeat != 0 {
		h.Add(headerMethod, name)
	}
	if sel&selBase64Name != 0 {
		h.Set(headerName, "=?base64?"+base64.StdEncoding.EncodeToString([]byte(name))+"?=")
	} else {
		h.Set(headerName, name)
	}
	if sel&selNoParams == 0 {
		for prop, hdr := range map[string]string{"region": "Mcp-Param-Region", "count": "Mcp-Param-Count"} {
			kind := "string"
			if prop == "count" {
				kind = "integer"
			}
			if v, ok := headerForm(kind, peek.Params.Arguments[prop]); ok {
				h.Set(hdr, v)
			}
		}
	}
	if sel&selOrigin != 0 {
		h.Set("Origin", "https://evil.example")
	}
	if sel&selIdemKey != 0 {
		h.Set(headerIdempotencyKey, name)
	}
	r := &Request{Method: http.MethodPost, Header: h, Body: body, Host: "mcp.example"}
	if sel&selGet != 0 {
		r.Method = http.MethodGet
	}
	return r
}

// checkResponse checks what every response must satisfy and returns the
// JSON-RPC messages it carries, the response last.
func checkResponse(t *testing.T, resp *Response) []map[string]json.RawMessage {
	t.Helper()
	if resp == nil {
		t.Fatal("Handle returned nil")
	}
	if resp.Status >= 500 {
		violated(t, "handle/no-5xx", "status %d, body %s", resp.Status, resp.Body)
	}
	if resp.Status == http.StatusAccepted {
		if len(resp.Body) != 0 {
			violated(t, "handle/202-empty", "202 with body %q", resp.Body)
		}
		return nil
	}
	if len(resp.Body) == 0 {
		violated(t, "handle/body", "status %d with an empty body", resp.Status)
		return nil
	}
	var msgs []json.RawMessage
	switch ct := resp.Header.Get("Content-Type"); ct {
	case "application/json":
		msgs = append(msgs, resp.Body)
	case "text/event-stream":
		if resp.Status != http.StatusOK {
			violated(t, "handle/content-type", "event stream with status %d", resp.Status)
		}
		events := strings.Split(strings.TrimSuffix(string(resp.Body), "\n\n"), "\n\n")
		for _, ev := range events {
			data, ok := strings.CutPrefix(ev, "event: message\ndata: ")
			if !ok {
				violated(t, "handle/sse", "malformed event %q", ev)
				continue
			}
			msgs = append(msgs, json.RawMessage(data))
		}
	default:
		violated(t, "handle/content-type", "Content-Type %q", ct)
		return nil
	}
	var out []map[string]json.RawMessage
	for _, m := range msgs {
		if !json.Valid(m) {
			violated(t, "handle/valid-json", "message is not JSON: %q", m)
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m, &obj); err != nil {
			violated(t, "handle/valid-json", "message is not an object: %q", m)
			continue
		}
		if string(obj["jsonrpc"]) != `"2.0"` {
			violated(t, "handle/jsonrpc", "message without jsonrpc 2.0: %s", m)
		}
		if raw, ok := obj["error"]; ok {
			var e struct {
				Code    *int    `json:"code"`
				Message *string `json:"message"`
			}
			if json.Unmarshal(raw, &e) != nil || e.Code == nil || e.Message == nil {
				violated(t, "handle/error-shape", "malformed error object %s", raw)
			} else if !slices.Contains(documentedCodes, *e.Code) {
				violated(t, "handle/error-code", "undocumented code %d in %s", *e.Code, m)
			}
		}
		out = append(out, obj)
	}
	if len(out) > 0 {
		last := out[len(out)-1]
		_, isResult := last["result"]
		_, isError := last["error"]
		if isResult == isError {
			violated(t, "handle/response", "last message is not one response: %s", resp.Body)
		}
		if isResult && resp.Status != http.StatusOK {
			violated(t, "handle/response", "result with status %d", resp.Status)
		}
	}
	return out
}

// strictString decodes a raw JSON string with encoding/json alone.
func strictString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// FuzzDecodeMessage checks decodeMessage on arbitrary bytes: it never
// panics, agrees with json.Valid, and what it accepts has an echoable id
// and a method, read as a strict (case-sensitive) JSON reader reads them.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range requestSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if fuzzing() && len(body) > maxFuzzBody {
			return
		}
		d, e := decodeMessage(body, nil)
		// The envelope's one pass and the params read apart agree.
		d2, e2 := decodeWith(body, nil, false)
		if (e == nil) != (e2 == nil) || e != nil && (e.Code() != e2.Code() || e.Kind() != e2.Kind()) {
			violated(t, "decode/one-pass", "one pass %v, apart %v, for %q", e, e2, body)
		} else if (d == nil) != (d2 == nil) || d != nil && (!bytes.Equal(d.id, d2.id) || d.method != d2.method || d.row != d2.row ||
			e == nil && (!bytes.Equal(d.rawParams, d2.rawParams) || d.hasParams != d2.hasParams) ||
			(d.paramsErr == nil) != (d2.paramsErr == nil) || (d.metaErr == nil) != (d2.metaErr == nil) ||
			e == nil && d.paramsErr == nil && d.metaErr == nil && !reflect.DeepEqual(d.params, d2.params)) {
			violated(t, "decode/one-pass", "one pass %+v, apart %+v, for %q", d, d2, body)
		}
		// Valid as a strict reader has it: no duplicate names, UTF-8 only.
		valid := jsontext.Value(trimJSONSpace(body)).IsValid()
		if e != nil {
			if e.Kind() == mcperr.KindParseError && valid {
				violated(t, "decode/valid-json", "parse error for valid JSON %q", body)
			}
			if e.Kind() != mcperr.KindParseError && !valid {
				violated(t, "decode/valid-json", "%s instead of a parse error for invalid JSON %q", e.Kind(), body)
			}
			if !slices.Contains(documentedCodes, e.Code()) {
				t.Errorf("undocumented code %d", e.Code())
			}
			if d != nil && d.id != nil && (!validID(d.id) || !json.Valid(d.id)) {
				t.Errorf("refusal carries unusable id %q", d.id)
			}
			return
		}
		if d == nil {
			t.Fatal("nil message without an error")
		}
		if !valid {
			violated(t, "decode/valid-json", "accepted invalid JSON %q", body)
			return
		}
		if d.id != nil {
			var v any
			dec := json.NewDecoder(bytes.NewReader(d.id))
			dec.UseNumber()
			if !validID(d.id) || dec.Decode(&v) != nil {
				t.Fatalf("unusable id %q", d.id)
			}
			switch v.(type) {
			case string, json.Number:
			default:
				t.Fatalf("id %q is neither a string nor a number", d.id)
			}
		}
		// A strict reader: member names are case-sensitive.
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("accepted a body that is not an object: %v", err)
		}
		for k, raw := range top {
			got, ok := jsonString(raw)
			want, wantOK := strictString(raw)
			if ok != wantOK || got != want {
				t.Errorf("jsonString(%q) of member %q = %q, %v; want %q, %v", raw, k, got, ok, want, wantOK)
			}
		}
		if m, ok := strictString(top["method"]); !ok || m != d.method {
			violated(t, "decode/member-names", "method %q, but the member \"method\" is %s in %q", d.method, top["method"], body)
		}
		if !bytes.Equal(top["id"], d.id) {
			violated(t, "decode/member-names", "id %q, but the member \"id\" is %q in %q", d.id, top["id"], body)
		}
		if v, ok := strictString(top["jsonrpc"]); !ok || v != "2.0" {
			violated(t, "decode/member-names", "member \"jsonrpc\" is %s in %q", top["jsonrpc"], body)
		}
		if rt, ok := d.params.(interface{ trip() *roundTrip }); ok && d.hasParams && d.paramsErr == nil {
			m, err := parseInputResponses(rt.trip().InputResponses)
			for k, v := range m {
				if err != nil || !isObject(v) {
					t.Errorf("input response %q is %s (err %v)", k, v, err)
				}
			}
		}
	})
}

// FuzzRequestMeta splices the fuzz input as params._meta into an
// otherwise valid server/discover request with correct headers: 200 or a
// 400 of the meta, header or version kind that echoes the id, and 200
// exactly when a strict reader finds a usable 2026-07-28 _meta.
func FuzzRequestMeta(f *testing.F) {
	for _, s := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/logLevel":"debug","progressToken":1}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":null,"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":7,"io.modelcontextprotocol/logLevel":{},"progressToken":[]}`,
		`{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":["2026-07-28"],"io.modelcontextprotocol/clientCapabilities":{}}`,
		`null`, `{}`, `[]`, `"2026-07-28"`, `0`, `true`,
		"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\xff\",\"io.modelcontextprotocol/clientCapabilities\":{}}",
	} {
		f.Add([]byte(s))
	}
	s := newFuzzServer()
	f.Fuzz(func(t *testing.T, meta []byte) {
		if fuzzing() && len(meta) > maxFuzzMeta {
			return
		}
		if !json.Valid(meta) {
			t.Skip("not one JSON value: splicing it would change the request's shape")
		}
		strict := jsontext.Value(meta).IsValid()
		body := []byte(`{"jsonrpc":"2.0","id":"req-7","method":"server/discover","params":{"_meta":` + string(meta) + `}}`)
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
		h.Set(headerProtocolVersion, Version20260728)
		h.Set(headerMethod, "server/discover")
		resp := s.Handle(context.Background(), &Request{Method: http.MethodPost, Header: h, Body: body})
		msgs := checkResponse(t, resp)
		if resp.Status != http.StatusOK && resp.Status != http.StatusBadRequest {
			t.Fatalf("status %d, body %s", resp.Status, resp.Body)
		}
		if len(msgs) != 1 {
			t.Fatalf("want one message, got %s", resp.Body)
		}
		msg := msgs[0]
		if !strict {
			// A duplicate name, invalid UTF-8, a lone surrogate: not
			// JSON a strict reader accepts, so the whole body is not.
			var e struct{ Code int }
			_ = json.Unmarshal(msg["error"], &e)
			if resp.Status != http.StatusBadRequest || e.Code != mcperr.CodeParseError {
				violated(t, "meta/strict", "status %d for _meta %q, want a parse error", resp.Status, meta)
			}
			return
		}
		if string(msg["id"]) != `"req-7"` {
			t.Errorf("id not echoed: %s", resp.Body)
		}
		if resp.Status == http.StatusBadRequest {
			var e struct{ Code int }
			_ = json.Unmarshal(msg["error"], &e)
			switch e.Code {
			case mcperr.CodeInvalidParams, mcperr.CodeHeaderMismatch, mcperr.CodeUnsupportedProtocolVersion:
			default:
				t.Errorf("400 with code %d: %s", e.Code, resp.Body)
			}
		}
		// Oracle: a strict reader accepts exactly a 2026-07-28 version
		// string and an object of capabilities.
		var m map[string]json.RawMessage
		_ = json.Unmarshal(meta, &m)
		pv, _ := strictString(m["io.modelcontextprotocol/protocolVersion"])
		want := pv == Version20260728 && isObject(m["io.modelcontextprotocol/clientCapabilities"])
		if got := resp.Status == http.StatusOK; got != want {
			violated(t, "meta/oracle", "status %d for _meta %s", resp.Status, meta)
		}
	})
}

// FuzzHeaderValue checks decodeHeaderValue: the base64 form is accepted
// exactly when it is the canonical encoding of UTF-8 text, and a plain
// value is accepted exactly when it has no control characters.
func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{
		"tools/call", " echo\t", "a\tb", "", " ", "=?base64?aGk=?=", "=?base64??=", "=?base64?=",
		"=?base64?aGk?=", "=?base64?aGl=?=", "=?base64?aG k=?=", "=?base64?aGk==?=",
		"=?base64?/w==?=", "=?base64?w6k=?=", "=?base64?AA==?=", "=?BASE64?aGk=?=", "=?base64?aGk=?= ",
		"=?base64?_-8=?=", "caf\xc3\xa9", "\xff\xfe", "a\x00b", "a\x7fb", "line\r\nInjected: 1",
		"=?base64?" + base64.StdEncoding.EncodeToString([]byte("ünïcødé ☃")) + "?=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if fuzzing() && len(raw) > maxFuzzHeader {
			return
		}
		v, ok := decodeHeaderValue(raw)
		trimmed := strings.Trim(raw, " \t")
		inner, isB64 := strings.CutPrefix(trimmed, "=?base64?")
		inner, hasSuffix := strings.CutSuffix(inner, "?=")
		isB64 = isB64 && hasSuffix && len(trimmed) >= len("=?base64??=")
		canonical := false
		if isB64 {
			b, err := base64.StdEncoding.DecodeString(inner)
			canonical = err == nil && utf8.Valid(b) && base64.StdEncoding.EncodeToString(b) == inner
		}
		switch {
		case isB64 && ok:
			if !utf8.Valid([]byte(v)) {
				t.Errorf("base64 form %q gave invalid UTF-8 %q", raw, v)
			}
			if enc := base64.StdEncoding.EncodeToString([]byte(v)); enc != inner {
				violated(t, "header/base64-canonical", "%q accepted as %q, which encodes to %q", raw, v, enc)
			}
		case isB64:
			if canonical {
				t.Errorf("canonical base64 form %q refused", raw)
			}
		case ok:
			if v != trimmed {
				t.Errorf("plain %q gave %q, want %q", raw, v, trimmed)
			}
			for i := 0; i < len(v); i++ {
				// HTAB is allowed inside a field value (RFC 9110 5.5).
				if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
					t.Errorf("plain %q accepted with control byte %#x", raw, c)
				}
			}
		default:
			if !strings.ContainsFunc(trimmed, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
				t.Errorf("plain %q refused without a control character", raw)
			}
		}
		// Any UTF-8 text survives the base64 form.
		if utf8.ValidString(raw) {
			enc := "=?base64?" + base64.StdEncoding.EncodeToString([]byte(raw)) + "?="
			if got, ok := decodeHeaderValue(enc); !ok || got != raw {
				t.Errorf("round trip of %q: got %q, %v", raw, got, ok)
			}
		}
		// A repeated header is one value only when every copy agrees.
		hdr := http.Header{"Mcp-Name": {raw, raw}}
		if got, present, good := headerValue(hdr, "Mcp-Name"); !present || good != ok || got != v {
			t.Errorf("headerValue of a repeated %q: %q, %v, %v", raw, got, present, good)
		}
		hdr["Mcp-Name"] = []string{raw, raw + "x"}
		if _, _, good := headerValue(hdr, "Mcp-Name"); good {
			t.Errorf("headerValue accepted differing copies of %q", raw)
		}
	})
}

// FuzzHandle runs arbitrary bodies and header choices through the whole
// pipeline: never a panic or a 5xx, always a well-formed response whose
// errors carry documented codes.
func FuzzHandle(f *testing.F) {
	s := newFuzzServer()
	args := json.RawMessage(`{"ask":true}`)
	// A state as the server seals it: its flags byte, then the handler's.
	b := stateKey{Anonymous, "tools/call", "echo", args, ""}.binding()
	tok, err := stateSealer(s).Seal(context.Background(), b, append([]byte{stateMultiUse}, "round-1"...))
	if err != nil {
		f.Fatal(err)
	}
	retry := modernRequest("21", "tools/call", `"name":"echo","arguments":{"ask":true},"inputResponses":{"confirm":{"action":"accept"}},"requestState":"`+tok+`"`)
	for i, b := range append(requestSeeds(), retry) {
		f.Add([]byte(b), uint16(0), "", "")
		if i%5 == 0 {
			f.Add([]byte(b), uint16(i*0x1357), "tools/call", "echo")
		}
	}
	f.Add([]byte(modernRequest("1", "tools/call", `"name":"échø","arguments":{}`)), uint16(selBase64Name), "", "")
	f.Add([]byte(modernRequest("1", "tools/call", `"name":"echo","arguments":{"region":"ü"}`)), uint16(0), "", "")
	f.Add([]byte(modernRequest("1", "tools/call", `"name":"echo","arguments":{"count":1.0}`)), uint16(0), "", "")
	f.Add([]byte(modernRequest("1", "tools/call", `"name":"echo","arguments":{"count":"3"}`)), uint16(0), "", "")
	f.Add([]byte(modernRequest("1", "tools/call", `"name":"echo","arguments":{"count":9007199254740993}`)), uint16(0), "", "")
	f.Add([]byte(modernRequest("1", "server/discover", "")), uint16(selRepeat|selFuzzNames), "server/discover", "tools/list")
	f.Add([]byte(modernRequest("1", "tools/list", "")), uint16(selGet|selOrigin), "", "")
	f.Add([]byte(modernRequest("1", "io.example.fuzz/lookup", `"id":"a1"`)), uint16(0), "io.example.fuzz/lookup", "a1")
	f.Add([]byte(modernRequest("1", "io.example.fuzz/lookup", `"id":"a1"`)), uint16(0), "io.example.fuzz/lookup", "b2")
	f.Fuzz(func(t *testing.T, body []byte, sel uint16, method, name string) {
		if fuzzing() && (len(body) > maxFuzzBody || len(method) > maxFuzzHeader || len(name) > maxFuzzHeader) {
			return
		}
		cryptotest.SetGlobalRandom(t, 1) // reproducible sealed states
		resp := s.Handle(context.Background(), buildRequest(body, sel, method, name))
		checkResponse(t, resp)
	})
}
