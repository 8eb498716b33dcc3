package stateless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Logger returns the logger of this request's handler, for the
// operator's logs (not the client's: that is [Call.Log]): its records go
// to Options.HandlerLogger carrying the request's method, its tool,
// prompt or resource, a digest of its principal and its trace context,
// and, through the handler's context, the invocation's request and trace
// ids (package observe's logger adds them). It never adds the request's
// arguments; what a handler logs is its own to keep clean of them. The
// logger's records use the request's context whether or not a context
// is passed: Info and InfoContext log the same.
func (c *Call) Logger() *slog.Logger {
	t := c.telemetry
	if t == nil || t.base == nil {
		return slog.New(slog.DiscardHandler)
	}
	t.once.Do(func() {
		attrs := []slog.Attr{slog.String("method", t.method)}
		if t.target != "" {
			attrs = append(attrs, slog.String("target", t.target))
		}
		attrs = append(attrs, slog.String("principal_digest", PrincipalDigest(c.Principal)))
		if t.traceParent != "" {
			attrs = append(attrs, slog.String("traceparent", t.traceParent))
		}
		t.logger = slog.New(&requestHandler{h: t.base.Handler().WithAttrs(attrs), ctx: t.ctx})
	})
	return t.logger
}

// PrincipalDigest names a principal in logs without naming it: the first
// 12 hex digits of its SHA-256, the same for the same principal.
func PrincipalDigest(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return hex.EncodeToString(sum[:6])
}

// requestHandler handles records in the request's context.
type requestHandler struct {
	h   slog.Handler
	ctx context.Context
}

func (r *requestHandler) Enabled(_ context.Context, l slog.Level) bool { return r.h.Enabled(r.ctx, l) }
func (r *requestHandler) Handle(_ context.Context, rec slog.Record) error {
	return r.h.Handle(r.ctx, rec)
}
func (r *requestHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &requestHandler{h: r.h.WithAttrs(as), ctx: r.ctx}
}
func (r *requestHandler) WithGroup(name string) slog.Handler {
	return &requestHandler{h: r.h.WithGroup(name), ctx: r.ctx}
}

// telemetry is what a request's Logger and metrics need of it.
type telemetry struct {
	ctx                         context.Context
	base                        *slog.Logger
	method, target, traceParent string
	// once makes logger, on the first Logger: a handler may call it from
	// goroutines of its own.
	once   sync.Once
	logger *slog.Logger
}

// MetricUnit is a metric's unit, as CloudWatch names it.
type MetricUnit string

// The units a handler's metric may have.
const (
	MetricUnitCount        MetricUnit = "Count"
	MetricUnitMilliseconds MetricUnit = "Milliseconds"
	MetricUnitSeconds      MetricUnit = "Seconds"
	MetricUnitBytes        MetricUnit = "Bytes"
	MetricUnitPercent      MetricUnit = "Percent"
	MetricUnitNone         MetricUnit = "None"
)

// Metric is a value a handler reported for its request ([Call.Metric]).
type Metric struct {
	Name   string
	Unit   MetricUnit
	Values []float64
}

// Bounds of a request's metrics: what one log line's EMF carries.
const (
	MaxMetrics      = 8   // distinct names per request
	MaxMetricValues = 100 // values per name per request (EMF's limit)
)

// reservedMetrics are the names the server's own metrics and dimensions
// take (package observe).
var reservedMetrics = []string{"Requests", "Faults", "Latency", "ToolDuration", "Claims", "KMSCalls", "ColdStart",
	"Function", "Method", "Outcome", "Tool", "ClaimOutcome"}

// Metric records value under name for this request: package observe
// writes it in the request's EMF, under the Function and Tool dimensions
// (or Function alone, when told to drop the per-tool one), so that a
// deployment has one series per name and tool. name is 1 to 64 letters
// and digits, starting with a capital letter (CamelCase), and none of the
// server's own; a request carries at most MaxMetrics names and
// MaxMetricValues values of each. It returns why a metric was dropped.
// Call it from the handler's goroutine, as Progress and Log are; Logger
// may be used from any.
func (c *Call) Metric(name string, value float64, unit MetricUnit) error {
	if !metricName(name) || slices.Contains(reservedMetrics, name) {
		return fmt.Errorf("stateless: metric name %q: want 1 to 64 letters and digits, starting with a capital, and not one of the server's", name)
	}
	switch unit {
	case MetricUnitCount, MetricUnitMilliseconds, MetricUnitSeconds, MetricUnitBytes, MetricUnitPercent, MetricUnitNone:
	default:
		return fmt.Errorf("stateless: metric %s: unit %q is not one of the MetricUnit constants", name, unit)
	}
	for i := range c.metrics {
		if m := &c.metrics[i]; m.Name == name {
			if m.Unit != unit {
				return fmt.Errorf("stateless: metric %s: recorded in %s already", name, m.Unit)
			}
			if len(m.Values) >= MaxMetricValues {
				return errTooManyValues
			}
			m.Values = append(m.Values, value)
			return nil
		}
	}
	if len(c.metrics) >= MaxMetrics {
		return errTooManyMetrics
	}
	c.metrics = append(c.metrics, Metric{Name: name, Unit: unit, Values: []float64{value}})
	return nil
}

var (
	// The limits are written out, not formatted: a package-level fmt or
	// strconv call would run at every cold start, and fmt's first use
	// was most of this package's initialization.
	// TestMetricLimitErrorsNameTheLimits holds them to the constants.
	errTooManyMetrics = errors.New("stateless: a request carries at most 8 metrics")
	errTooManyValues  = errors.New("stateless: a metric carries at most 100 values per request")
)

func metricName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// traceParent returns the request's W3C trace context traceparent
// (version-traceid-parentid-flags, lower-case hex, non-zero ids), or ""
// when it is absent or malformed: only a value that passes is ever
// logged. A later version's extra fields are dropped.
func traceParent(v string) string {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return ""
	}
	if len(v) > 55 && (v[:2] == "00" || v[55] != '-') {
		return ""
	}
	if !lowerHex(v[:2]) || v[:2] == "ff" || !lowerHex(v[3:35]) || !lowerHex(v[36:52]) || !lowerHex(v[53:55]) {
		return ""
	}
	if strings.Trim(v[3:35], "0") == "" || strings.Trim(v[36:52], "0") == "" {
		return ""
	}
	return v[:55]
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
