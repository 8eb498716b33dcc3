package stateless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// envelope is a JSON-RPC message's envelope; params stay raw until the
// method is known, and are then decoded into the method's own type.
type envelope struct {
	JSONRPC string       `json:"jsonrpc"`
	ID      span         `json:"id"`
	Method  span         `json:"method"`
	Params  paramsMember `json:"params"`
	Result  span         `json:"result"`
	Error   span         `json:"error"`
}

// paramsMember is the envelope's params: their span of the body and,
// when the body names a method the registry has before its params (as
// clients write a request: jsonrpc, id, method, params), the params
// decoded into the method's own type in the same pass over the body
// (decoded): a request's body is then read once. Params it cannot decode
// so end the envelope's decoding with errSecondPass, and the message is
// decoded again the other way, the params apart (decodeMessage), so that
// every refusal is the same whichever way a body is read;
// FuzzDecodeMessage holds the two ways to the same result.
type paramsMember struct {
	span    span
	decoded paramsOf
	// One pass is tried when env is set: the envelope being decoded,
	// whose method is read before the params if the body has it first,
	// in body, read against reg.
	env  *envelope
	reg  *registry
	body []byte
}

// errSecondPass ends a one-pass decoding whose params do not decode as
// the method's (or whose offsets are not the body's).
var errSecondPass = errors.New("stateless: decode the params apart")

// UnmarshalJSONFrom implements jsonv2.UnmarshalerFrom.
func (p *paramsMember) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var row *methodInfo
	if m := p.env; m != nil && len(m.Method) > 2 && m.Method[0] == '"' && dec.PeekKind() == '{' {
		if name := m.Method[1 : len(m.Method)-1]; bytes.IndexByte(name, '\\') < 0 {
			row = p.reg.methodOf(name)
		}
	}
	if row == nil {
		v, err := dec.ReadValue()
		p.span = span(v)
		return err
	}
	start := dec.InputOffset()
	v := row.params()
	if err := jsonv2.UnmarshalDecode(dec, v); err != nil {
		return errSecondPass
	}
	end := dec.InputOffset()
	if start < 0 || end > int64(len(p.body)) || start > end {
		return errSecondPass
	}
	// From just past the member's name: the colon, then the value.
	raw := bytes.TrimLeft(p.body[start:end], " \t\r\n:")
	if len(raw) == 0 || raw[0] != '{' {
		return errSecondPass
	}
	p.span, p.decoded = span(raw), v
	return nil
}

// span is a JSON value of the request's body, kept as its bytes in the
// body rather than copied: the members a request's decoding keeps raw
// (the id, the params, the _meta values, a tool's arguments) are spans of
// the one body, which the server never modifies and keeps (a task's
// arguments) as long as they are used. It reads like jsontext.Value: a
// null is the bytes null.
//
// jsonv2 hands UnmarshalJSONFrom the value as a slice of its input when
// it decodes a []byte (Unmarshal reads the slice in place, and never
// refills or reuses it); TestSpansAreOfTheBody holds the pinned version
// to that, since a decoder that copied into a reused buffer would make
// spans change under the request.
type span []byte

// UnmarshalJSONFrom implements jsonv2.UnmarshalerFrom: the value, not
// copied.
func (s *span) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*s = span(v)
	return nil
}

// decoded is a request after the message-shape checks.
type decoded struct {
	id     json.RawMessage // nil for a notification
	method string
	// params are the method's params (its row's type; a *baseParams for
	// a method not in the table), decoded as far as they would go.
	params    paramsOf
	row       *methodInfo // the method's row; nil for a method not in the table
	paramsErr error       // params present but not of the method's shape
	metaErr   error       // params._meta present but not of its shape
	hasParams bool
	rawParams []byte // params as sent, for a custom method's own decoding
	// ownTarget is the target member of a server's own method's params
	// (methodInfo.targetMember), when it is a string.
	ownTarget *string
}

// target is the body value Mcp-Name must equal (paramsOf.target), or nil.
func (d *decoded) target() *string {
	if d.row != nil && d.row.targetMember != "" {
		return d.ownTarget
	}
	if d.params == nil {
		return nil
	}
	return d.params.target()
}

// meta is the request's params._meta, or nil.
func (d *decoded) meta() *requestMeta { return d.params.base().Meta }

// trimJSONSpace trims the four white-space bytes JSON allows, and only
// those: a body that starts with a vertical tab or U+00A0 is not JSON.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// decodeMessage reads exactly one JSON-RPC request or notification.
//
// The body is read strictly, as RFC 8259's interoperable subset and
// I-JSON (RFC 7493) have it: member names match exactly (case-sensitive),
// a name repeated in one object is a parse error, and so are invalid
// UTF-8 and lone surrogates, anywhere in the body. A reader in front of
// the server — a gateway, a firewall, a log pipeline — that reads the body
// as JSON therefore cannot see another message than the server acts on.
// Unknown members are ignored. lookup finds the method's row (the
// protocol's table, then the server's custom methods); nil is the
// protocol's table alone.
func decodeMessage(body []byte, reg *registry) (*decoded, *mcperr.Error) {
	return decodeWith(body, reg, true)
}

// decodeWith is decodeMessage, its params decoded in the envelope's pass
// when onePass allows it (paramsMember), else apart: the two give the
// same result (FuzzDecodeMessage).
func decodeWith(body []byte, reg *registry, onePass bool) (*decoded, *mcperr.Error) {
	body = trimJSONSpace(body)
	if len(body) == 0 {
		return nil, mcperr.New(mcperr.KindParseError)
	}
	switch body[0] {
	case '[':
		if !jsontext.Value(body).IsValid() {
			return nil, mcperr.New(mcperr.KindParseError)
		}
		return nil, mcperr.New(mcperr.KindBatchRejected)
	case '{':
	default:
		if !jsontext.Value(body).IsValid() {
			return nil, mcperr.New(mcperr.KindParseError)
		}
		return nil, mcperr.New(mcperr.KindInvalidRequest)
	}
	var m envelope
	if onePass {
		m.Params = paramsMember{env: &m, reg: reg, body: body}
	}
	err := jsonv2.Unmarshal(body, &m)
	if errors.Is(err, errSecondPass) {
		m = envelope{}
		err = jsonv2.Unmarshal(body, &m)
	}
	if err != nil {
		// Unmarshal stops at the first member of the wrong type, before
		// it has read the rest: the body may still not be JSON.
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) || !jsontext.Value(body).IsValid() {
			return nil, mcperr.New(mcperr.KindParseError)
		}
		// A member of the envelope has the wrong type. Keep the id, if it
		// is usable, so the error can carry it.
		d := &decoded{params: &baseParams{}}
		var idOnly struct {
			ID span `json:"id"`
		}
		if jsonv2.Unmarshal(body, &idOnly) == nil && validID(idOnly.ID) {
			d.id = json.RawMessage(idOnly.ID)
		}
		return d, mcperr.Wrap(mcperr.KindInvalidRequest, err)
	}
	d := &decoded{}
	if validID(m.ID) {
		d.id = json.RawMessage(m.ID)
	}
	hasMethod := m.Method != nil && string(m.Method) != "null"
	if hasMethod {
		if m.Method[0] != '"' {
			d.params = &baseParams{}
			return d, mcperr.Wrap(mcperr.KindInvalidRequest, errors.New("method is not a string"))
		}
		// A method's row names it: a known method costs no string.
		name := m.Method[1 : len(m.Method)-1]
		if bytes.IndexByte(name, '\\') < 0 {
			if d.row = reg.methodOf(name); d.row != nil {
				d.method = d.row.name
			} else {
				d.method = string(name)
			}
		} else {
			d.method, _ = jsonString(m.Method)
			d.row = reg.method(d.method)
		}
	}
	switch {
	case m.Params.decoded != nil && d.row != nil:
		d.params = m.Params.decoded
	case d.row != nil:
		d.params = d.row.params()
	default:
		d.params = &baseParams{}
	}
	if !hasMethod {
		if m.Result != nil || m.Error != nil {
			return d, mcperr.New(mcperr.KindResponseRejected)
		}
		return d, mcperr.New(mcperr.KindInvalidRequest)
	}
	if m.JSONRPC != "2.0" {
		return d, mcperr.New(mcperr.KindInvalidRequest)
	}
	if m.ID != nil && !validID(m.ID) {
		return d, mcperr.New(mcperr.KindInvalidRequest)
	}
	if p := m.Params.span; len(p) > 0 && string(p) != "null" {
		d.hasParams = true
		d.rawParams = p
		if p[0] != '{' {
			d.paramsErr = errors.New("params is not an object")
		} else if err := d.decodeParams(p, m.Params.decoded != nil); err != nil {
			// The body's syntax was sound: a member has the wrong type.
			// Decoding stopped there; read _meta on its own for the
			// checks that come before the params' own.
			var se *jsonv2.SemanticError
			if errors.As(err, &se) && (se.JSONPointer == "/_meta" || strings.HasPrefix(string(se.JSONPointer), "/_meta/")) {
				d.metaErr = err
			} else {
				d.paramsErr = err
				var b baseParams
				if jsonv2.Unmarshal(p, &b) != nil {
					b.Meta = nil
				}
				d.params.base().Meta = b.Meta
			}
		}
		if m := d.row; m != nil && m.targetMember != "" && d.paramsErr == nil && d.metaErr == nil {
			d.ownTarget, d.paramsErr = stringMember(p, m.targetMember)
		}
	}
	return d, nil
}

// decodeParams decodes p, the params, into d.params, unless the
// envelope's pass did (decoded).
func (d *decoded) decodeParams(p []byte, decoded bool) error {
	if decoded {
		return nil
	}
	return jsonv2.Unmarshal(p, d.params)
}

// stringMember reads member name of the object raw: nil when it is
// absent, an error when it is not a string.
func stringMember(raw []byte, name string) (*string, error) {
	var members map[string]jsontext.Value
	if err := jsonv2.Unmarshal(raw, &members); err != nil {
		return nil, err
	}
	v, ok := members[name]
	if !ok {
		return nil, nil
	}
	s, ok := jsonString(v)
	if !ok {
		return nil, fmt.Errorf("params.%s is not a string", name)
	}
	return &s, nil
}

// validID reports whether raw is a JSON-RPC id this server echoes: a
// string or an integer, as the schema's RequestId says, written as one
// (-?(0|[1-9][0-9]*), but not -0): 1.5, 1e2 and -0 are refused, so that
// an id means one value to every peer. The bytes are echoed exactly as
// sent, so integers beyond 2^53 come back unchanged.
func validID(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return utf8.Valid(raw)
	case c == '-' || c >= '0' && c <= '9':
		digits := raw
		if c == '-' {
			digits = raw[1:]
		}
		if len(digits) == 0 || digits[0] == '0' && (len(digits) > 1 || c == '-') {
			return false
		}
		for _, d := range digits {
			if d < '0' || d > '9' {
				return false
			}
		}
		return true
	}
	return false
}

// jsonString decodes a raw JSON string; ok is false for anything else.
func jsonString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 && bytes.IndexByte(raw[1:len(raw)-1], '"') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	b, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", false
	}
	return string(b), true
}

func isObject(raw []byte) bool {
	raw = trimJSONSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// parseInputResponses checks that inputResponses, when present, is an
// object of objects: each value is a client's result, and a result is an
// object. null, an array or a scalar anywhere is malformed.
func parseInputResponses(raw []byte) (map[string]json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	if !isObject(raw) {
		return nil, errors.New("inputResponses is not an object")
	}
	var m map[string]json.RawMessage
	if err := jsonv2.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	for _, v := range m {
		if !isObject(v) {
			return nil, errors.New("an input response is not an object")
		}
	}
	return m, nil
}
