package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/emfcheck"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// maxFuzzString is the length FuzzObserve cuts each string to. The
// longest the observer looks at is 128 bytes (dimension); past that
// every byte is handled alike. Longer inputs only cost time: the coverage
// counters of the per-byte loops make a long string "new coverage" that
// no shorter one has, and the engine's minimizer then tries up to n²/2
// shorter candidates of n bytes each, for up to -fuzzminimizetime,
// counting no executions meanwhile (0 execs/s).
const maxFuzzString = 160

// FuzzObserve: whatever strings an outcome holds, the observer writes
// exactly one line, which is JSON and valid EMF, at every level.
func FuzzObserve(f *testing.F) {
	f.Add("tools/call", "store_unavailable", "notes_add", "new", "dynamo \"down\"\n", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true, uint8(3))
	f.Add("x\u2028<y>", "", "", "", "", "", false, uint8(0))
	f.Add("", "bad\xffutf8", "t\x00", "\x7f", "\xed\xa0\x80", "", true, uint8(255))
	f.Fuzz(func(t *testing.T, method, kind, target, claim, cause, traceparent string, fault bool, flags uint8) {
		for _, s := range []*string{&method, &kind, &target, &claim, &cause, &traceparent} {
			if len(*s) > maxFuzzString {
				*s = (*s)[:maxFuzzString]
			}
		}
		var buf bytes.Buffer
		level := slog.LevelInfo
		if flags&1 != 0 {
			level = slog.LevelDebug
		}
		if flags&2 != 0 {
			level = slog.LevelError
		}
		ob := observe.New(&buf, observe.Options{Level: level, ToolErrorText: flags&4 != 0})
		o := &stateless.Outcome{Method: method, Kind: kind, Target: target, Claim: claim, Fault: fault, TraceParent: traceparent,
			Status: 200, Code: -32603, Version: method, Duration: time.Duration(flags) * time.Millisecond}
		o.Steps.Handler = time.Duration(flags) * time.Microsecond
		o.KMSCalls.Store(int32(flags & 8))
		if cause != "" {
			o.Err = errors.New(cause)
			o.ErrFromTool = flags&16 != 0
		}
		if flags&32 != 0 {
			o.Panic = &stateless.Panic{Value: cause, Stack: []byte(cause)}
		}
		ob.Observe(context.Background(), o)
		line := buf.Bytes()
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not one line: %q", line)
		}
		if !json.Valid(line) {
			t.Fatalf("not JSON: %s", line)
		}
		if _, err := emfcheck.Check(line); err != nil {
			t.Fatalf("not EMF: %v\n%s", err, line)
		}
	})
}
