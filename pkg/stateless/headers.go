package stateless

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
)

// Header names of the Streamable HTTP transport of revision 2026-07-28.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerIdempotencyKey  = "Idempotency-Key"
	headerAuthorization   = "Authorization"
	headerTraceParent     = "Traceparent"
	headerOrigin          = "Origin"
	headerACRMethod       = "Access-Control-Request-Method"
	headerACRHeaders      = "Access-Control-Request-Headers"
)

// ParamHeaderPrefix begins the name of every Mcp-Param-* header, which
// carries a tool argument its schema marks with x-mcp-header.
const ParamHeaderPrefix = "Mcp-Param-"

// RequestHeaders returns the canonical names of the request headers
// Handle reads, besides those that begin with ParamHeaderPrefix. A
// transport that keeps only the headers the server reads (package apigw,
// which keeps a request's cost independent of what a gateway adds) keeps
// these; anything else Handle never looks at.
func RequestHeaders() []string {
	return []string{
		"Content-Type", "Accept", "Host", headerOrigin,
		headerProtocolVersion, headerMethod, headerName, headerIdempotencyKey,
		headerAuthorization, headerTraceParent,
		headerACRMethod, headerACRHeaders,
	}
}

// headerValue returns the single value of header h, trimmed of optional
// white space, decoding the =?base64?...?= form. ok is false when the
// header is absent, repeated with different values, or malformed.
func headerValue(hdr http.Header, h string) (v string, present, ok bool) {
	vals := hdr.Values(h)
	if len(vals) == 0 {
		return "", false, false
	}
	first := ""
	for i, raw := range vals {
		d, good := decodeHeaderValue(raw)
		if !good {
			return "", true, false
		}
		if i == 0 {
			first = d
		} else if d != first {
			return "", true, false
		}
	}
	return first, true, true
}

// decodeHeaderValue trims optional white space and decodes the
// =?base64?<base64 of UTF-8>?= form that carries values which are not
// plain visible ASCII.
func decodeHeaderValue(raw string) (string, bool) {
	v := strings.Trim(raw, " \t")
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= len("=?base64??=") {
		// Strict: padding is required, and nothing but the alphabet is
		// read (the decoder itself would skip CR and LF).
		inner := v[len("=?base64?") : len(v)-2]
		if strings.ContainsAny(inner, "\r\n") {
			return "", false
		}
		b, err := base64.StdEncoding.Strict().DecodeString(inner)
		if err != nil {
			return "", false
		}
		if !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return "", false
		}
	}
	return v, true
}

// headersAgree checks Mcp-Method and, for the methods that name a target,
// Mcp-Name against the body: both required when required is set (a
// 2026-07-28 request), else only checked when present. Params that did
// not decode name no target; their refusal comes with the method's.
func (x *exchange) headersAgree(required bool) error {
	hdr, d := x.r.Header, x.d
	if m, present, ok := headerValue(hdr, headerMethod); (present || required) && (!ok || m != d.method) {
		switch {
		case !present:
			return errNoMethodHeader
		case !ok:
			return errBadMethodHeader
		}
		return errMethodHeaderDiffers
	}
	if m := d.row; m != nil && m.named {
		n, present, ok := headerValue(hdr, headerName)
		if !present && !required || d.paramsErr != nil {
			return nil
		}
		switch t := d.target(); {
		case !present:
			return errNoNameHeader
		case !ok:
			return errBadNameHeader
		case t == nil || n != *t:
			return errNameHeaderDiffers
		}
	}
	return nil
}

// Why a request's headers do not agree with its body: the causes of its
// refusal (-32020), which its request line logs. They name the header,
// never what was sent.
var (
	errNoMethodHeader      = errors.New("no Mcp-Method header")
	errBadMethodHeader     = errors.New("a malformed Mcp-Method header")
	errMethodHeaderDiffers = errors.New("the Mcp-Method header differs from the body's method")
	errNoNameHeader        = errors.New("no Mcp-Name header")
	errBadNameHeader       = errors.New("a malformed Mcp-Name header")
	errNameHeaderDiffers   = errors.New("the Mcp-Name header differs from the body's target")
	errNoVersionHeader     = errors.New("no MCP-Protocol-Version header")
	errBadVersionHeader    = errors.New("a malformed MCP-Protocol-Version header")
	errVersionDiffers      = errors.New("the MCP-Protocol-Version header differs from params._meta's protocol version")
	errParamHeader         = errors.New("an Mcp-Param-* header missing, malformed or differing from its argument")
)

// checkParamHeaders checks each Mcp-Param-* header a tool's x-mcp-header
// annotations call for against the arguments. A header with no value in
// the body, a malformed header, and a mismatch are failures; so is a
// value in the body with no header, when the headers are required (a
// 2026-07-28 request).
func checkParamHeaders(hdr http.Header, params []paramHeader, args []byte, required bool) bool {
	if len(params) == 0 {
		return true
	}
	var obj map[string]json.RawMessage
	if len(args) > 0 && jsonv2.Unmarshal(args, &obj) != nil {
		obj = nil
	}
	for _, p := range params {
		hv, present, ok := headerValue(hdr, p.header)
		raw, inBody := obj[p.property]
		if inBody && string(raw) == "null" {
			inBody = false
		}
		if !inBody {
			if present {
				return false
			}
			continue
		}
		if !present && !required {
			continue
		}
		if !ok {
			return false
		}
		want, good := headerForm(p.kind, raw)
		if !good || hv != want {
			return false
		}
	}
	return true
}

// headerForm is the text a header carries for a body value of kind.
func headerForm(kind string, raw json.RawMessage) (string, bool) {
	switch kind {
	case "string":
		return jsonString(raw)
	case "boolean":
		switch string(raw) {
		case "true", "false":
			return string(raw), true
		}
	case "integer":
		// raw is a value of a document that decoded: a number when it
		// starts as one does.
		if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return "", false
		}
		n := string(raw)
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			// 1.0 is an integer in JSON Schema.
			f, ferr := strconv.ParseFloat(n, 64)
			if ferr != nil || f != float64(int64(f)) {
				return "", false
			}
			i = int64(f)
		}
		const maxSafe = 1<<53 - 1
		if i > maxSafe || i < -maxSafe {
			return "", false
		}
		return strconv.FormatInt(i, 10), true
	}
	return "", false
}
