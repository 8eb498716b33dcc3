package stateless

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// buffer is a pooled byte buffer with a JSON encoder bound to it, so that
// encoding a result allocates neither.
type buffer struct {
	b   bytes.Buffer
	enc *json.Encoder
	// raw holds a result encoded by hand (appendCallToolResult).
	raw []byte
}

func getBuffer(s *Server) *buffer {
	buf := s.bufs.Get().(*buffer)
	if buf.enc == nil {
		buf.enc = json.NewEncoder(&buf.b)
		buf.enc.SetEscapeHTML(false)
	}
	buf.b.Reset()
	return buf
}

func putBuffer(s *Server, buf *buffer) {
	if buf.b.Cap() <= 1<<20 && cap(buf.raw) <= 1<<20 {
		s.bufs.Put(buf)
	}
}

// resultFields are the members the server adds to a handler's result.
type resultFields struct {
	modern    bool   // add resultType and serverInfo
	resultTyp string // default "complete"
	cache     *CacheHint
	meta      Meta   // handler's own _meta members
	raw       []byte // pre-encoded members to add, each starting with ','
}

// encodedResult is the result object of an encoded response: obj, a
// slice of the response message, and where in obj the members of its
// _meta begin (-1 when it has none).
type encodedResult struct {
	obj    []byte
	metaAt int
}

// appendResult appends the JSON-RPC response carrying result v to dst,
// and returns, besides the message, the result object within it. v must
// marshal to a JSON object; the server's members are spliced into it, so
// no per-type wrapper is needed.
func appendResult(s *Server, dst []byte, id json.RawMessage, v any, f *resultFields) ([]byte, encodedResult, error) {
	buf := getBuffer(s)
	defer putBuffer(s, buf)
	r := encodedResult{metaAt: -1}
	var body []byte
	switch v := v.(type) {
	case preEncoded:
		body = v
	case json.RawMessage:
		body = bytes.TrimSpace(v)
	case *CallToolResult:
		var err error
		if buf.raw, err = appendCallToolResult(buf.raw[:0], v); err != nil {
			return dst, r, err
		}
		body = buf.raw
	default:
		if err := buf.enc.Encode(v); err != nil {
			return dst, r, err
		}
		body = bytes.TrimSpace(buf.b.Bytes())
	}
	// body is {...}: open it, add members, close it.
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return dst, r, errors.New("the result is not a JSON object")
	}
	inner := body[1 : len(body)-1]
	if dst == nil {
		// Room for the envelope, the body and the server's members, as
		// written below; a handler's own _meta members grow it.
		n := len(`{"jsonrpc":"2.0","id":,"result":,"_meta":{}}}`) + len(id) + len(body) + len(f.raw)
		if f.modern {
			n += len(`"resultType":"",`) + len(f.resultTyp) + len("complete") + len(s.serverInfoMeta)
			if f.cache != nil {
				n += len(`,"ttlMs":,"cacheScope":"private"`) + 20
			}
		}
		dst = make([]byte, 0, n)
	}

	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	start := len(dst)
	dst = append(dst, '{')
	sep := false
	if f.modern {
		rt := f.resultTyp
		if rt == "" {
			rt = "complete"
		}
		dst = append(dst, `"resultType":"`...)
		dst = append(dst, rt...)
		dst = append(dst, '"')
		sep = true
	}
	if len(bytes.TrimSpace(inner)) > 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, inner...)
		sep = true
	}
	if f.modern && f.cache != nil {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"ttlMs":`...)
		dst = strconv.AppendInt(dst, f.cache.TTL.Milliseconds(), 10)
		dst = append(dst, `,"cacheScope":"`...)
		dst = append(dst, f.cache.scope()...)
		dst = append(dst, '"')
		sep = true
	}
	if len(f.raw) > 0 {
		if !sep {
			f.raw = f.raw[1:]
		}
		dst = append(dst, f.raw...)
		sep = true
	}
	if f.modern || len(f.meta) > 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"_meta":{`...)
		r.metaAt = len(dst) - start
		msep := false
		if f.modern {
			dst = append(dst, s.serverInfoMeta...)
			msep = true
		}
		keys := make([]string, 0, len(f.meta))
		for k := range f.meta {
			if f.modern && k == metaServerInfo {
				continue
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			buf.b.Reset()
			if err := buf.enc.Encode(f.meta[k]); err != nil {
				return dst, r, err
			}
			if msep {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = append(dst, bytes.TrimSpace(buf.b.Bytes())...)
			msep = true
		}
		dst = append(dst, '}')
	}
	dst = append(dst, '}')
	r.obj = dst[start:len(dst):len(dst)]
	return append(dst, '}'), r, nil
}

// appendError appends the JSON-RPC error response for e to dst. A request
// whose id could not be read gets an error without one, as JSON-RPC allows.
func appendError(dst []byte, id json.RawMessage, e *mcperr.Error) []byte {
	w := e.Wire()
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if len(id) > 0 {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"error":`...)
	b, err := json.Marshal(w)
	if err != nil {
		b, _ = json.Marshal(mcperr.New(mcperr.KindInternal).Wire())
	}
	dst = append(dst, b...)
	return append(dst, '}')
}

// appendEvent appends one server-sent event carrying a JSON-RPC message.
func appendEvent(dst, msg []byte) []byte {
	dst = append(dst, "event: message\ndata: "...)
	dst = append(dst, msg...)
	return append(dst, "\n\n"...)
}

// appendString appends s as a JSON string (see jsonscan.AppendString).
func appendString(dst []byte, s string) []byte { return jsonscan.AppendString(dst, s) }

// appendRawResult appends the response carrying an already encoded result
// object.
func appendRawResult(dst []byte, id, result json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// preEncoded is a result the server assembled as JSON itself; it is
// spliced into the response without another encoding pass.
type preEncoded []byte

// marshalCompact is compact JSON without HTML escaping.
func (s *Server) marshalCompact(v any) ([]byte, error) {
	buf := getBuffer(s)
	defer putBuffer(s, buf)
	if err := buf.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimSuffix(buf.b.Bytes(), []byte("\n"))), nil
}

// marshalCompact is Server.marshalCompact with a buffer of its own.
func marshalCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
