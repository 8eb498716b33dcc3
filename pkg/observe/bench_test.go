package observe_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/emfcheck"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

func benchOutcome() *stateless.Outcome {
	o := &stateless.Outcome{Method: "tools/call", Target: "notes_add", Status: 200, Version: "2026-07-28", Duration: 1234 * time.Microsecond, Claim: stateless.ClaimNew}
	o.Steps.Handler = 800 * time.Microsecond
	return o
}

// BenchmarkObserve is the cost of one request line with its metrics; it
// checks the line it times is valid EMF first.
func BenchmarkObserve(b *testing.B) {
	var buf bytes.Buffer
	observe.New(&buf, observe.Options{}).Observe(context.Background(), benchOutcome())
	if _, err := emfcheck.Check(buf.Bytes()); err != nil {
		b.Fatal(err)
	}
	ob := observe.New(io.Discard, observe.Options{})
	o := benchOutcome()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ob.Observe(ctx, o)
	}
}

// BenchmarkSlogReference is the reference: log/slog's JSON handler
// writing the same facts without the metrics.
func BenchmarkSlogReference(b *testing.B) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	o := benchOutcome()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		logger.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("Function", "mcp"), slog.String("Method", o.Method),
			slog.String("Outcome", "ok"), slog.String("Tool", o.Target), slog.String("ClaimOutcome", o.Claim),
			slog.Int("status", o.Status), slog.String("version", o.Version), slog.Float64("duration_ms", 1.234))
	}
}
