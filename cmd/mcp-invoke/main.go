// Command mcp-invoke is `make invoke`, in this repository and in a module
// of your own (the mcp.mk cmd/mcp-sam writes runs it there with go run):
// it runs the function binary under the
// Lambda Runtime Interface Emulator on loopback (what `sam local invoke`
// runs inside its container, with no Docker and no AWS account), sends it
// sample events, and for each prints the function's log lines as the
// emulator relays them, then the answer, then whether the answer matches
// the event's expected response (events/X.expected.json), through the
// same comparison as the events tests (internal/testenv/eventcheck). Each event
// ends with one line, `PASS events/x.json` or `FAIL events/x.json: <first
// difference>`; the exit status is 1 if any event failed. An event
// without an expected response (one make event printed) passes when it is
// answered without an error.
//
//	go run github.com/serverless-mcp/mcp-lambda/cmd/mcp-invoke -rie <aws-lambda-rie> -bootstrap <linux build of the function> [-events events] [events/x.json ...]
//
// Each event gets a fresh emulator process, as each `sam local invoke`
// gets a fresh container. An event that replays another (X-replay.json
// needs X.json to have completed) has its predecessor run first in the
// same process, and says so.
//
// With -env-file (make invoke ENV=deploy/sam-local-env.json) the function
// gets that file's section and the variables sam local adds, and talks to
// whatever `make local-aws` runs; state then persists between runs, so
// answers that depend on the table can differ from the expected ones.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/eventcheck"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/samlocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
)

// options are the command's settings, from flags.
type options struct {
	rie, bootstrap string
	envFile        string
	function       string
	emulatorLog    bool
	env            []string // KEY=VALUE for the emulator, built from the above
}

func main() {
	var o options
	flag.StringVar(&o.rie, "rie", ".tools/bin/aws-lambda-rie", "path of aws-lambda-rie")
	flag.StringVar(&o.bootstrap, "bootstrap", "build/amd64/bootstrap", "path of the function binary (for this machine's architecture)")
	event := flag.String("event", "", "event payload file; empty, and no arguments: every event in -events")
	dir := flag.String("events", "events", "directory of the sample events")
	flag.StringVar(&o.envFile, "env-file", "", "a sam local env-vars file (deploy/sam-local-env.json): run with its environment instead of the in-memory defaults")
	flag.StringVar(&o.function, "function", "McpFunction", "the env-vars file's section, and the function name")
	flag.BoolVar(&o.emulatorLog, "emulator-log", false, "also print the emulator's own (rapid) log lines")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: invoke [flags] [events/x.json ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	events := flag.Args()
	if *event != "" {
		events = append([]string{*event}, events...)
	}
	if len(events) == 0 {
		all, err := eventcheck.Events(*dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "invoke:", err)
			os.Exit(2)
		}
		events = all
	}
	env, err := environment(o.envFile, o.function)
	if err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(2)
	}
	o.env = env
	failed := 0
	for _, ev := range events {
		if !runEvent(os.Stdout, &o, ev) {
			failed++
		}
	}
	if len(events) > 1 {
		fmt.Printf("%d events: %d passed, %d failed\n", len(events), len(events)-failed, failed)
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// environment is what the function runs with: LOG_LEVEL=debug and
// anonymous access (the sample events carry no tokens), with in-memory
// claims and notes and a per-process state key; or an env-vars file's
// section over what sam local itself sets.
func environment(envFile, function string) ([]string, error) {
	if envFile == "" {
		return []string{"LOG_LEVEL=debug", "MCP_ALLOW_ANONYMOUS=true"}, nil
	}
	fileEnv, err := samlocal.ReadEnv(envFile, function)
	if err != nil {
		return nil, err
	}
	env := samlocal.SAMDefaults(function)
	maps.Copy(env, fileEnv)
	return samlocal.Environ(env), nil
}

// runEvent runs one event (its predecessor first, if it has one) in a
// fresh emulator and prints its log, answer and verdict; it reports
// whether the event passed.
func runEvent(w io.Writer, o *options, event string) bool {
	fmt.Fprintf(w, "== %s\n", event)
	verdict := func(err error) bool {
		if err != nil {
			fmt.Fprintf(w, "FAIL %s: %v\n", event, err)
			return false
		}
		fmt.Fprintf(w, "PASS %s\n", event)
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := &logBuffer{}
	e, err := rie.Start(ctx, rie.Options{RIE: o.rie, Bootstrap: o.bootstrap, Env: o.env, Output: logs})
	if err != nil {
		return verdict(fmt.Errorf("starting the emulator: %w (make invoke builds %s and installs %s)", err, o.bootstrap, o.rie))
	}
	defer e.Stop()
	s := &session{w: w, e: e, logs: logs, emulatorLog: o.emulatorLog}
	if pred := eventcheck.Predecessor(event); pred != "" {
		fmt.Fprintf(w, "   it replays %s, so that runs first, in the same emulator process\n", pred)
		diff, err := s.invoke(ctx, pred)
		if err != nil {
			return verdict(fmt.Errorf("its predecessor %s: %w", pred, err))
		}
		if diff != "" {
			return verdict(fmt.Errorf("its predecessor %s: %s", pred, diff))
		}
		fmt.Fprintf(w, "-- %s matches its expected response\n", pred)
	}
	diff, err := s.invoke(ctx, event)
	if err == nil && diff != "" {
		err = errors.New(diff)
	}
	return verdict(err)
}

// session is one emulator process and what it has printed so far.
type session struct {
	w           io.Writer
	e           *rie.Emulator
	logs        *logBuffer
	emulatorLog bool
	invocations int
	shown       int // bytes of logs already printed
}

// invoke sends one event, prints the log lines it caused and the answer,
// and returns the first difference from the expected response.
func (s *session) invoke(ctx context.Context, event string) (string, error) {
	payload, err := os.ReadFile(event)
	if err != nil {
		return "", err
	}
	out, invokeErr := s.e.Invoke(ctx, payload)
	s.invocations++
	// The emulator writes END and REPORT after it has answered: wait for
	// this invocation's REPORT so its log is whole (not for long if the
	// function crashed and there is none).
	s.logs.waitFor("REPORT RequestId:", s.invocations, time.Second)
	fmt.Fprintf(s.w, "-- %s: function log\n", event)
	all := s.logs.String()
	s.printLog(all[s.shown:])
	s.shown = len(all)
	if invokeErr != nil {
		return "", invokeErr
	}
	fmt.Fprintf(s.w, "-- %s: answer\n", event)
	v, err := eventcheck.ViewOf(out)
	if err != nil {
		fmt.Fprintf(s.w, "%s\n", out)
		return "", err
	}
	pretty, err := eventcheck.Format(v)
	if err != nil {
		return "", err
	}
	s.w.Write(pretty)
	if _, err := os.Stat(eventcheck.ExpectedPath(event)); errors.Is(err, os.ErrNotExist) {
		// An event of one's own (make event): nothing to compare with,
		// so it passes when it is answered, and not with an error.
		fmt.Fprintf(s.w, "-- %s has no expected response (%s): checked only that it is answered without an error\n", event, eventcheck.ExpectedPath(event))
		return answerError(v), nil
	}
	return eventcheck.CheckFile(event, out)
}

// answerError says what error an answer is ("" for none): an HTTP error
// status, a JSON-RPC error, or a tool's error result.
func answerError(v eventcheck.View) string {
	if v.StatusCode >= 400 {
		return fmt.Sprintf("answered HTTP %d", v.StatusCode)
	}
	msgs := v.Stream
	if v.Body != nil {
		msgs = append(msgs, v.Body)
	}
	for _, m := range msgs {
		obj, _ := m.(map[string]any)
		if e, ok := obj["error"]; ok {
			b, _ := json.Marshal(e)
			return fmt.Sprintf("answered a JSON-RPC error: %s", b)
		}
		if res, _ := obj["result"].(map[string]any); res["isError"] == true {
			b, _ := json.Marshal(res["content"])
			return fmt.Sprintf("answered a tool error: %s", b)
		}
	}
	return ""
}

// printLog prints the function's lines (and the START, END and REPORT
// lines, as sam local shows them), without the emulator's own unless
// asked.
func (s *session) printLog(text string) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !s.emulatorLog && strings.Contains(line, "] (rapid) ") {
			continue
		}
		fmt.Fprintf(s.w, "   %s\n", line)
	}
}

// logBuffer collects the emulator's output, which its relaying goroutines
// write while the invocation runs.
type logBuffer struct{ syncbuf.Buffer }

// waitFor waits until marker has been written n times, or limit passes.
func (l *logBuffer) waitFor(marker string, n int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for strings.Count(l.String(), marker) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}
