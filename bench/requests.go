package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
)

// ModernVersion is the protocol revision every request speaks.
const ModernVersion = "2026-07-28"

// BadVersion is the revision of the unsupported-version request: no
// implementation serves it.
const BadVersion = "1999-01-01"

// EchoText is the 100-byte text sent to the echo tool.
var EchoText = strings.Repeat("lorem ipsum ", 8) + "dolor"

// AddA and AddB are the operands sent to the add tool.
const (
	AddA = 40
	AddB = 2
)

// Case is one request, exactly as it goes on the wire, and what a right
// answer to it looks like.
type Case struct {
	// Name names the benchmark, e.g. "ToolsCallEcho".
	Name string
	// Method is the JSON-RPC method; Tool the tool name for tools/call.
	Method string
	Tool   string
	// Version is sent in the MCP-Protocol-Version header and in
	// params._meta.
	Version string
	// Body is the JSON-RPC request.
	Body []byte
	// Header holds the request's headers.
	Header http.Header
	// Arguments are the tool's arguments, for tools/call.
	Arguments map[string]any
	// Event is the same request as an API Gateway HTTP API (payload
	// format 2.0) event, as Lambda hands it to a function.
	Event []byte
	// check verifies a decoded answer; see [Case.Check].
	check func(a *Answer) error
}

// All lists every request, in the order the report prints them.
var All = []*Case{Discover, ToolsList, ToolsCallEcho, ToolsCallAdd, Unsupported}

// The requests.
var (
	Discover      = newCase("Discover", "server/discover", "", ModernVersion, nil, checkDiscover)
	ToolsList     = newCase("ToolsList", "tools/list", "", ModernVersion, nil, checkToolsList)
	ToolsCallEcho = newCase("ToolsCallEcho", "tools/call", "echo", ModernVersion,
		map[string]any{"text": EchoText}, checkEcho)
	ToolsCallAdd = newCase("ToolsCallAdd", "tools/call", "add", ModernVersion,
		map[string]any{"a": AddA, "b": AddB}, checkAdd)
	// Unsupported is a tools/list that asks for a revision nobody serves,
	// in both the header and _meta.
	Unsupported = newCase("UnsupportedVersion", "tools/list", "", BadVersion, nil, checkUnsupported)
)

// newCase builds a request. For tools/call, args are the tool arguments.
func newCase(name, method, tool, version string, args map[string]any, check func(*Answer) error) *Case {
	// Written by hand, not by json.Marshal of a map, so that member order
	// is the natural one (jsonrpc, id, method, params; _meta last).
	var params strings.Builder
	params.WriteString("{")
	if tool != "" {
		a, err := json.Marshal(args)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&params, `"name":%q,"arguments":%s,`, tool, a)
	}
	fmt.Fprintf(&params, `"_meta":{"io.modelcontextprotocol/protocolVersion":%q,`+
		`"io.modelcontextprotocol/clientCapabilities":{},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"}}}`, version)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params.String())
	if !json.Valid([]byte(body)) {
		panic("bench: invalid request body for " + name)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", version)
	h.Set("Mcp-Method", method)
	if tool != "" {
		h.Set("Mcp-Name", tool)
	}
	c := &Case{Name: name, Method: method, Tool: tool, Version: version, Arguments: args, Body: []byte(body), Header: h, check: check}
	c.Event = lambdaEvent(c)
	return c
}

var endpoint = &url.URL{Scheme: "http", Host: "localhost", Path: "/mcp"}

// WithEvent is c with another Lambda event for the same request: as
// another door delivers it.
func (c *Case) WithEvent(ev []byte) *Case {
	d := *c
	d.Event = ev
	return &d
}

// NewRequest returns a fresh POST of the case's bytes. Only the body
// reader and the header map are new: the bytes are shared, never copied.
func (c *Case) NewRequest() *http.Request {
	return &http.Request{
		Method:        http.MethodPost,
		URL:           endpoint,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        c.Header.Clone(),
		Body:          io.NopCloser(bytes.NewReader(c.Body)),
		ContentLength: int64(len(c.Body)),
		Host:          endpoint.Host,
		RemoteAddr:    "127.0.0.1:40000",
		RequestURI:    endpoint.Path,
	}
}

// Answer is an HTTP answer with its JSON-RPC body decoded.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Msg is the body decoded as a JSON-RPC response; nil if it is not one.
	Msg *Response
	// DecodeErr says why Msg is nil.
	DecodeErr error
}

// Response is a JSON-RPC response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  map[string]any  `json:"result"`
	Error   *RPCError       `json:"error"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// Do sends the case to h and decodes the answer.
func (c *Case) Do(h http.Handler) *Answer {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, c.NewRequest())
	a := &Answer{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
	a.Msg, a.DecodeErr = decodeResponse(a.Header, a.Body)
	return a
}

// decodeResponse reads one JSON-RPC response from a JSON body, or from
// the last data line of an event stream.
func decodeResponse(h http.Header, body []byte) (*Response, error) {
	ct := h.Get("Content-Type")
	data := body
	if strings.HasPrefix(ct, "text/event-stream") {
		data = nil
		for line := range strings.SplitSeq(string(body), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				data = []byte(strings.TrimSpace(d))
			}
		}
	} else if !strings.HasPrefix(ct, "application/json") {
		return nil, fmt.Errorf("Content-Type %q is not application/json", ct)
	}
	var r Response
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("body is not a JSON-RPC response: %v", err)
	}
	return &r, nil
}

// Check reports whether a is a right answer to c. A right answer is a
// JSON-RPC 2.0 response with id 1 and the status, result or error the
// 2026-07-28 revision asks for.
func (c *Case) Check(a *Answer) error {
	if a.Msg == nil {
		return fmt.Errorf("status %d, %v", a.Status, a.DecodeErr)
	}
	if a.Msg.JSONRPC != "2.0" || string(a.Msg.ID) != "1" {
		return fmt.Errorf("envelope: jsonrpc %q id %s, want \"2.0\" and 1", a.Msg.JSONRPC, a.Msg.ID)
	}
	return c.check(a)
}

// complete checks the parts every successful answer shares.
func complete(a *Answer) (map[string]any, error) {
	if a.Msg.Error != nil {
		return nil, fmt.Errorf("status %d, error %d %q", a.Status, a.Msg.Error.Code, a.Msg.Error.Message)
	}
	if a.Status != http.StatusOK {
		return nil, fmt.Errorf("status %d, want 200", a.Status)
	}
	r := a.Msg.Result
	if r == nil {
		return nil, fmt.Errorf("no result")
	}
	if r["resultType"] != "complete" {
		return nil, fmt.Errorf("resultType %v, want \"complete\"", r["resultType"])
	}
	return r, nil
}

// cacheable checks the cache hints 2026-07-28 requires on discover and
// list results.
func cacheable(r map[string]any) error {
	if _, ok := r["ttlMs"].(json.Number); !ok {
		return fmt.Errorf("ttlMs %v, want a number", r["ttlMs"])
	}
	if s := r["cacheScope"]; s != "public" && s != "private" {
		return fmt.Errorf("cacheScope %v, want \"public\" or \"private\"", s)
	}
	return nil
}

func checkDiscover(a *Answer) error {
	r, err := complete(a)
	if err != nil {
		return err
	}
	vs, _ := r["supportedVersions"].([]any)
	if !slices.Contains(vs, any(ModernVersion)) {
		return fmt.Errorf("supportedVersions %v lacks %s", r["supportedVersions"], ModernVersion)
	}
	caps, _ := r["capabilities"].(map[string]any)
	if _, ok := caps["tools"]; !ok {
		return fmt.Errorf("capabilities %v lack tools", r["capabilities"])
	}
	return cacheable(r)
}

func checkToolsList(a *Answer) error {
	r, err := complete(a)
	if err != nil {
		return err
	}
	tools, _ := r["tools"].([]any)
	var names []string
	for _, t := range tools {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		names = append(names, name)
		schema, _ := m["inputSchema"].(map[string]any)
		if schema["type"] != "object" {
			return fmt.Errorf("tool %q: inputSchema type %v, want object", name, schema["type"])
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"add", "echo"}) {
		return fmt.Errorf("tools %v, want [add echo]", names)
	}
	return cacheable(r)
}

// structured returns the structured content of a successful tools/call
// answer, after checking that it is no tool error and carries a text block.
func structured(a *Answer) (map[string]any, error) {
	r, err := complete(a)
	if err != nil {
		return nil, err
	}
	if r["isError"] == true {
		return nil, fmt.Errorf("isError result: %v", r["content"])
	}
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return nil, fmt.Errorf("no content")
	}
	if first, _ := content[0].(map[string]any); first["type"] != "text" {
		return nil, fmt.Errorf("content[0] %v is not text", content[0])
	}
	sc, ok := r["structuredContent"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("structuredContent %v is not an object", r["structuredContent"])
	}
	return sc, nil
}

func checkEcho(a *Answer) error {
	sc, err := structured(a)
	if err != nil {
		return err
	}
	if sc["text"] != EchoText {
		return fmt.Errorf("structuredContent.text %v, want the %d-byte text", sc["text"], len(EchoText))
	}
	return nil
}

func checkAdd(a *Answer) error {
	sc, err := structured(a)
	if err != nil {
		return err
	}
	if n, _ := sc["sum"].(json.Number); n.String() != fmt.Sprint(AddA+AddB) {
		return fmt.Errorf("structuredContent.sum %v, want %d", sc["sum"], AddA+AddB)
	}
	return nil
}

func checkUnsupported(a *Answer) error {
	if a.Status != http.StatusBadRequest {
		return fmt.Errorf("status %d, want 400", a.Status)
	}
	e := a.Msg.Error
	if e == nil {
		return fmt.Errorf("no error: result %v", a.Msg.Result)
	}
	if e.Code != -32022 {
		return fmt.Errorf("error code %d %q, want -32022", e.Code, e.Message)
	}
	if e.Data["requested"] != BadVersion {
		return fmt.Errorf("error data.requested %v, want %q", e.Data["requested"], BadVersion)
	}
	vs, _ := e.Data["supported"].([]any)
	if !slices.Contains(vs, any(ModernVersion)) {
		return fmt.Errorf("error data.supported %v lacks %s", e.Data["supported"], ModernVersion)
	}
	return nil
}
