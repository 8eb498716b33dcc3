package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/eventcheck"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/need"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
)

var update = flag.Bool("update", false, "rewrite the events' expected responses (TestEvents) or the generated tool schemas (TestToolSchemas)")

// sampleEvents lists events/*.json, without the expected responses.
func sampleEvents(t *testing.T) []string {
	t.Helper()
	evs, err := eventcheck.Events("../../events")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 20 {
		t.Fatalf("only %d sample events", len(evs))
	}
	return evs
}

// before returns the event that must run first, in the same process, for
// event to be meaningful: X-replay.json replays X.json.
func before(event string) string { return eventcheck.Predecessor(event) }

// testEnv is the configuration the sample events are answered under: a
// fixed state key, so that every run and every process agree.
var testEnv = map[string]string{
	endpoint.EnvStateKey: "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM=",
	// The sample events are anonymous: no issuer to validate tokens.
	endpoint.EnvAllowAnonymous: "true",
	endpoint.EnvLogLevel:       "error",
}

// TestEventsInProcess feeds every sample event through the Lambda handler
// in-process, each to a fresh server, and compares the response with the
// event's expected response.
func TestEventsInProcess(t *testing.T) {
	for _, ev := range sampleEvents(t) {
		t.Run(filepath.Base(ev), func(t *testing.T) {
			cfg, err := endpoint.LoadConfig(func(k string) string { return testEnv[k] })
			if err != nil {
				t.Fatal(err)
			}
			srv, err := newServer(cfg, discardLogger(), nil)
			if err != nil {
				t.Fatal(err)
			}
			h := &apigw.Handler{Server: srv}
			if b := before(ev); b != "" {
				payload, err := os.ReadFile(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.Invoke(context.Background(), payload); err != nil {
					t.Fatal(err)
				}
			}
			payload, err := os.ReadFile(ev)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), payload)
			if err != nil {
				t.Fatal(err)
			}
			checkExpected(t, ev, out)
		})
	}
}

// TestEventsThroughEmulator runs every sample event through the real
// bootstrap binary under the Lambda Runtime Interface Emulator, a fresh
// process for each, as `sam local invoke` would.
func TestEventsThroughEmulator(t *testing.T) {
	riePath := rieBinary(t)
	bootstrap := buildBootstrap(t, runtime.GOARCH)
	var env []string
	for k, v := range testEnv {
		env = append(env, k+"="+v)
	}
	for _, ev := range sampleEvents(t) {
		t.Run(filepath.Base(ev), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bootstrap, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Stop()
			if b := before(ev); b != "" {
				payload, err := os.ReadFile(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.Invoke(ctx, payload); err != nil {
					t.Fatalf("%v\n%s", err, e.Log())
				}
			}
			payload, err := os.ReadFile(ev)
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Invoke(ctx, payload)
			if err != nil {
				t.Fatalf("%v\n%s", err, e.Log())
			}
			checkExpected(t, ev, out)
			if strings.Contains(e.Log(), "panic") {
				t.Errorf("the function panicked:\n%s", e.Log())
			}
		})
	}
}

// rieBinary finds aws-lambda-rie, installed by `make tools`.
func rieBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("AWS_LAMBDA_RIE")
	if p == "" {
		p = "../../.tools/bin/aws-lambda-rie"
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		need.Tool(t, "aws-lambda-rie", err)
	}
	return abs
}

// buildBootstrap builds the function as Lambda runs it: linux, no RPC,
// static.
func buildBootstrap(t *testing.T, arch string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building bootstrap: %v\n%s", err, b)
	}
	return out
}

// checkExpected compares a response with the event's expected response
// through eventcheck, the comparison `make invoke` makes too. With
// -update it rewrites the expected file, keeping its "<any>" wildcards
// and the normalised version.
func checkExpected(t *testing.T, event string, payload []byte) {
	t.Helper()
	path := eventcheck.ExpectedPath(event)
	if *update {
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		b, err := eventcheck.Regenerate(old, payload)
		if err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(event), err, payload)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no expected response: %v (regenerate the generated files with make regen, and review the diff)", err)
	}
	diff, err := eventcheck.Check(want, payload)
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(event), err, payload)
	}
	if diff != "" {
		t.Errorf("%s: %s\ngot %s\n(a tool added or changed? regenerate the generated files with make regen, and review the diff)", filepath.Base(event), diff, payload)
		return
	}
	// An answer that passes must regenerate to the very same file: -update
	// rewrites only what changed, never the wildcards or the version.
	if again, err := eventcheck.Regenerate(want, payload); err != nil || !bytes.Equal(again, want) {
		t.Errorf("%s: -update would rewrite an expected file that the answer passes (%v):\n%s", filepath.Base(event), err, again)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
