package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/need"
)

// buildFunction builds the function in pkg (a directory, of module dir) for
// this machine as make build builds it, stamped with a version.
func buildFunction(t *testing.T, dir, pkg string) string {
	t.Helper()
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w -X main.version=v0.0.0-7-gabcdef0-dirty", "-o", bootstrap, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bootstrap
}

// rieFor is the emulator make tools installs, or the test is skipped
// saying how to install it.
func rieFor(t *testing.T) string {
	t.Helper()
	riePath, err := filepath.Abs("../../.tools/bin/aws-lambda-rie")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(riePath); err != nil {
		need.Tool(t, "aws-lambda-rie", err)
	}
	return riePath
}

// TestMadeEvents: what make event prints, for the demo's notes_add and
// for a tool of one's own (examples/counter's count_add), passes make
// invoke through each of the three doors, with no expected response to
// compare with; an event for a tool the function does not have fails,
// saying the answer was an error.
func TestMadeEvents(t *testing.T) {
	riePath := rieFor(t)
	mcpEvent := filepath.Join(t.TempDir(), "mcp-event")
	if out, err := exec.Command("go", "build", "-o", mcpEvent, "../../cmd/mcp-event").CombinedOutput(); err != nil {
		t.Fatalf("building mcp-event: %v\n%s", err, out)
	}
	env, err := environment("", "McpFunction")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	made := func(name string, vars ...string) string {
		cmd := exec.Command(mcpEvent)
		cmd.Env = append(os.Environ(), vars...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mcp-event %v: %v", vars, err)
		}
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, f := range []struct {
		name, dir, pkg string
		vars           []string
	}{
		// The note book as functions/fixture serves it, which a fork
		// keeps when functions/mcp serves its own tools.
		{"notes-add", "../..", "./functions/fixture", []string{"TOOL=notes_add", `ARGS={"text":"made"}`, "KEY=made-1"}},
		{"count-add", "../../examples", "./counter", []string{"TOOL=count_add", `ARGS={"n":2}`}},
	} {
		o := &options{rie: riePath, bootstrap: buildFunction(t, f.dir, f.pkg), env: env}
		for _, door := range []string{"http-api", "rest", "function-url"} {
			ev := made(f.name+"-"+door, append(f.vars, "DOOR="+door)...)
			var out bytes.Buffer
			if !runEvent(&out, o, ev) || !strings.Contains(out.String(), "has no expected response") {
				t.Errorf("%s through %s: output:\n%s", f.name, door, out.String())
			}
		}
		if f.name == "count-add" {
			ev := made("no-such-tool", "TOOL=no_such_tool", "ARGS={}")
			var out bytes.Buffer
			if runEvent(&out, o, ev) || !strings.Contains(out.String(), "FAIL "+ev+": answered") {
				t.Errorf("an unknown tool passed: output:\n%s", out.String())
			}
		}
	}
}

// TestRunEvent drives the tool as `make invoke` does: the real bootstrap,
// stamped with a version as `make build` stamps it, under the emulator.
func TestRunEvent(t *testing.T) {
	riePath := rieFor(t)
	// The function's own discover event against functions/mcp, whose
	// expected answer it is; the replay against the harnesses' function,
	// which serves the note book whose events they are.
	bootstrap, fixture := buildFunction(t, "../..", "./functions/mcp"), buildFunction(t, "../..", "./functions/fixture")
	// A copy of the events, so one expected file can be made wrong.
	dir := t.TempDir()
	for name, from := range map[string]string{"discover": "events", "notes-add-keyed": "notebook/events", "notes-add-keyed-replay": "notebook/events"} {
		for _, suffix := range []string{".json", ".expected.json"} {
			b, err := os.ReadFile("../../" + from + "/" + name + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+suffix), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	env, err := environment("", "McpFunction")
	if err != nil {
		t.Fatal(err)
	}
	o := &options{rie: riePath, bootstrap: bootstrap, env: env}
	run := func(event string) (bool, string) {
		var out bytes.Buffer
		ok := runEvent(&out, o, filepath.Join(dir, event))
		return ok, out.String()
	}

	ok, out := run("discover.json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !ok || lines[len(lines)-1] != "PASS "+filepath.Join(dir, "discover.json") {
		t.Fatalf("discover: passed %v, output:\n%s", ok, out)
	}
	for _, want := range []string{"discover.json: function log", "   START RequestId:", `"msg":"request"`, "discover.json: answer", `"version": "v0.0.0-7-gabcdef0-dirty"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(rapid)") {
		t.Errorf("the emulator's own lines were printed:\n%s", out)
	}

	o.bootstrap = fixture
	ok, out = run("notes-add-keyed-replay.json")
	o.bootstrap = bootstrap
	if !ok || !strings.Contains(out, "it replays "+filepath.Join(dir, "notes-add-keyed.json")) || !strings.Contains(out, `"io.github.serverless-mcp/replay": true`) {
		t.Fatalf("replay on its own: passed %v, output:\n%s", ok, out)
	}

	// A real difference fails, naming where, on the last line.
	exp := filepath.Join(dir, "discover.expected.json")
	b, _ := os.ReadFile(exp)
	if err := os.WriteFile(exp, bytes.Replace(b, []byte(`"ttlMs": 300000`), []byte(`"ttlMs": 1`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	ok, out = run("discover.json")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	want := "FAIL " + filepath.Join(dir, "discover.json") + ": $.body.result.ttlMs: got 300000, want 1"
	if ok || lines[len(lines)-1] != want {
		t.Fatalf("a wrong expected file: passed %v, last line %q, want %q", ok, lines[len(lines)-1], want)
	}
}
