package stateless

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

func (x *exchange) transportChecks() *mcperr.Error {
	r := x.r
	if r.Method != http.MethodPost {
		return mcperr.New(mcperr.KindMethodNotAllowed)
	}
	if !originAllowed(x.s, r.Header.Get("Origin"), r.Host) {
		return mcperr.New(mcperr.KindForbiddenOrigin)
	}
	cts := r.Header.Values("Content-Type")
	if len(cts) > 1 {
		// Which one describes the body? Neither is taken.
		return mcperr.New(mcperr.KindUnsupportedMediaType)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		// JSON is UTF-8 (RFC 8259 §8.1): a body declared in another
		// charset would be read as what it is not.
		mt, params, err := mime.ParseMediaType(ct)
		if cs, ok := params["charset"]; err != nil || mt != "application/json" || ok && !strings.EqualFold(cs, "utf-8") {
			return mcperr.New(mcperr.KindUnsupportedMediaType)
		}
	}
	json, sse := acceptable(r.Header.Values("Accept"))
	if !json {
		return mcperr.New(mcperr.KindNotAcceptable)
	}
	x.acceptsSSE = sse
	if int64(len(r.Body)) > x.s.opts.MaxBodyBytes {
		return mcperr.New(mcperr.KindBodyTooLarge)
	}
	return nil
}

// acceptable reports whether the Accept header admits a JSON response and
// a server-sent event stream. No Accept header admits both.
func acceptable(vals []string) (jsonOK, sseOK bool) {
	if len(vals) == 0 {
		return true, true
	}
	if len(vals) == 1 && (vals[0] == "application/json, text/event-stream" || vals[0] == "text/event-stream, application/json") {
		return true, true
	}
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || params["q"] == "0" {
				continue
			}
			switch mt {
			case "*/*":
				jsonOK, sseOK = true, true
			case "application/*", "application/json":
				jsonOK = true
			case "text/*", "text/event-stream":
				sseOK = true
			}
		}
	}
	return jsonOK, sseOK
}

// originAllowed applies the Origin rule: no Origin is allowed (not a
// browser); an allow-listed origin is allowed; a loopback origin is
// allowed when the endpoint is served on a loopback host. Everything else,
// including a browser page whose DNS name was rebound to this server, is
// refused.
func originAllowed(s *Server, origin, host string) bool {
	if origin == "" {
		return true
	}
	for _, a := range s.opts.AllowedOrigins {
		if a == "*" || strings.EqualFold(a, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return isLoopbackHost(host) && isLoopbackHost(u.Host)
}

func isLoopbackHost(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
