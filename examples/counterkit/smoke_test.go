package counterkit

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveCounter builds the counter for this machine and serves it as a
// local server (endpoint.Main outside Lambda), on a free port of
// 127.0.0.1, with the environment given; it returns the endpoint's URL.
func serveCounter(t *testing.T, env ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "counter")
	if out, err := exec.Command("go", "build", "-o", bin, counter).CombinedOutput(); err != nil {
		t.Fatalf("building the counter: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), append([]string{"MCP_ADDR=127.0.0.1:0"}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "MCP endpoint: "); ok {
				urls <- u
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("the counter did not say where it listens")
		return ""
	}
}

// TestCounterSmoke: make smoke, in examples/counter as in a module of
// one's own (mcp.mk runs cmd/mcp-smoke with go run), against the counter
// served locally (anonymous: no issuer) with KEYED_TOOL=count_add: every
// check that applies passes, count_add's keyed call among them, replayed
// once; the others are skipped with the reason the command gives (an
// open endpoint has no challenge, the counter no tool that reports
// progress, and no conformance fixture was named).
func TestCounterSmoke(t *testing.T) {
	const origin = "https://app.example"
	url := serveCounter(t, "MCP_ALLOWED_ORIGINS="+origin)
	out, err := makeCmd(t, counter, "smoke", "URL="+url, "STREAM_URL="+url, "ORIGIN="+origin,
		"KEYED_TOOL=count_add", `KEYED_ARGS={"n":1}`).CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("make smoke: %v\n%s", err, text)
	}
	t.Logf("make smoke against the counter:\n%s", text)
	verdicts := map[string]string{}
	var order []string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "PASS" || f[0] == "FAIL" || f[0] == "SKIP") {
			verdicts[f[1]] = line
			order = append(order, f[1])
		}
	}
	for _, check := range []string{"unauthenticated", "discover", "tools-list", "missing-meta", "unsupported-version", "keyed-call", "keyed-replay", "cors-preflight"} {
		if !strings.HasPrefix(verdicts[check], "PASS ") {
			t.Errorf("%s: %q, want PASS", check, verdicts[check])
		}
	}
	for check, why := range map[string]string{
		"challenge":        "open endpoint",
		"stream-discovery": "open endpoint",
		"streaming":        "the endpoint has no notes_digest (the demo's): on a fork, set PROGRESS_TOOL=",
		"conformance":      "no CONFORMANCE_URL",
	} {
		if v := verdicts[check]; !strings.HasPrefix(v, "SKIP ") || !strings.Contains(v, why) {
			t.Errorf("%s: %q, want SKIP saying %q", check, v, why)
		}
	}
	if !strings.Contains(verdicts["keyed-call"], `"count_add" answered`) || !strings.Contains(verdicts["keyed-replay"], `{"count":1}`) {
		t.Errorf("the keyed call is not count_add's: %q, %q", verdicts["keyed-call"], verdicts["keyed-replay"])
	}
	if len(order) != 12 || !strings.Contains(text, "smoke: 12 checks, none failed") {
		t.Errorf("%d verdicts (%v), want 12, none failed", len(order), order)
	}
}
