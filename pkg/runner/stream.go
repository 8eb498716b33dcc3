package runner

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
)

// EnvStreamEvents names the event kinds a function is invoked for as a
// response stream: "rest" (a REST API integration whose response transfer
// mode is STREAM), "function-url" (a function URL whose invoke mode is
// RESPONSE_STREAM), or both, comma-separated. Unset: every answer is
// buffered.
const EnvStreamEvents = "MCP_STREAM_EVENTS"

// StreamEvents reads MCP_STREAM_EVENTS.
func StreamEvents(getenv func(string) string) ([]apigw.Kind, error) {
	v := getenv(EnvStreamEvents)
	if v == "" {
		return nil, nil
	}
	var kinds []apigw.Kind
	for _, s := range strings.Split(v, ",") {
		switch strings.TrimSpace(s) {
		case "rest":
			kinds = append(kinds, apigw.KindREST)
		case "function-url":
			kinds = append(kinds, apigw.KindFunctionURL)
		default:
			return nil, errors.New(EnvStreamEvents + `: want "rest", "function-url" or both, comma-separated`)
		}
	}
	return kinds, nil
}

func (h *Invocations) streams(k apigw.Kind) bool {
	for _, s := range h.StreamKinds {
		if s == k {
			return true
		}
	}
	return false
}

// buffered is a whole answer; its content type tells Lambda so.
type buffered struct{ *bytes.Reader }

func (*buffered) ContentType() string { return "application/json" }

// streamed is a response stream in the HTTP integration response format,
// which serveRuntime posts as AWS's streaming contract says.
type streamed struct{ *io.PipeReader }

func (*streamed) ContentType() string { return "application/vnd.awslambda.http-integration-response" }

// preludeStream writes a stateless.Stream in the HTTP integration
// response format. It is a stateless.Ender: closing the pipe ends the
// invocation's stream (serveRuntime posts it whole and goes on to the next
// invocation), while a handler left running holds only its goroutine.
type preludeStream struct {
	w *io.PipeWriter
}

func (p *preludeStream) Start(status int, header http.Header) error {
	if _, ok := header["Connection"]; ok {
		// A connection's own header (an early answer asks net/http to
		// close its connection): no part of a gateway's response.
		header = header.Clone()
		header.Del("Connection")
	}
	_, err := p.w.Write(apigw.AppendPrelude(make([]byte, 0, 256), status, header))
	return err
}

// End closes the stream: the answer is complete.
func (p *preludeStream) End() error { return p.w.Close() }

func (p *preludeStream) Write(b []byte) error {
	_, err := p.w.Write(b)
	return err
}
