package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/rie"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
)

var update = flag.Bool("update", false, "rewrite the events' expected responses")

// sampleEvents lists events/*.json, without the expected responses.
func sampleEvents(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob("../../events/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".expected.json") {
			evs = append(evs, f)
		}
	}
	if len(evs) < 20 {
		t.Fatalf("only %d sample events", len(evs))
	}
	return evs
}

func expectedPath(event string) string {
	return strings.TrimSuffix(event, ".json") + ".expected.json"
}

// before returns the event that must run first, in the same process, for
// event to be meaningful: X-replay.json replays X.json.
func before(event string) string {
	if base, ok := strings.CutSuffix(event, "-replay.json"); ok {
		return base + ".json"
	}
	return ""
}

// testEnv is the configuration the sample events are answered under: a
// fixed state key, so that every run and every process agree.
var testEnv = map[string]string{
	envStateKey: "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM=",
	envLogLevel: "error",
}

// TestEventsInProcess feeds every sample event through the Lambda handler
// in-process, each to a fresh server, and compares the response with the
// event's expected response.
func TestEventsInProcess(t *testing.T) {
	for _, ev := range sampleEvents(t) {
		t.Run(filepath.Base(ev), func(t *testing.T) {
			cfg, err := LoadConfig(func(k string) string { return testEnv[k] })
			if err != nil {
				t.Fatal(err)
			}
			srv, err := newServer(cfg, discardLogger())
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
		if testing.Short() {
			t.Skip("aws-lambda-rie is not installed; run make tools")
		}
		t.Fatalf("aws-lambda-rie is not installed (%v); run make tools", err)
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

// view is a response payload in comparable form: the body decoded as
// JSON, or as the messages of an event stream.
type view struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       any               `json:"body,omitempty"`
	Stream     []any             `json:"stream,omitempty"`
}

func viewOf(t *testing.T, payload []byte) view {
	t.Helper()
	var resp struct {
		StatusCode      int               `json:"statusCode"`
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		t.Fatalf("response payload is not JSON: %v\n%s", err, payload)
	}
	if resp.IsBase64Encoded {
		t.Fatalf("body is base64-encoded: %s", payload)
	}
	v := view{StatusCode: resp.StatusCode, Headers: resp.Headers}
	switch {
	case resp.Body == "":
	case resp.Headers["Content-Type"] == "text/event-stream":
		sc := bufio.NewScanner(strings.NewReader(resp.Body))
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatalf("event data is not JSON: %s", data)
				}
				v.Stream = append(v.Stream, m)
			}
		}
	default:
		if err := json.Unmarshal([]byte(resp.Body), &v.Body); err != nil {
			t.Fatalf("body is not JSON: %v\n%s", err, resp.Body)
		}
	}
	return v
}

// checkExpected compares a response with the event's expected response,
// in which the string "<any>" matches any value (random ids and sealed
// state).
func checkExpected(t *testing.T, event string, payload []byte) {
	t.Helper()
	got := viewOf(t, payload)
	path := expectedPath(event)
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no expected response: %v (run go test -run TestEventsInProcess -update and review)", err)
	}
	var want view
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	var ga, wa any
	json.Unmarshal(g, &ga)
	json.Unmarshal(w, &wa)
	if diff := match(wa, ga, "$"); diff != "" {
		t.Errorf("%s: %s\ngot %s", filepath.Base(event), diff, g)
	}
}

// match compares want and got, where "<any>" in want matches anything.
func match(want, got any, path string) string {
	if s, ok := want.(string); ok && s == "<any>" {
		if got == nil {
			return path + ": missing"
		}
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an object", path, got)
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if d := match(w[k], g[k], path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
		for i := range w {
			if d := match(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if !bytes.Equal(wb, gb) {
		return fmt.Sprintf("%s: got %s, want %s", path, gb, wb)
	}
	return ""
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
