// Package fntest holds what the tests of a deployable function share: the
// emulator and a Lambda build of the function, and the sample events'
// check (each event answers its expected response, in process and through
// the Lambda Runtime Interface Emulator), so that functions/mcp checks
// its own events and functions/fixture the note book's the same way.
package fntest

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/repo"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Env is the configuration sample events are answered under: a fixed
// state key, so that every run and every process agree, and no issuer
// (the events are anonymous).
var Env = map[string]string{
	endpoint.EnvStateKey:       "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM=",
	endpoint.EnvAllowAnonymous: "true",
	endpoint.EnvLogLevel:       "error",
}

// EnvList is Env as KEY=value strings, for a process.
func EnvList() []string {
	var env []string
	for k, v := range Env {
		env = append(env, k+"="+v)
	}
	return env
}

// Config is Env loaded as package endpoint loads the environment.
func Config(t *testing.T) *endpoint.Config {
	t.Helper()
	cfg, err := endpoint.LoadConfig(func(k string) string { return Env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// DiscardLogger is a logger that writes nothing.
func DiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// RIEBinary finds aws-lambda-rie: $AWS_LAMBDA_RIE, else the one `make
// tools` installs. Without it the test skips, saying how to install it
// (or fails under make, see package need).
func RIEBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("AWS_LAMBDA_RIE")
	if p == "" {
		root, err := repo.Root()
		if err != nil {
			t.Fatal(err)
		}
		p = filepath.Join(root, ".tools", "bin", "aws-lambda-rie")
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

// BuildBootstrap builds the function in dir (a package path such as "."
// or "../fixture") as Lambda runs it: linux, no RPC, static, for arch.
func BuildBootstrap(t *testing.T, dir, arch string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, dir)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building bootstrap: %v\n%s", err, b)
	}
	return out
}

// Events lists the sample events in dir, without their expected
// responses; a directory with none fails the test.
func Events(t *testing.T, dir string) []string {
	t.Helper()
	evs, err := eventcheck.Events(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		t.Fatalf("no sample events in %s", dir)
	}
	return evs
}

// EventsInProcess feeds every sample event in dir through the Lambda
// handler in process, each to a fresh server made by newServer (with the
// event's predecessor first, see eventcheck.Predecessor), and compares
// the response with the event's expected response. update rewrites the
// expected responses instead.
func EventsInProcess(t *testing.T, dir string, newServer func(*endpoint.Config) (*stateless.Server, error), update bool) {
	for _, ev := range Events(t, dir) {
		t.Run(filepath.Base(ev), func(t *testing.T) {
			srv, err := newServer(Config(t))
			if err != nil {
				t.Fatal(err)
			}
			h := &apigw.Handler{Server: srv}
			invoke := func(path string) []byte {
				payload, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				out, err := h.Invoke(context.Background(), payload)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			if b := eventcheck.Predecessor(ev); b != "" {
				invoke(b)
			}
			CheckExpected(t, ev, invoke(ev), update)
		})
	}
}

// EventsThroughEmulator runs every sample event in dir through bootstrap
// under the Lambda Runtime Interface Emulator, a fresh process for each,
// as `sam local invoke` would, and compares the response with the event's
// expected response.
func EventsThroughEmulator(t *testing.T, dir, bootstrap string, update bool) {
	riePath := RIEBinary(t)
	for _, ev := range Events(t, dir) {
		t.Run(filepath.Base(ev), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bootstrap, Env: EnvList()})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Stop()
			invoke := func(path string) []byte {
				payload, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				out, err := e.Invoke(ctx, payload)
				if err != nil {
					t.Fatalf("%v\n%s", err, e.Log())
				}
				return out
			}
			if b := eventcheck.Predecessor(ev); b != "" {
				invoke(b)
			}
			CheckExpected(t, ev, invoke(ev), update)
			if strings.Contains(e.Log(), "panic") {
				t.Errorf("the function panicked:\n%s", e.Log())
			}
		})
	}
}

// HostArch is the architecture bootstraps are built for in tests: this
// machine's.
const HostArch = runtime.GOARCH

// CheckExpected compares a response with the event's expected response
// through eventcheck, the comparison `make invoke` makes too. With update
// it rewrites the expected file, keeping its "<any>" wildcards and the
// normalised version.
func CheckExpected(t *testing.T, event string, payload []byte, update bool) {
	t.Helper()
	path := eventcheck.ExpectedPath(event)
	if update {
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
	// An answer that passes must regenerate to the very same file: update
	// rewrites only what changed, never the wildcards or the version.
	if again, err := eventcheck.Regenerate(want, payload); err != nil || !bytes.Equal(again, want) {
		t.Errorf("%s: update would rewrite an expected file that the answer passes (%v):\n%s", filepath.Base(event), err, again)
	}
}
