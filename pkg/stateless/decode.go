package stateless

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// message is one decoded JSON-RPC message. Every method's params decode
// into one struct, in one pass over the body.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  *params         `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// params is the union of the params of every client request.
type params struct {
	Meta *requestMeta `json:"_meta"`

	// tools/call, prompts/get
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// resources/read
	URI *string `json:"uri"`
	// list methods
	Cursor *string `json:"cursor"`
	// multi-round-trip retries
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   *string         `json:"requestState"`
	// request idempotency (proposed for tools/call); kept raw so that a
	// key of the wrong type is refused as a key (see idempotencyKey)
	IdempotencyKey json.RawMessage `json:"idempotencyKey"`
	// completion/complete
	Ref      *completionRef `json:"ref"`
	Argument *struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments map[string]string `json:"arguments"`
	} `json:"context"`
	// logging/setLevel (legacy)
	Level *string `json:"level"`
	// initialize (legacy)
	ProtocolVersion *string         `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      json.RawMessage `json:"clientInfo"`
}

type completionRef struct {
	Type string `json:"type"`
	Name string `json:"name"`
	URI  string `json:"uri"`
}

// requestMeta is params._meta. The two required members are kept raw so
// that absent, null and wrongly typed can be told apart.
type requestMeta struct {
	ProtocolVersion    json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      json.RawMessage `json:"progressToken"`
}

// decoded is a request after the message-shape checks.
type decoded struct {
	id        json.RawMessage // nil for a notification
	method    string
	params    params
	paramsErr error // params present but not of the union's shape
	metaErr   error // _meta has a case-variant key
	hasParams bool
}

// Guards against case-variant keys (see keyGuard) for the envelope, the
// params union, _meta and the client capabilities. They are derived from
// the types once and never change.
var (
	envelopeGuard = func() *keyGuard {
		g := newKeyGuard(reflect.TypeFor[message]())
		g.fields["params"] = nil // checked on its own, for its own error
		return g
	}()
	paramsGuard = func() *keyGuard {
		g := newKeyGuard(reflect.TypeFor[params]())
		g.fields["_meta"] = nil // checked on its own, for its own error
		return g
	}()
	metaGuard         = newKeyGuard(reflect.TypeFor[requestMeta]())
	capabilitiesGuard = newKeyGuard(reflect.TypeFor[ClientCapabilities]())
	elicitResultGuard = newKeyGuard(reflect.TypeFor[ElicitResult]())
)

// trimJSONSpace trims the four white-space bytes JSON allows, and only
// those: a body that starts with a vertical tab or U+00A0 is not JSON.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// decodeMessage reads exactly one JSON-RPC request or notification.
func decodeMessage(body []byte) (*decoded, *mcperr.Error) {
	body = trimJSONSpace(body)
	if len(body) == 0 {
		return nil, mcperr.New(mcperr.ParseError)
	}
	switch body[0] {
	case '[':
		if !json.Valid(body) {
			return nil, mcperr.New(mcperr.ParseError)
		}
		return nil, mcperr.New(mcperr.BatchRejected)
	case '{':
	default:
		if !json.Valid(body) {
			return nil, mcperr.New(mcperr.ParseError)
		}
		return nil, mcperr.New(mcperr.InvalidRequest)
	}
	// One pass decodes the envelope and the params of every method.
	var m message
	var paramsErr error
	if err := json.Unmarshal(body, &m); err != nil {
		var syn *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn) || !json.Valid(body):
			return nil, mcperr.New(mcperr.ParseError)
		case errors.As(err, &te) && (te.Field == "params" || strings.HasPrefix(te.Field, "params.")):
			// The envelope is sound; the method's params are not. The
			// decoder went on past the bad member.
			paramsErr = err
		default:
			// A member of the envelope has the wrong type. Keep the id,
			// if it is usable, so the error can carry it.
			d := &decoded{}
			if validID(m.ID) {
				d.id = m.ID
			}
			return d, mcperr.Wrap(mcperr.InvalidRequest, err)
		}
	}
	d := &decoded{}
	if validID(m.ID) {
		d.id = m.ID
	}
	if envelopeGuard.check(body) != nil {
		// Echo only an id spelled exactly "id".
		d.id = nil
		if id := rawMember(body, "id"); validID(id) {
			d.id = id
		}
		return d, mcperr.Wrap(mcperr.InvalidRequest, errCaseVariant)
	}
	if m.Method == nil {
		if m.Result != nil || m.Error != nil {
			return d, mcperr.New(mcperr.ResponseRejected)
		}
		return d, mcperr.New(mcperr.InvalidRequest)
	}
	if m.JSONRPC != "2.0" {
		return d, mcperr.New(mcperr.InvalidRequest)
	}
	if m.ID != nil && !validID(m.ID) {
		return d, mcperr.New(mcperr.InvalidRequest)
	}
	d.method = *m.Method
	if p := trimJSONSpace(rawMember(body, "params")); len(p) > 0 && string(p) != "null" {
		d.hasParams = true
		switch {
		case paramsErr != nil:
			d.paramsErr = paramsErr
		case p[0] != '{':
			d.paramsErr = errors.New("params is not an object")
		case paramsGuard.check(p) != nil:
			d.paramsErr = errCaseVariant
		default:
			if m.Params != nil {
				d.params = *m.Params
			}
			if d.params.Meta != nil && metaGuard.check(rawMember(p, "_meta")) != nil {
				d.metaErr = errCaseVariant
			}
		}
		if d.paramsErr != nil && m.Params != nil {
			// Keep what did decode (the _meta, the name) for the checks
			// that come before the params' own.
			d.params = *m.Params
		}
	}
	return d, nil
}

// validID reports whether raw is a JSON-RPC id this server echoes: a
// string or a number. The bytes are echoed exactly as sent, so numbers
// beyond 2^53 and fractional numbers come back unchanged.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return utf8.Valid(raw)
	case c == '-' || c >= '0' && c <= '9':
		return true
	}
	return false
}

// metaError reports whether a params decoding error lies in _meta.
func metaError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && (te.Field == "params._meta" || strings.HasPrefix(te.Field, "params._meta."))
}

// jsonString decodes a raw JSON string; ok is false for anything else.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 && bytes.IndexByte(raw[1:len(raw)-1], '"') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func isObject(raw json.RawMessage) bool {
	raw = trimJSONSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// rawMember returns the raw value of key in the JSON object obj, or nil.
// obj must be valid JSON.
func rawMember(obj []byte, key string) []byte {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i = jsonscan.SkipSpace(obj, i+1)
	var found []byte
	for i < len(obj) && obj[i] == '"' {
		end, escaped := jsonscan.ScanString(obj, i)
		k := obj[i+1 : end-1]
		if escaped {
			var u string
			_ = json.Unmarshal(obj[i:end], &u)
			k = []byte(u)
		}
		i = jsonscan.SkipSpace(obj, end)
		i = jsonscan.SkipSpace(obj, i+1)
		start := i
		i = jsonscan.SkipValue(obj, i)
		if string(k) == key {
			found = obj[start:i] // the last one wins, as in encoding/json
		}
		i = jsonscan.SkipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = jsonscan.SkipSpace(obj, i+1)
		}
	}
	return found
}

// parseInputResponses checks that inputResponses, when present, is an
// object of objects: each value is a client's result, and a result is an
// object. null, an array or a scalar anywhere is malformed.
func parseInputResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	if !isObject(raw) {
		return nil, errors.New("inputResponses is not an object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	for _, v := range m {
		if !isObject(v) {
			return nil, errors.New("an input response is not an object")
		}
	}
	return m, nil
}
