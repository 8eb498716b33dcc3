// Package runner serves a stateless.Server the way the project's functions
// run: inside AWS Lambda (AWS_LAMBDA_RUNTIME_API set) through the API
// Gateway adapter, on a Lambda runtime of its own (runtime.go: it streams
// as AWS's contract asks, and posts an overrun tool's answer at its
// deadline while the handler runs on), anywhere else as an HTTP server at
// /mcp that stops gracefully on SIGINT or SIGTERM.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/clientconfig"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// printClients writes, for a local endpoint at url, what each documented
// client that can reach it needs (internal/clientconfig), one line each:
// Claude Desktop reaches an endpoint from Anthropic's servers, never a
// local one.
func printClients(w io.Writer, name, url string) {
	fmt.Fprintln(w, "Connect a client (docs/clients.md has them with tokens and OAuth):")
	for _, s := range clientconfig.For(name, url) {
		if s.Client == "Claude Desktop" {
			continue
		}
		config := s.Config
		var b bytes.Buffer
		if json.Compact(&b, []byte(config)) == nil {
			config = s.Where + ": " + b.String()
		}
		fmt.Fprintf(w, "  %-14s %s\n", s.Client+":", config)
	}
}

// InLambda reports whether the Lambda runtime API is present.
func InLambda(getenv func(string) string) bool { return getenv("AWS_LAMBDA_RUNTIME_API") != "" }

// Options say how to serve.
type Options struct {
	// InLambda serves Lambda invocations instead of HTTP.
	InLambda bool
	// Addr is the local listening address.
	Addr string
	// Endpoint is the endpoint's canonical URL, which request state is
	// bound to. Unset: on Lambda, each event's (API Gateway's domain name
	// and path); locally, the listening URL.
	Endpoint string
	// Logger receives the runner's own messages.
	Logger *slog.Logger
	// Stdout receives the local endpoint's URL, and the lines that
	// connect the documented clients to it (docs/clients.md).
	Stdout io.Writer
	// Name is the endpoint's name in those lines: the name a client lists
	// the server under.
	Name string
	// RequestTimeout, if set, bounds a gateway request on Lambda below
	// the invocation's own deadline: the function's timeout is a task
	// worker's (minutes), a gateway's integration ends at 29 seconds.
	RequestTimeout time.Duration
	// StreamKinds are the kinds of gateway event the function is invoked
	// for as a response stream (MCP_STREAM_EVENTS): their answers stream,
	// notifications as they happen. A streamed request is bounded by the
	// invocation, not RequestTimeout.
	StreamKinds []apigw.Kind
	// Events answer the invocations an extension makes of the function
	// itself, which are no gateway's: the tasks extension's worker events
	// ((*tasks.Extension).HandleEvent). Each is asked in turn, before the
	// payload is taken for a gateway's event.
	Events []EventHandler
	// Documents, if set, are the endpoint's OAuth documents (package
	// auth), served beside the endpoint on both doors: locally at their
	// paths on the listening address, on Lambda for the gateway's events
	// that ask for them (apigw.Handler.Documents). Each answer is
	// reported as an MCP answer is. Package auth's *Documents is one.
	Documents Documents
}

// Documents serve the documents an endpoint answers beside MCP, on both
// doors: package auth's Documents (the OAuth metadata and the
// registration facade). It is an interface of the door's, so that a
// function without authorization links nothing of package auth.
type Documents interface {
	apigw.Documents
	// Handler serves them over net/http, for the endpoint at endpoint.
	Handler(endpoint string) http.Handler
}

// EnvRequestTimeout names the variable of Options.RequestTimeout.
const EnvRequestTimeout = "MCP_REQUEST_TIMEOUT"

// RequestTimeout reads MCP_REQUEST_TIMEOUT, a Go duration of at least a
// second; unset is 0, no bound beyond the invocation's.
func RequestTimeout(getenv func(string) string) (time.Duration, error) {
	v := getenv(EnvRequestTimeout)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("%s=%q: want a duration of at least 1s, such as 28s", EnvRequestTimeout, v)
	}
	return d, nil
}

// Run serves srv until ctx ends (locally) or forever (on Lambda).
func Run(ctx context.Context, srv *stateless.Server, o Options) error {
	if o.InLambda {
		h := &Invocations{Server: srv, Gateway: &apigw.Handler{Server: srv, Endpoint: o.Endpoint, Documents: o.Documents},
			RequestTimeout: o.RequestTimeout, StreamKinds: o.StreamKinds, Events: o.Events}
		// The runtime of our own (runtime.go): it answers an overrun
		// tool's call while the handler runs on, and it streams with the
		// response mode header Lambda's streaming contract requires
		// (aws-lambda-go would post a stream without it).
		return serveRuntime(ctx, os.Getenv("AWS_LAMBDA_RUNTIME_API"), h.invokeEarly, o.Logger)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Addr, err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	endpoint := o.Endpoint
	if endpoint == "" {
		endpoint = url
	}
	hs := &http.Server{Handler: localHandler(srv, endpoint, o.Documents), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(o.Stdout, "MCP endpoint: %s\n", url)
	printClients(o.Stdout, o.Name, url)
	logger := o.Logger

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// localHandler is the local server's: the endpoint at /mcp, and every
// other path the OAuth documents' (docs.Handler: their routing table,
// the Lambda handler's too), all of them about endpoint.
func localHandler(srv *stateless.Server, endpoint string, docs Documents) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", &stateless.HTTPHandler{Server: srv, Endpoint: endpoint})
	if docs != nil {
		mux.Handle("/", docs.Handler(endpoint))
	}
	return mux
}

// An EventHandler answers the invocations of the function that are no
// gateway's: events an extension sends the function itself, such as the
// tasks extension's worker events ((*tasks.Extension).HandleEvent, which
// runs the task). handled reports whether payload is one of its events;
// when it is, reply is the invocation's response and err fails the
// invocation (Lambda retries an asynchronous one). The door knows no
// extension: each registers the events it understands.
type EventHandler func(ctx context.Context, payload []byte) (handled bool, reply []byte, err error)

// Invocations serves a function's invocations: an event one of Events
// handles is theirs (the tasks extension's worker events, which the
// function sends itself); a REST API's Lambda REQUEST authorizer events
// are answered with its policy (apigw.Handler.Authorize); every other
// payload is a gateway's event. It implements lambda.Handler.
type Invocations struct {
	Server  *stateless.Server
	Gateway *apigw.Handler
	// RequestTimeout, if set, bounds each gateway request (see
	// Options.RequestTimeout); a worker has the whole invocation.
	RequestTimeout time.Duration
	// StreamKinds are the event kinds invoked for a response stream
	// (Options.StreamKinds).
	StreamKinds []apigw.Kind
	// Events answer the events extensions send the function
	// (Options.Events); an event none of them handles is taken for a
	// gateway's, and fails as none.
	Events []EventHandler
}

// Invoke implements lambda.Handler. An event handler's error fails the
// invocation, which Lambda retries.
func (h *Invocations) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	for _, handle := range h.Events {
		if handled, reply, err := handle(ctx, payload); handled {
			return reply, err
		}
	}
	if apigw.IsAuthorizerEvent(payload) {
		return h.authorize(ctx, payload)
	}
	r, err := apigw.Decode(payload)
	return h.respond(ctx, r, err, nil)
}

// invokeEarly is the runtime's invokeFunc: it answers a payload as
// Invoke does, except that a gateway's event of a kind in StreamKinds is
// answered as a response stream, in the HTTP integration response format
// Lambda streams (a JSON prelude with the status and headers, eight NUL
// bytes, then the body as it is written: each notification the moment
// it is emitted), and any other gateway event's tool handler runs on
// this goroutine, its overrun answered through early
// (apigw.Handler.RespondEarly).
func (h *Invocations) invokeEarly(ctx context.Context, payload []byte, early func(io.Reader, error)) (io.Reader, error) {
	for _, handle := range h.Events {
		if handled, reply, err := handle(ctx, payload); handled {
			return whole(reply, err)
		}
	}
	if apigw.IsAuthorizerEvent(payload) {
		// An authorizer's answer is a policy, never streamed.
		return whole(h.authorize(ctx, payload))
	}
	// The event is read once: its kind decides the answer's form.
	r, derr := apigw.Decode(payload)
	if r == nil || !h.streams(r.Kind) {
		var answer func([]byte, error)
		if early != nil {
			answer = func(b []byte, err error) { early(whole(b, err)) }
		}
		b, err := h.respond(ctx, r, derr, answer)
		if b == nil && err == nil {
			return nil, nil // answered early
		}
		return whole(b, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(h.Gateway.RespondStream(ctx, r, derr, &preludeStream{w: pw}))
	}()
	return &streamed{pr}, nil
}

// authorize answers a REST API Lambda authorizer's event, within
// RequestTimeout.
func (h *Invocations) authorize(ctx context.Context, payload []byte) ([]byte, error) {
	ctx, cancel := h.bounded(ctx)
	defer cancel()
	return h.Gateway.Authorize(ctx, payload)
}

// respond answers a gateway event Decode has read, within RequestTimeout,
// through early when it is set (apigw.Handler.RespondEarly: nil and no
// error when the answer went there).
func (h *Invocations) respond(ctx context.Context, r *apigw.Request, err error, early func([]byte, error)) ([]byte, error) {
	ctx, cancel := h.bounded(ctx)
	defer cancel()
	return h.Gateway.RespondEarly(ctx, r, err, early)
}

// bounded is ctx within RequestTimeout, when it is set.
func (h *Invocations) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.RequestTimeout > 0 {
		return context.WithTimeout(ctx, h.RequestTimeout)
	}
	return ctx, func() {}
}

// whole is a whole answer, or its error.
func whole(b []byte, err error) (io.Reader, error) {
	if err != nil {
		return nil, err
	}
	return &buffered{bytes.NewReader(b)}, nil
}
