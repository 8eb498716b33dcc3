package runner

// A Lambda runtime of our own. It answers a call whose tool's handler
// overruns its deadline in-band without running every handler on a
// goroutine of its own: the handler runs on the invocation's goroutine
// (apigw.Handler.InvokeEarly), and should it overrun, a timer answers the
// call; the runtime posts that answer and goes on to the next invocation
// on a new goroutine, the old one left to the handler (serve's early).
// And it streams: AWS's contract for a streamed response ("Implementing
// response streaming in a custom runtime", Lambda developer guide): the
// runtime posts it to invocation/{id}/response with the header
// Lambda-Runtime-Function-Response-Mode: streaming, as a chunked body,
// and reports a failure in the middle of it in the trailers
// Lambda-Runtime-Function-Error-Type and Lambda-Runtime-Function-Error-Body.
// aws-lambda-go (v1.55.1) posts a returned reader chunked but without the
// header (aws/aws-lambda-go#565), so Lambda need not stream it; this
// runtime keeps the contract for streamed answers and posts every other
// answer whole, as aws-lambda-go would.
//
// Failures, set against aws-lambda-go v1.55.1's loop (lambda/invoke_loop.go
// and lambda/runtime_api_client.go), and followed in this order by serve:
//
//  1. An invocation whose Lambda-Runtime-Deadline-Ms header is missing or
//     no integer is failed without calling the handler: its failure is
//     posted to its error path and the runtime serves the next invocation,
//     as aws-lambda-go does (handleInvoke, parseDeadline). The error
//     document differs: it names the header but not its value, which the
//     peer chose, and its type is Runtime.InvalidDeadline where
//     aws-lambda-go's is errorString.
//  2. A handler's error is posted to the invocation's error path, and the
//     runtime serves the next invocation; a panic is posted as
//     Runtime.Panic, then the runtime returns so that Lambda ends the
//     instance: as aws-lambda-go, whose type for a panic is the panic
//     value's Go type.
//  3. Each post (a response, a streamed response, an error) has until the
//     invocation's deadline and postGrace, and at least postGrace from the
//     handler's return: a stalled Runtime API holds the runtime no longer.
//     aws-lambda-go's posts have no bound (no context, no client timeout),
//     so a stalled API holds it for good. invocation/next has no bound
//     here either, by design: it is a long poll, AWS asks for no timeout on
//     it (the instance may be frozen while it waits), and when it fails
//     the runtime returns, as aws-lambda-go does.
//  4. A response whose post fails on the way (the connection cut in the
//     middle of a stream, or reset, or the bound passed) fails the
//     invocation: the failure is posted to the error path as
//     Runtime.ResponseFailed with what is left of the bound, and the
//     runtime serves the next invocation. aws-lambda-go returns instead,
//     which ends the process. A post the API answers with a status other
//     than 202 still ends the runtime, as in aws-lambda-go.
//  5. Every failed invocation is logged once, at ERROR: its request id,
//     error type and message, whether the Runtime API was told, and a
//     panic's stack, as attributes, which the logger's handler escapes;
//     never the payload. aws-lambda-go prints the error document with the
//     standard log package.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
)

// The Runtime API's headers this runtime reads and writes.
const (
	headerRequestID    = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline     = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN  = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID      = "Lambda-Runtime-Trace-Id"
	headerResponseMode = "Lambda-Runtime-Function-Response-Mode"
	headerErrorType    = "Lambda-Runtime-Function-Error-Type"
	headerErrorBody    = "Lambda-Runtime-Function-Error-Body"
)

// postGrace is how long past an invocation's deadline its posts may take,
// and the least time they are given: the error of a handler that ran to
// its deadline can still be posted.
const postGrace = time.Second

// invokeFunc answers one invocation's payload: a *streamed answer is a
// response stream, anything else is posted whole. It may instead answer
// through early, from another goroutine, before it returns (an overrun
// tool's call answered at its deadline): it returns nil and no error
// then, once the handler it waited on returns.
type invokeFunc func(ctx context.Context, payload []byte, early func(io.Reader, error)) (io.Reader, error)

// serveRuntime serves the invocations of the Runtime API at api (the
// host:port of AWS_LAMBDA_RUNTIME_API) with invoke, one at a time, logging
// each failed one to logger (slog.Default if nil), until the API cannot
// be reached, answers a post with a status other than 202, or a handler
// panics; it returns why. Lambda then ends the instance.
func serveRuntime(ctx context.Context, api string, invoke invokeFunc, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	rt := &runtimeClient{base: "http://" + api + "/2018-06-01/runtime/invocation/", http: &http.Client{}, logger: logger,
		invoke: invoke, ended: make(chan error, 1)}
	go rt.loop(ctx)
	return <-rt.ended
}

type runtimeClient struct {
	base   string
	http   *http.Client
	logger *slog.Logger
	invoke invokeFunc
	// ended takes why the runtime ends, from whichever goroutine serves
	// the invocations then.
	ended chan error
}

// loop serves invocations one at a time, until the runtime must end
// (rt.ended is told why) or an invocation is answered early: the loop then
// goes on on another goroutine (serve's early), and this one returns
// once the handler that held it does.
func (rt *runtimeClient) loop(ctx context.Context) {
	for {
		inv, err := rt.next(ctx) // unbounded (3)
		if err == nil {
			var handedOver bool
			handedOver, err = rt.serve(ctx, inv)
			if handedOver {
				return
			}
		}
		if err != nil {
			select {
			case rt.ended <- err:
			default: // the runtime is ending already
			}
			return
		}
	}
}

// invocation is one event from invocation/next.
type invocation struct {
	id, arn, trace string
	header         http.Header
	payload        []byte
}

// next waits for the next invocation. One without a request id cannot be
// answered at all, so it ends the runtime (aws-lambda-go would post its
// answer to a path without one).
func (rt *runtimeClient) next(ctx context.Context) (*invocation, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rt.base+"next", nil)
	if err != nil {
		return nil, err
	}
	resp, err := rt.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("runner: the next invocation: %w", err)
	}
	defer resp.Body.Close()
	payload, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("runner: reading the next invocation: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("runner: the next invocation: status %d", resp.StatusCode)
	}
	inv := &invocation{id: resp.Header.Get(headerRequestID), arn: resp.Header.Get(headerFunctionARN), trace: resp.Header.Get(headerTraceID),
		header: resp.Header, payload: payload}
	if inv.id == "" {
		return nil, errors.New("runner: an invocation without a request id")
	}
	return inv, nil
}

// deadline reads the invocation's Lambda-Runtime-Deadline-Ms, Unix time
// in milliseconds. Its error does not repeat the value (1).
func (inv *invocation) deadline() (time.Time, error) {
	v := inv.header.Values(headerDeadline)
	if len(v) == 0 {
		return time.Time{}, &runtimeError{typ: "Runtime.InvalidDeadline", msg: "runner: the invocation has no " + headerDeadline + " header"}
	}
	ms, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return time.Time{}, &runtimeError{typ: "Runtime.InvalidDeadline", msg: "runner: the invocation's " + headerDeadline + " header is no integer of milliseconds"}
	}
	return time.UnixMilli(ms), nil
}

// serve runs one invocation and posts its answer, following the numbered
// points above. It returns an error only when the runtime must end: the
// handler panicked, or the Runtime API answered a post with a status
// other than 202. It reports handedOver when the invocation was answered
// early, from another goroutine, which went on serving the invocations
// after it: its caller stops.
func (rt *runtimeClient) serve(ctx context.Context, inv *invocation) (handedOver bool, err error) {
	deadline, err := inv.deadline()
	if err != nil { // 1
		pctx, cancel := postContext(ctx, time.Time{})
		defer cancel()
		return false, rt.fail(pctx, inv.id, err)
	}
	ictx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: inv.id, InvokedFunctionArn: inv.arn})
	//lint:ignore SA1029 the key aws-lambda-go uses, which package observe reads
	ictx = context.WithValue(ictx, observe.LambdaTraceKey, inv.trace)
	var early atomic.Bool
	answer, panicked, err := call(ictx, rt.invoke, inv.payload, func(answer io.Reader, err error) {
		// The watchdog's goroutine, while the handler holds this one:
		// the answer is posted, and the next invocations are served on
		// a goroutine of their own.
		early.Store(true)
		pctx, pcancel := postContext(ctx, deadline) // 3
		defer pcancel()
		if fatal := rt.answer(pctx, inv.id, answer, err, false); fatal != nil {
			select {
			case rt.ended <- fatal:
			default:
			}
			return
		}
		go rt.loop(ctx)
	})
	if early.Load() {
		return true, nil
	}
	pctx, pcancel := postContext(ctx, deadline) // 3
	defer pcancel()
	return false, rt.answer(pctx, inv.id, answer, err, panicked)
}

// answer posts an invocation's answer, or its error (2).
func (rt *runtimeClient) answer(ctx context.Context, id string, answer io.Reader, err error, panicked bool) error {
	if err != nil { // 2
		fatal := rt.fail(ctx, id, err)
		if panicked {
			return fmt.Errorf("runner: the handler panicked: %w", err)
		}
		return fatal
	}
	if c, ok := answer.(io.Closer); ok {
		defer c.Close()
	}
	if s, ok := answer.(*streamed); ok {
		return rt.stream(ctx, id, s)
	}
	return rt.post(ctx, id, answer)
}

// postContext bounds an invocation's posts: its deadline and postGrace,
// and at least postGrace from now (3).
func postContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	bound := deadline.Add(postGrace)
	if least := time.Now().Add(postGrace); bound.Before(least) {
		bound = least
	}
	return context.WithDeadline(ctx, bound)
}

// call runs invoke, turning a panic into an error.
func call(ctx context.Context, invoke invokeFunc, payload []byte, early func(io.Reader, error)) (answer io.Reader, panicked bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			answer, panicked, err = nil, true, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	answer, err = invoke(ctx, payload, early)
	return answer, false, err
}

type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprint(p.value) }

// runtimeError is a failure of the runtime's own, not the handler's, with
// the error type Lambda is told.
type runtimeError struct{ typ, msg string }

func (e *runtimeError) Error() string { return e.msg }

// errorOf is Lambda's error shape for err (aws-lambda-go's own type):
// its message, and Runtime.Panic, the runtime's own type, or the name of
// its Go type.
func errorOf(err error) messages.InvokeResponse_Error {
	var p *panicError
	if errors.As(err, &p) {
		return messages.InvokeResponse_Error{Message: err.Error(), Type: "Runtime.Panic"}
	}
	var re *runtimeError
	if errors.As(err, &re) {
		return messages.InvokeResponse_Error{Message: re.msg, Type: re.typ}
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return messages.InvokeResponse_Error{Message: err.Error(), Type: t.Name()}
}

// post sends a whole answer.
func (rt *runtimeClient) post(ctx context.Context, id string, answer io.Reader) error {
	body, err := io.ReadAll(answer)
	if err != nil {
		return rt.fail(ctx, id, err)
	}
	contentType := "application/octet-stream"
	if c, ok := answer.(interface{ ContentType() string }); ok {
		contentType = c.ContentType()
	}
	return rt.delivered(ctx, id, rt.send(ctx, id, "response", contentType, bytes.NewReader(body), nil, nil), nil)
}

// stream sends a response stream as AWS documents: the response mode
// header, a chunked body, and the error trailers when the stream fails
// after it started. A stream that fails so is a failed invocation: it is
// logged (5), and Lambda has its error from the trailers.
func (rt *runtimeClient) stream(ctx context.Context, id string, s *streamed) error {
	trailer := http.Header{headerErrorType: nil, headerErrorBody: nil}
	body := &trailingBody{r: s, trailer: trailer}
	h := http.Header{headerResponseMode: {"streaming"}}
	return rt.delivered(ctx, id, rt.send(ctx, id, "response", s.ContentType(), body, h, trailer), body.failure)
}

// delivered settles a response's post (4): err is the post's error, and
// failed, if set, reports how a stream that was posted failed.
func (rt *runtimeClient) delivered(ctx context.Context, id string, err error, failed func() error) error {
	var refused *statusError
	switch {
	case err == nil:
		if failed != nil {
			if ferr := failed(); ferr != nil {
				rt.logFailure(id, errorOf(ferr), nil)
			}
		}
		return nil
	case errors.As(err, &refused):
		rt.logFailure(id, messages.InvokeResponse_Error{Message: "runner: " + err.Error(), Type: "Runtime.ResponseFailed"}, errEnding)
		return fmt.Errorf("runner: invocation %s: %w", id, err)
	}
	return rt.fail(ctx, id, &runtimeError{typ: "Runtime.ResponseFailed", msg: "runner: " + err.Error()})
}

// errEnding is why a refused response's failure is not posted: the
// runtime ends.
var errEnding = errors.New("not posted: the runtime ends")

// fail posts err as the invocation's failure and logs it (5). It returns
// an error only when the runtime must end: the Runtime API refused the
// post.
func (rt *runtimeClient) fail(ctx context.Context, id string, err error) error {
	fe := errorOf(err)
	body, _ := json.Marshal(fe)
	perr := rt.send(ctx, id, "error", "application/json", bytes.NewReader(body), http.Header{headerErrorType: {fe.Type}}, nil)
	var p *panicError
	if errors.As(err, &p) {
		rt.logFailure(id, fe, perr, slog.String("stack", string(p.stack)))
	} else {
		rt.logFailure(id, fe, perr)
	}
	var refused *statusError
	if errors.As(perr, &refused) {
		return fmt.Errorf("runner: invocation %s: %w", id, perr)
	}
	return nil
}

// logFailure writes the one line of a failed invocation (5); perr is why
// the Runtime API was not told, if it was not.
func (rt *runtimeClient) logFailure(id string, fe messages.InvokeResponse_Error, perr error, more ...slog.Attr) {
	attrs := append([]slog.Attr{slog.String("request_id", id), slog.String("err_type", fe.Type), slog.String("err", fe.Message),
		slog.Bool("reported", perr == nil)}, more...)
	if perr != nil {
		attrs = append(attrs, slog.String("report_err", perr.Error()))
	}
	rt.logger.LogAttrs(context.Background(), slog.LevelError, "invocation failed", attrs...)
}

// trailingBody reads a stream and, when it ends in an error, sets the
// error trailers before the request's body ends.
type trailingBody struct {
	r       io.Reader
	trailer http.Header

	mu  sync.Mutex // the transport reads the body on a goroutine of its own
	err error
}

func (b *trailingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		fe := errorOf(err)
		js, _ := json.Marshal(fe)
		b.trailer.Set(headerErrorType, fe.Type)
		b.trailer.Set(headerErrorBody, base64.StdEncoding.EncodeToString(js))
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
		return n, io.EOF
	}
	return n, err
}

// failure is the error the stream ended in, if any.
func (b *trailingBody) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// statusError is a post the Runtime API answered with a status other than
// 202.
type statusError struct {
	what   string
	status int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("posting the %s: the Runtime API answered status %d", e.what, e.status)
}

// send posts body to invocation/{id}/{what} within ctx; a trailer makes
// the body chunked with those trailers. Its error is a *statusError when
// the API answered other than 202.
func (rt *runtimeClient) send(ctx context.Context, id, what, contentType string, body io.Reader, h, trailer http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rt.base+id+"/"+what, body)
	if err != nil {
		return err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	if trailer != nil {
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
		req.Trailer = trailer
	}
	resp, err := rt.http.Do(req)
	if err != nil {
		var ue *url.Error // its URL repeats the request id
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("posting the %s: no answer by the invocation's deadline and %v: %w", what, postGrace, err)
		}
		return fmt.Errorf("posting the %s: %w", what, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return &statusError{what: what, status: resp.StatusCode}
	}
	return nil
}
