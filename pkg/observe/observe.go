// Package observe is what an operator sees of an endpoint: for every
// answered request, one JSON log line that is at the same time a
// CloudWatch Embedded Metric Format (EMF) document, so that CloudWatch
// Logs extracts the metrics from the line itself — no API call on the
// request path, nothing to flush, nothing lost when the function is
// frozen.
//
// The level of a line follows what happened, not the HTTP status: server
// faults (see [stateless.Outcome].Fault) are ERROR with their kind and
// cause, a tool's own plain error is WARN, everything else INFO. Server
// faults mostly travel in-band with 200, and a flood of a peer's mistakes
// must never page anyone, so the status could tell neither.
//
// Nothing the peer chose reaches a line unchecked: the method is logged
// only when it is one the protocol defines ("other" otherwise), the tool
// only when it is registered, a traceparent only when well-formed, and an
// error or panic value that came from tool code — whose text may quote
// the call's arguments — only by its type (and its AWS error code and
// request id), unless [Options.ToolErrorText] opts in. Strings are JSON
// escaped. Arguments, tokens and request state are never logged.
//
// Each line carries the trace context: the Lambda invocation's X-Ray
// trace id and the request's W3C traceparent.
//
// The metrics (namespace [Options.Namespace], every one with the dimension
// Function):
//
//	Requests      Count         by Function; by Function, Method, Outcome
//	Faults        Count         0 or 1 per request, by Function (alarm on it)
//	Latency       Milliseconds  by Function, Method
//	ToolDuration  Milliseconds  by Function, Tool; when a tool ran
//	Claims        Count         by Function, ClaimOutcome; when a call was claimed
//	KMSCalls      Count         by Function; when the request called KMS
//	ColdStart     Count         by Function; on an instance's first request
//
// Metric lines are written whatever the log level: when the level filters
// a request's line out, a line with only the metrics takes its place.
package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Options configure an Observer.
type Options struct {
	// Level is the least severe level of the lines written (default
	// INFO). DEBUG adds each request's step timings and its request-state
	// decisions. Metrics are written whatever the level.
	Level slog.Leveler
	// Namespace is the CloudWatch metric namespace (default "mcp-lambda").
	Namespace string
	// Function is the value of the Function dimension: the Lambda
	// function's name (default "mcp").
	Function string
	// ToolErrorText logs the text of errors and panic values that came
	// from tool, prompt or resource code. They may quote the call's
	// arguments, so by default only their type is logged.
	ToolErrorText bool
	// NoToolDimension writes the metrics handlers emit (Call.Metric)
	// under the Function dimension alone, not Function and Tool: one
	// CloudWatch series per metric name instead of one per name and tool
	// (docs/observability.md, what the series cost).
	NoToolDimension bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Observer writes one line per request to its writer. It is safe for
// concurrent use.
type Observer struct {
	opts Options
	w    *lockedWriter
	bufs sync.Pool
	// served is set by the first request: that one is the instance's cold
	// start.
	served atomic.Bool
	// directives caches the EMF metadata, one variant per combination of
	// the optional metrics present.
	directives [numVariants]atomic.Pointer[[]byte]
	logger     *slog.Logger
}

// New returns an Observer writing to w (os.Stdout on Lambda).
func New(w io.Writer, opts Options) *Observer {
	if opts.Level == nil {
		opts.Level = slog.LevelInfo
	}
	if opts.Namespace == "" {
		opts.Namespace = "mcp-lambda"
	}
	if opts.Function == "" {
		opts.Function = "mcp"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ob := &Observer{opts: opts, w: &lockedWriter{w: w}}
	ob.bufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	ob.logger = slog.New(&traceHandler{slog.NewJSONHandler(ob.w, &slog.HandlerOptions{Level: opts.Level})})
	return ob
}

// Logger returns a logger for the function's other messages (start,
// shutdown), writing JSON lines to the same writer at the same level,
// with the invocation's trace ids when its context has them.
func (ob *Observer) Logger() *slog.Logger { return ob.logger }

// lockedWriter serialises the Observer's and its Logger's writes: one
// Write per line, lines never interleaved.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Observe writes the line for one answered request. It is the
// stateless.Options.Observe hook.
func (ob *Observer) Observe(ctx context.Context, o *stateless.Outcome) {
	level := slog.LevelInfo
	switch {
	case o.Fault:
		level = slog.LevelError
	case o.Err != nil && o.ErrFromTool:
		level = slog.LevelWarn
	}
	cold := ob.served.CompareAndSwap(false, true)
	full := level >= ob.opts.Level.Level()
	debug := slog.LevelDebug >= ob.opts.Level.Level()

	bp := ob.bufs.Get().(*[]byte)
	b := (*bp)[:0]
	now := ob.opts.Now()
	b = append(b, '{')
	if full {
		b = append(b, `"time":"`...)
		b = now.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"`...)
		b = append(b, level.String()...)
		b = append(b, `","msg":"request"`...)
		b = appendTrace(b, ctx, o.TraceParent)
	} else {
		b = append(b, `"msg":"metrics"`...)
	}

	// Dimensions: values from closed sets only.
	method := MethodName(o.Method)
	switch {
	case o.TaskRun:
		method = stateless.MethodTaskRun
	case o.OwnMethod:
		// A name the server registered (an extension's, such as
		// tasks/get), not the peer's invention.
		method = dimension(o.Method)
	}
	outcome := "ok"
	if o.Kind != "" {
		outcome = dimension(o.Kind)
	}
	b = appendField(b, "Function", ob.opts.Function)
	b = appendField(b, "Method", method)
	b = appendField(b, "Outcome", outcome)
	tool := o.Target != "" && (o.Method == "tools/call" || o.TaskRun)
	if tool {
		b = appendField(b, "Tool", dimension(o.Target))
	}
	if o.Claim != "" {
		b = appendField(b, "ClaimOutcome", dimension(o.Claim))
	}

	if full {
		b = appendInt(b, "status", int64(o.Status))
		if o.Code != 0 {
			b = appendInt(b, "code", int64(o.Code))
		}
		if o.Version != "" {
			b = appendField(b, "version", o.Version)
		}
		if o.Target != "" && !tool {
			b = appendField(b, "prompt", o.Target)
		}
		b = appendMillis(b, "duration_ms", o.Duration)
		if o.Fault {
			b = append(b, `,"fault":true`...)
		}
		b = ob.appendCause(b, o)
		if debug {
			b = appendSteps(b, o)
		}
	}

	// Metrics.
	b = appendInt(b, "Requests", 1)
	faults := int64(0)
	if o.Fault {
		faults = 1
	}
	b = appendInt(b, "Faults", faults)
	b = appendMillis(b, "Latency", o.Duration)
	var v variant
	if tool && o.Steps.Handler > 0 {
		v |= withTool
		b = appendMillis(b, "ToolDuration", o.Steps.Handler)
	}
	if o.Claim != "" {
		v |= withClaim
		b = appendInt(b, "Claims", 1)
	}
	if n := o.KMSCalls.Load(); n > 0 {
		v |= withKMS
		b = appendInt(b, "KMSCalls", int64(n))
	}
	if cold {
		v |= withCold
		b = appendInt(b, "ColdStart", 1)
	}
	for _, m := range o.Metrics {
		b = appendMetric(b, m)
	}
	b = append(b, `,"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, now.UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":`...)
	d := ob.directive(v)
	if len(o.Metrics) > 0 {
		// The handler's metrics: a directive of their own, by Function
		// and Tool (or Function alone, Options.NoToolDimension).
		b = append(b, d[:len(d)-1]...)
		b = append(b, ',')
		b = ob.appendHandlerDirective(b, o.Metrics, tool)
		b = append(b, ']')
	} else {
		b = append(b, d...)
	}
	b = append(b, "}}\n"...)
	_, _ = ob.w.Write(b)
	*bp = b
	ob.bufs.Put(bp)
}

// appendCause records why a request failed. A cause from tool code is
// described by its type and AWS fields only (see Options.ToolErrorText);
// a cause from the endpoint itself (a store, the key service, a claim that
// could not be completed) by its text too, which names no argument.
func (ob *Observer) appendCause(b []byte, o *stateless.Outcome) []byte {
	if o.Err == nil {
		return b
	}
	if p := o.Panic; p != nil {
		b = appendField(b, "panic_type", fmt.Sprintf("%T", p.Value))
		if ob.opts.ToolErrorText {
			b = appendField(b, "panic_value", fmt.Sprint(p.Value))
		}
		b = appendField(b, "stack", string(p.Stack))
		return b
	}
	if !o.ErrFromTool || ob.opts.ToolErrorText {
		b = appendField(b, "cause", o.Err.Error())
	}
	b = appendField(b, "cause_type", typeChain(o.Err))
	var dep *mcperr.DependencyError
	if errors.As(o.Err, &dep) {
		// The tool's own account of what failed: a host it vouches for
		// and a status, never argument text.
		b = appendField(b, "dependency_host", dep.Host)
		if dep.Status != 0 {
			b = appendInt(b, "dependency_status", int64(dep.Status))
		}
	}
	return appendAWS(b, o.Err)
}

// appendMetric writes a handler's metric at the line's root: its value,
// or its values.
func appendMetric(b []byte, m stateless.Metric) []byte {
	b = append(b, ',', '"')
	b = append(b, m.Name...)
	b = append(b, '"', ':')
	if len(m.Values) == 1 {
		return strconv.AppendFloat(b, finite(m.Values[0]), 'g', -1, 64)
	}
	b = append(b, '[')
	for i, v := range m.Values {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, finite(v), 'g', -1, 64)
	}
	return append(b, ']')
}

// finite keeps a value JSON can carry: NaN and the infinities are 0.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// appendHandlerDirective writes the EMF directive of a line's handler
// metrics.
func (ob *Observer) appendHandlerDirective(b []byte, ms []stateless.Metric, tool bool) []byte {
	b = append(b, `{"Namespace":`...)
	b = jsonscan.AppendString(b, ob.opts.Namespace)
	if tool && !ob.opts.NoToolDimension {
		b = append(b, `,"Dimensions":[["Function","Tool"]],"Metrics":[`...)
	} else {
		b = append(b, `,"Dimensions":[["Function"]],"Metrics":[`...)
	}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":"`...)
		b = append(b, m.Name...)
		b = append(b, `","Unit":"`...)
		b = append(b, m.Unit...)
		b = append(b, `"}`...)
	}
	return append(b, "]}"...)
}

// typeChain names the types of err's chain, outermost first: what a
// cause from tool code is logged as.
func typeChain(err error) string {
	var sb strings.Builder
	for i := 0; err != nil && i < 8; i++ {
		if i > 0 {
			sb.WriteString(" > ")
		}
		fmt.Fprintf(&sb, "%T", err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				err = es[0]
			} else {
				err = nil
			}
		default:
			err = nil
		}
	}
	return sb.String()
}

// appendAWS adds what an AWS SDK error in err's chain says about itself:
// service, operation, error code, HTTP status and request id. These are
// the SDK's and the service's, never the caller's.
func appendAWS(b []byte, err error) []byte {
	var op *smithy.OperationError
	if errors.As(err, &op) {
		b = appendField(b, "aws_service", op.ServiceID)
		b = appendField(b, "aws_operation", op.OperationName)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		b = appendField(b, "aws_error_code", api.ErrorCode())
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		if s := re.HTTPStatusCode(); s != 0 {
			b = appendInt(b, "aws_http_status", int64(s))
		}
		if id := re.ServiceRequestID(); id != "" {
			b = appendField(b, "aws_request_id", id)
		}
	}
	return b
}

func appendSteps(b []byte, o *stateless.Outcome) []byte {
	s := o.Steps
	b = append(b, `,"steps":{`...)
	b = append(b, `"decode_ms":`...)
	b = appendMillisValue(b, s.Decode)
	for _, f := range [...]struct {
		name string
		d    time.Duration
	}{{"state_ms", s.State}, {"claim_ms", s.Claim}, {"handler_ms", s.Handler}, {"finish_ms", s.Finish}} {
		if f.d > 0 {
			b = append(b, ',', '"')
			b = append(b, f.name...)
			b = append(b, '"', ':')
			b = appendMillisValue(b, f.d)
		}
	}
	b = append(b, '}')
	if o.StateOpened {
		b = append(b, `,"state_opened":true`...)
	}
	if o.StateSealed {
		b = append(b, `,"state_sealed":true`...)
	}
	return b
}

// appendTrace adds the invocation's ids and trace context.
func appendTrace(b []byte, ctx context.Context, traceparent string) []byte {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		b = appendField(b, "request_id", lc.AwsRequestID)
	}
	if id := stateless.RequestID(ctx); id != "" {
		b = appendField(b, "gateway_request_id", id)
	}
	if id := XRayTraceID(ctx); id != "" {
		b = appendField(b, "xray_trace_id", id)
	}
	if traceparent != "" {
		b = appendField(b, "traceparent", traceparent)
	}
	return b
}

// LambdaTraceKey is the context key under which aws-lambda-go puts the
// invocation's X-Amzn-Trace-Id header, and the Observer reads it (it also
// sets _X_AMZN_TRACE_ID, which is process-wide and so not read here). A
// Lambda runtime of one's own passes the header under it too.
const LambdaTraceKey = "x-amzn-trace-id"

// XRayTraceID returns the Root of the invocation's X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=...;Sampled=1"), or
// "" outside Lambda or when it is malformed.
func XRayTraceID(ctx context.Context) string {
	h, _ := ctx.Value(LambdaTraceKey).(string)
	for part := range strings.SplitSeq(h, ";") {
		if root, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok && validXRayRoot(root) {
			return root
		}
	}
	return ""
}

// validXRayRoot checks the shape 1-<8 hex>-<24 hex>.
func validXRayRoot(s string) bool {
	if len(s) != 35 || s[:2] != "1-" || s[10] != '-' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if i == 10 {
			continue
		}
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// MethodName returns method when the protocol defines it, "other" for any
// other string and "none" when there was none (an unreadable body): the
// Method dimension must not take values a peer invents.
func MethodName(method string) string {
	switch {
	case method == "":
		return "none"
	case stateless.IsProtocolMethod(method):
		return method
	}
	if strings.HasPrefix(method, "notifications/") {
		return "notification"
	}
	return "other"
}

// dimension returns s when it can be a metric dimension's value: 1 to
// 128 characters of letters, digits and _ . / - (what tool names, kinds
// and claim decisions are made of); "other" otherwise. The values come
// from the server's closed sets; this keeps a fork's mistake from making
// lines CloudWatch would not extract.
func dimension(s string) string {
	if len(s) == 0 || len(s) > 128 {
		return "other"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-') {
			return "other"
		}
	}
	return s
}

func appendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return jsonscan.AppendString(b, value)
}

func appendInt(b []byte, key string, v int64) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

func appendMillis(b []byte, key string, d time.Duration) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendMillisValue(b, d)
}

// appendMillisValue writes d in milliseconds with microsecond precision.
func appendMillisValue(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', -1, 64)
}

// traceHandler adds the invocation's trace ids to the Logger's records.
type traceHandler struct{ slog.Handler }

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := XRayTraceID(ctx); id != "" {
		r.AddAttrs(slog.String("xray_trace_id", id))
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r.AddAttrs(slog.String("request_id", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{h.Handler.WithAttrs(as)}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{h.Handler.WithGroup(name)}
}
