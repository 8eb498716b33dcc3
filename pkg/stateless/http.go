package stateless

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// HTTPHandler serves a Server over net/http.
type HTTPHandler struct {
	Server *Server
	// Principal, if set, identifies the caller of a request; it is where a
	// verified token or an authenticating proxy's header is read. nil
	// serves everyone as [Anonymous].
	Principal func(r *http.Request) string
	// Endpoint is the endpoint's canonical URL, which request state is
	// bound to (see Request.Endpoint); never taken from the Host header.
	Endpoint string
}

// ServeHTTP implements [http.Handler]. An incoming Mcp-Session-Id is
// ignored and never echoed: there are no sessions.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.Server
	req := &Request{Method: r.Method, Header: r.Header, Host: r.Host, Endpoint: h.Endpoint, Address: peerAddress(r.RemoteAddr)}
	if h.Principal != nil {
		req.Principal = h.Principal(r)
	}
	if r.Method == http.MethodPost {
		body, err := readBody(w, r, s.opts.MaxBodyBytes)
		if err != nil {
			var tooBig *http.MaxBytesError
			e := mcperr.New(mcperr.KindBodyTooLarge)
			if !errors.As(err, &tooBig) {
				e = mcperr.Wrap(mcperr.KindInvalidRequest, err)
			}
			writeResponse(w, s.Reject(r.Context(), req, e))
			return
		}
		req.Body = body
	}
	if canFlush(w) {
		s.HandleStream(r.Context(), req, &flushingHTTPStream{httpStream{w: w}})
		return
	}
	s.HandleStream(r.Context(), req, &httpStream{w: w})
}

// canFlush reports whether w can send what was written before the
// handler returns: net/http's own writer can, and so can a wrapper that
// says so or unwraps to one (as http.ResponseController finds it).
func canFlush(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case http.Flusher:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}

// peerAddress is the host of a connection's remote address (net/http's
// Request.RemoteAddr, the socket's peer: no header can set it).
func peerAddress(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// httpStream is a Stream onto a net/http response. Only an event stream
// is flushed write by write; a whole answer goes out when the handler
// returns, as net/http sends it.
type httpStream struct {
	w     http.ResponseWriter
	flush bool
}

func (h *httpStream) Start(status int, header http.Header) error {
	dst := h.w.Header()
	for k, v := range header {
		dst[k] = v
	}
	h.flush = header.Get("Content-Type") == "text/event-stream"
	h.w.WriteHeader(status)
	return nil
}

func (h *httpStream) Write(p []byte) error {
	if _, err := h.w.Write(p); err != nil {
		return err
	}
	if !h.flush {
		return nil
	}
	return http.NewResponseController(h.w).Flush()
}

// flushingHTTPStream is an httpStream onto a writer that can flush
// (canFlush): an Ender.
type flushingHTTPStream struct{ httpStream }

// End flushes the answer, which finishEarly has announced whole and with
// the connection's close: net/http completes the response once ServeHTTP
// returns, which a handler left running delays, but the client has read
// it all.
func (h *flushingHTTPStream) End() error { return http.NewResponseController(h.w).Flush() }

// ServeHTTP serves s over net/http with every caller anonymous. Use
// [HTTPHandler] to identify callers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(&HTTPHandler{Server: s}).ServeHTTP(w, r)
}

// writeResponse writes a whole response.
func writeResponse(w http.ResponseWriter, resp *Response) {
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	// net/http computes Content-Length itself for a body it buffers whole
	// (up to 2 KB); a longer one is announced rather than chunked.
	if len(resp.Body) > 2048 {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// readBody reads a request's body, at most max bytes, into a buffer of
// the size its Content-Length announces (io.ReadAll would start at 512
// bytes and grow), or grown as it comes when none is announced.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= max {
		// net/http's body reader ends at the announced length, so the
		// bound holds without a MaxBytesReader. One byte more than
		// announced, to see the end without growing.
		b := make([]byte, 0, n+1)
		for {
			k, err := r.Body.Read(b[len(b):cap(b)])
			b = b[:len(b)+k]
			if err == io.EOF {
				return b, nil
			}
			if err != nil {
				return nil, err
			}
			if len(b) == cap(b) {
				// Longer than announced (a Body that is not net/http's):
				// read the rest as it comes, within the bound.
				if int64(len(b)) > max {
					return nil, &http.MaxBytesError{Limit: max}
				}
				rest, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max-int64(len(b))))
				return append(b, rest...), err
			}
		}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}
