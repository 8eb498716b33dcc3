package runner

// A Lambda runtime of our own for functions that stream some answers.
// AWS's contract for a streamed response ("Implementing response
// streaming in a custom runtime", Lambda developer guide): the runtime
// posts it to invocation/{id}/response with the header
// Lambda-Runtime-Function-Response-Mode: streaming, as a chunked body,
// and reports a failure in the middle of it in the trailers
// Lambda-Runtime-Function-Error-Type and Lambda-Runtime-Function-Error-Body.
// aws-lambda-go (v1.55.1) posts a returned reader chunked but without the
// header (aws/aws-lambda-go#565), so Lambda need not stream it; this
// runtime keeps the contract for streamed answers and posts every other
// answer whole, as aws-lambda-go would.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime/debug"
	"strconv"
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

// invokeFunc answers one invocation's payload: a *streamed answer is a
// response stream, anything else is posted whole.
type invokeFunc func(ctx context.Context, payload []byte) (io.Reader, error)

// serveRuntime serves the invocations of the Runtime API at api (the
// host:port of AWS_LAMBDA_RUNTIME_API) with invoke, one at a time, until
// the API fails or a handler panics; it returns why. Lambda then ends the
// instance.
func serveRuntime(ctx context.Context, api string, invoke invokeFunc) error {
	rt := &runtimeClient{base: "http://" + api + "/2018-06-01/runtime/invocation/", http: &http.Client{}}
	for {
		inv, err := rt.next(ctx)
		if err != nil {
			return err
		}
		if err := rt.serve(ctx, inv, invoke); err != nil {
			return err
		}
	}
}

type runtimeClient struct {
	base string
	http *http.Client
}

// invocation is one event from invocation/next.
type invocation struct {
	id, arn, trace string
	deadline       time.Time
	payload        []byte
}

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
	inv := &invocation{id: resp.Header.Get(headerRequestID), arn: resp.Header.Get(headerFunctionARN), trace: resp.Header.Get(headerTraceID), payload: payload}
	if inv.id == "" {
		return nil, errors.New("runner: an invocation without a request id")
	}
	ms, err := strconv.ParseInt(resp.Header.Get(headerDeadline), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("runner: invocation %s has no deadline: %w", inv.id, err)
	}
	inv.deadline = time.UnixMilli(ms)
	return inv, nil
}

// serve runs one invocation and posts its answer. It returns an error
// only when the Runtime API cannot be told, or the handler panicked.
func (rt *runtimeClient) serve(ctx context.Context, inv *invocation, invoke invokeFunc) error {
	ictx, cancel := context.WithDeadline(ctx, inv.deadline)
	defer cancel()
	ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: inv.id, InvokedFunctionArn: inv.arn})
	//lint:ignore SA1029 the key aws-lambda-go uses, which package observe reads
	ictx = context.WithValue(ictx, observe.LambdaTraceKey, inv.trace)
	answer, panicked, err := call(ictx, invoke, inv.payload)
	if err != nil {
		if perr := rt.fail(ctx, inv.id, err); perr != nil {
			return perr
		}
		if panicked {
			return fmt.Errorf("runner: the handler panicked: %w", err)
		}
		return nil
	}
	if c, ok := answer.(io.Closer); ok {
		defer c.Close()
	}
	if s, ok := answer.(*streamed); ok {
		return rt.stream(ctx, inv.id, s)
	}
	return rt.post(ctx, inv.id, answer)
}

// call runs invoke, turning a panic into an error.
func call(ctx context.Context, invoke invokeFunc, payload []byte) (answer io.Reader, panicked bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			answer, panicked, err = nil, true, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	answer, err = invoke(ctx, payload)
	return answer, false, err
}

type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprint(p.value) }

// errorOf is Lambda's error shape for err (aws-lambda-go's own type):
// its message, and its type's name or Runtime.Panic.
func errorOf(err error) messages.InvokeResponse_Error {
	var p *panicError
	if errors.As(err, &p) {
		return messages.InvokeResponse_Error{Message: err.Error(), Type: "Runtime.Panic"}
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
	return rt.send(ctx, id, "response", contentType, bytes.NewReader(body), nil, nil)
}

// fail reports the invocation failed with err.
func (rt *runtimeClient) fail(ctx context.Context, id string, err error) error {
	fe := errorOf(err)
	body, _ := json.Marshal(fe)
	h := http.Header{headerErrorType: {fe.Type}}
	return rt.send(ctx, id, "error", "application/json", bytes.NewReader(body), h, nil)
}

// stream sends a response stream as AWS documents: the response mode
// header, a chunked body, and the error trailers when the stream fails
// after it started.
func (rt *runtimeClient) stream(ctx context.Context, id string, s *streamed) error {
	trailer := http.Header{headerErrorType: nil, headerErrorBody: nil}
	body := &trailingBody{r: s, trailer: trailer}
	h := http.Header{headerResponseMode: {"streaming"}}
	return rt.send(ctx, id, "response", s.ContentType(), body, h, trailer)
}

// trailingBody reads a stream and, when it ends in an error, sets the
// error trailers before the request's body ends.
type trailingBody struct {
	r       io.Reader
	trailer http.Header
}

func (b *trailingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		fe := errorOf(err)
		js, _ := json.Marshal(fe)
		b.trailer.Set(headerErrorType, fe.Type)
		b.trailer.Set(headerErrorBody, base64.StdEncoding.EncodeToString(js))
		return n, io.EOF
	}
	return n, err
}

// send posts body to invocation/{id}/{what}; a trailer makes the body
// chunked with those trailers.
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
		return fmt.Errorf("runner: posting invocation %s's %s: %w", id, what, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("runner: posting invocation %s's %s: status %d", id, what, resp.StatusCode)
	}
	return nil
}
