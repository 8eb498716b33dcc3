package stateless

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// The CORS lists are the single source of truth for what a browser page
// on an allowed origin may send and read: the endpoint answers preflights
// and actual requests from them, and an API Gateway HTTP API that answers
// preflights itself (its CorsConfiguration) must carry the same lists,
// which the deploy tests check. They are read-only: the server answers
// from its own copy (cors below, written out, and held equal to these
// by a test), so changing them at run time changes nothing but the
// documentation of the program that did it.
var (
	// CORSAllowMethods are the methods a preflight admits. Only POST does
	// anything; GET and DELETE are listed so that a browser client that
	// tries them (a standalone stream, a session delete) reads the 405
	// JSON-RPC answer instead of failing with an opaque CORS error.
	CORSAllowMethods = []string{"GET", "POST", "DELETE"}

	// CORSAllowHeaders are the request headers a preflight admits, besides
	// any Mcp-Param-* header (those are named per tool, so they are
	// matched by prefix). Authorization is named explicitly because a
	// wildcard never covers it.
	CORSAllowHeaders = []string{"Accept", "Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID", "Mcp-Method", "Mcp-Name", "MCP-Protocol-Version", "Traceparent"}

	// CORSExposeHeaders are the response headers a page's script may read
	// beyond the safelisted ones: the standard MCP headers, the hint of a
	// retryable refusal and an authorization challenge.
	CORSExposeHeaders = []string{"Mcp-Method", "Mcp-Name", "MCP-Protocol-Version", "Retry-After", "WWW-Authenticate"}
)

// CORSMaxAge is how long, in seconds, a browser may cache a preflight
// answer: short enough that a changed allow-list takes effect within
// minutes, long enough to spare a page a preflight per call.
const CORSMaxAge = 600

// cors is what the server answers with: the exported lists, and the
// header values made of them, written out so that the package builds
// none of it at a cold start (TestCORSCopyIsTheLists holds them equal).
var cors = struct {
	allowMethods  []string
	allowHeaders  []string
	methods       string // Access-Control-Allow-Methods
	expose        string // Access-Control-Expose-Headers
	maxAge        string // Access-Control-Max-Age
	preflightVary string
}{
	allowMethods:  []string{"GET", "POST", "DELETE"},
	allowHeaders:  []string{"Accept", "Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID", "Mcp-Method", "Mcp-Name", "MCP-Protocol-Version", "Traceparent"},
	methods:       "GET, POST, DELETE",
	expose:        "Mcp-Method, Mcp-Name, MCP-Protocol-Version, Retry-After, WWW-Authenticate",
	maxAge:        "600",
	preflightVary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
}

// isPreflight reports whether r is a CORS preflight: an OPTIONS request
// from a browser page (it has an Origin) that names the method it means
// to send. Any other OPTIONS is an ordinary request, answered 405.
func isPreflight(r *Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get(headerOrigin) != "" &&
		r.Header.Get(headerACRMethod) != ""
}

// preflight answers a CORS preflight. An origin the Origin rule refuses,
// or a method the endpoint does not list (compared case-sensitively, as
// methods are; browsers send the listed ones upper-case), gets the
// forbidden-origin refusal with no Access-Control-* headers, so the browser fails the
// preflight and never sends the request. Requested headers outside the
// list are left out of the answer rather than refused: the browser then
// refuses the request itself, and no peer string reaches a response.
func preflight(s *Server, r *Request, o *Outcome) *Response {
	return preflightFor(s, r, o, cors.allowMethods, cors.methods)
}

// preflightFor answers a preflight of a resource that takes methods
// (allowMethods, their Access-Control-Allow-Methods value): the MCP
// endpoint's, or the registration facade's.
func preflightFor(s *Server, r *Request, o *Outcome, methods []string, allowMethods string) *Response {
	origin := corsOrigin(s, r)
	method := r.Header.Get(headerACRMethod)
	if origin == "" || !slices.Contains(methods, method) {
		a := refused(mcperr.New(mcperr.KindForbiddenOrigin))
		o.classify(&a)
		return refusalResponse(nil, a.refusal, false)
	}
	h := http.Header{
		"Access-Control-Allow-Origin":  {origin},
		"Access-Control-Allow-Methods": {allowMethods},
		"Access-Control-Max-Age":       {cors.maxAge},
		"Vary":                         {cors.preflightVary},
	}
	if allowed := allowedRequestHeaders(r.Header.Values(headerACRHeaders)); allowed != "" {
		h["Access-Control-Allow-Headers"] = []string{allowed}
	}
	return &Response{Status: http.StatusNoContent, Header: h}
}

// allowCORS adds to resp, the answer to an actual (not preflight)
// request, what lets the requesting page read it: the origin echoed when
// the Origin rule allows it, and the exposed headers. A refused origin's
// 403 gets nothing, and neither does a request without an Origin (not a
// browser page's).
func allowCORS(s *Server, r *Request, resp *Response) {
	origin := corsOrigin(s, r)
	if origin == "" {
		return
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	resp.Header["Access-Control-Allow-Origin"] = []string{origin}
	resp.Header["Access-Control-Expose-Headers"] = []string{cors.expose}
	resp.Header.Add("Vary", "Origin")
}

// corsOrigin returns the request's Origin when it may be echoed in
// Access-Control-Allow-Origin: the Origin rule allows it and it is a
// well-formed serialised origin. Otherwise "". The echo is the only way
// to answer an allowed origin precisely (never "*", which would also
// answer pages the list does not name), and the check keeps a peer's
// arbitrary bytes out of a response header even under AllowedOrigins "*".
func corsOrigin(s *Server, r *Request) string {
	origin := r.Header.Get(headerOrigin)
	if origin == "" || !serialisedOrigin(origin) || !originAllowed(s, origin, r.Host) {
		return ""
	}
	return origin
}

// serialisedOrigin reports whether o is an origin as a browser sends it:
// "null", or scheme://host[:port] with nothing else, in visible ASCII.
func serialisedOrigin(o string) bool {
	if o == "null" {
		return true
	}
	for i := 0; i < len(o); i++ {
		if c := o[i]; c <= ' ' || c >= 0x7f || c == ',' {
			return false
		}
	}
	u, err := url.Parse(o)
	return err == nil && u.Scheme != "" && u.Host != "" && u.User == nil && u.Opaque == "" &&
		u.Path == "" && u.RawPath == "" && !u.ForceQuery && u.RawQuery == "" && u.Fragment == "" &&
		!strings.HasSuffix(o, "#")
}

// allowedRequestHeaders returns, comma-separated in the request's own
// spelling, the names of Access-Control-Request-Headers that the endpoint
// admits: those of [CORSAllowHeaders], case-insensitively, and any
// Mcp-Param-* header. A name that is not a valid header token is skipped,
// so nothing but a listed name or a well-formed Mcp-Param-* name is ever
// echoed.
func allowedRequestHeaders(vals []string) string {
	var b strings.Builder
	for _, v := range vals {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.Trim(name, " \t")
			if !validToken(name) || !allowedRequestHeader(name) {
				continue
			}
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(name)
		}
	}
	return b.String()
}

func allowedRequestHeader(name string) bool {
	if len(name) > len(ParamHeaderPrefix) && strings.EqualFold(name[:len(ParamHeaderPrefix)], ParamHeaderPrefix) {
		return true
	}
	for _, a := range cors.allowHeaders {
		if strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// validToken reports whether s is an RFC 9110 token, the syntax of a
// header field name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
