package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ProtocolVersion is the MCP revision the runs speak.
const ProtocolVersion = "2026-07-28"

// The _meta keys a 2026-07-28 request carries, and the tasks extension's
// name among the client's capabilities.
const (
	MetaVersion = "io.modelcontextprotocol/protocolVersion"
	MetaCaps    = "io.modelcontextprotocol/clientCapabilities"
	ExtTasks    = "io.modelcontextprotocol/tasks"
)

// Caps are the client capabilities a request declares in params._meta:
// a 2026-07-28 client has no session to declare them in once.
type Caps struct {
	// Elicitation advertises the elicitation capability (a confirmed
	// delete needs it).
	Elicitation bool
	// Tasks declares the tasks extension (notes_export and tasks/* need
	// it).
	Tasks bool
}

// Encode is the body of one JSON-RPC request: params (left as they are)
// with _meta added, holding the protocol version and caps.
func Encode(id any, method string, params map[string]any, caps Caps) ([]byte, error) {
	p := make(map[string]any, len(params)+1)
	for k, v := range params {
		p[k] = v
	}
	c := map[string]any{}
	if caps.Elicitation {
		c["elicitation"] = map[string]any{}
	}
	if caps.Tasks {
		c["extensions"] = map[string]any{ExtTasks: map[string]any{}}
	}
	p["_meta"] = map[string]any{MetaVersion: ProtocolVersion, MetaCaps: c}
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
}

// SetHeaders sets the headers every request of a 2026-07-28 client
// carries: what it sends and accepts, and the version, method and target
// (name, the Mcp-Name header, when not "") mirrored from the body, which
// the endpoint checks against it.
func SetHeaders(h http.Header, method, name string) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", ProtocolVersion)
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// Message is a JSON-RPC response: a result or an error.
type Message struct {
	Result map[string]any `json:"result"`
	Error  *RPCError      `json:"error"`
}

// Decode reads the response in an answer's body of content type ct: the
// body itself, or, in an event stream, the last message that holds a
// result or an error (notifications come before it). The error is the
// body's not being one.
func Decode(ct string, body []byte) (Message, error) {
	msg := body
	if strings.HasPrefix(ct, "text/event-stream") {
		msg = lastMessage(body)
	}
	var m Message
	if err := json.Unmarshal(msg, &m); err != nil {
		return Message{}, err
	}
	return m, nil
}

// Messages are the JSON-RPC messages of an event stream's data lines, in
// order (a line that is no JSON object is left out): a listen stream's
// acknowledgement, notifications and result.
func Messages(stream []byte) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			var m map[string]any
			if json.Unmarshal(bytes.TrimSpace(d), &m) == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// lastMessage is the response in an event stream: the last data line
// that holds a result or an error.
func lastMessage(stream []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			d = bytes.TrimSpace(d)
			if bytes.Contains(d, []byte(`"result"`)) || bytes.Contains(d, []byte(`"error"`)) {
				last = append([]byte(nil), d...)
			}
		}
	}
	return last
}

// Reply is what both runs' reports tell alike of an answer: the HTTP
// status, the front's request id and instance (which find the function's
// log lines), and what went wrong on the way.
type Reply struct {
	Status              int
	RequestID, Instance string
	// Err is a transport error, or an answer that could not be read.
	Err error
	// Error is the JSON-RPC error answered.
	Error *RPCError
}

// Describe appends the reply's account to b: " http=… req=… on …", then
// the transport error or the JSON-RPC error's code and data. It reports
// whether there was either; the caller goes on in its run's own terms
// where there was not (a tool error's content, or its failure).
func (r Reply) Describe(b *strings.Builder) (failed bool) {
	if r.Status != 0 {
		fmt.Fprintf(b, " http=%d", r.Status)
	}
	if r.RequestID != "" {
		fmt.Fprintf(b, " req=%s on %s", r.RequestID, r.Instance)
	}
	switch {
	case r.Err != nil:
		fmt.Fprintf(b, " err=%v", r.Err)
	case r.Error != nil:
		d, _ := json.Marshal(r.Error.Data)
		fmt.Fprintf(b, " code=%d data=%s", r.Error.Code, d)
	default:
		return false
	}
	return true
}
