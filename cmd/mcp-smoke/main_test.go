package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommand: the command as make smoke runs it: usage mistakes exit 2
// before any request; an endpoint that does not answer fails
// unauthenticated once, skips the checks that would call it again, and
// exits 1; the token is read from the environment.
func TestCommand(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcp-smoke")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := run(nil); code != 2 || !strings.Contains(out, "usage: make smoke URL=") {
		t.Errorf("no URL: exit %d\n%s", code, out)
	}
	if out, code := run(nil, "-url", "http://127.0.0.1:1/mcp", "-keyed-tool", "count_add"); code != 2 || !strings.Contains(out, "a tool and its arguments go together") {
		t.Errorf("a tool without its arguments: exit %d\n%s", code, out)
	}
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	out, code := run([]string{"TOKEN=t0ken"}, "-url", url)
	if code != 1 || !strings.Contains(out, "FAIL unauthenticated") || !strings.Contains(out, "SKIP discover") ||
		!strings.Contains(out, "smoke: 1 of 11 checks failed") {
		t.Errorf("an endpoint that does not answer: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "t0ken") {
		t.Errorf("the token was printed:\n%s", out)
	}
}
