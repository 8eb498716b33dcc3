// Package rie runs a Lambda function binary under the AWS Lambda Runtime
// Interface Emulator (aws-lambda-rie, what `sam local invoke` runs inside
// its container) on loopback, and invokes it the way Lambda does. Tests,
// `make invoke` and the conformance front use it; it is not part of the
// deployed product.
package rie

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
)

// Emulator is one running emulator with one function.
type Emulator struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
	mu     sync.Mutex // the emulator serves one invocation at a time
	log    *syncbuf.Buffer
	exited chan struct{} // closed when the emulator has ended
	err    error         // how it ended, once exited is closed
	group  bool          // the emulator leads a process group of its own
}

// Options configure Start.
type Options struct {
	// RIE is the path of aws-lambda-rie.
	RIE string
	// Bootstrap is the path of the function binary.
	Bootstrap string
	// Env is added to the emulator's environment (KEY=VALUE).
	Env []string
	// Output, if set, receives the emulator's and the function's output;
	// otherwise it is kept and returned by Log.
	Output io.Writer
	// OwnGroup runs the emulator in a process group of its own, so that
	// Kill ends the function with it at once, as Lambda ends an instance
	// (a chaos run kills instances mid-call). Without it a Ctrl-C of the
	// caller's terminal reaches the emulator too.
	OwnGroup bool
}

// Start starts the emulator on two free loopback ports and waits until it
// accepts connections.
func Start(ctx context.Context, o Options) (*Emulator, error) {
	ports, err := loopback.FreePorts(2)
	if err != nil {
		return nil, err
	}
	api, runtimeAPI := loopback.Addr(ports[0]), loopback.Addr(ports[1])
	cmd := exec.Command(o.RIE, "--runtime-interface-emulator-address", api, "--runtime-api-address", runtimeAPI, o.Bootstrap)
	cmd.Env = append(os.Environ(), o.Env...)
	if o.OwnGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	e := &Emulator{cmd: cmd, group: o.OwnGroup, url: "http://" + api + "/2015-03-31/functions/function/invocations",
		client: &http.Client{Timeout: 60 * time.Second}, exited: make(chan struct{})}
	if o.Output != nil {
		cmd.Stdout, cmd.Stderr = o.Output, o.Output
	} else {
		e.log = &syncbuf.Buffer{}
		cmd.Stdout, cmd.Stderr = e.log, e.log
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rie: starting %s: %w", o.RIE, err)
	}
	go func() {
		e.err = cmd.Wait()
		close(e.exited)
	}()
	// WaitListening takes what it receives; Stop must still see the end.
	ended := make(chan error, 1)
	go func() {
		<-e.exited
		ended <- e.err
	}()
	if err := loopback.WaitListening(ctx, api, ended, 10*time.Second); err != nil {
		e.Stop()
		return nil, fmt.Errorf("rie: emulator: %w", err)
	}
	return e, nil
}

// Invoke sends one invocation payload and returns the function's
// response payload.
func (e *Emulator) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return e.InvokeWith(ctx, payload, nil)
}

// InvokeWith is Invoke with headers on the emulator's invoke request: the
// emulator takes X-Amzn-RequestId as the invocation's request id and
// X-Amzn-Trace-Id as the X-Ray trace header Lambda gives a traced
// function.
func (e *Emulator) InvokeWith(ctx context.Context, payload []byte, h http.Header) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rie: invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("rie: reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rie: invoke answered %d: %s", resp.StatusCode, body)
	}
	return body, nil
}

// Log returns what the emulator and the function printed, when Output
// was not set.
func (e *Emulator) Log() string {
	if e.log == nil {
		return ""
	}
	return e.log.String()
}

// Stop ends the emulator and the function.
func (e *Emulator) Stop() error {
	if e.cmd.Process == nil {
		return nil
	}
	if e.group {
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGINT)
	} else {
		_ = e.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case <-e.exited:
	case <-time.After(3 * time.Second):
		e.Kill()
	}
	return nil
}

// Kill ends the emulator and the function at once with SIGKILL, as a
// crashed or recycled Lambda instance ends: an invocation in flight gets
// no answer and the function runs no further. The function and anything
// else the emulator started are killed first (found through /proc: the
// emulator may start the function in a process group of its own, which
// a group kill would miss), then the emulator, and with Options.OwnGroup
// its whole process group. Kill waits for the emulator to end.
func (e *Emulator) Kill() {
	if e.cmd.Process == nil {
		return
	}
	select {
	case <-e.exited:
		return
	default:
	}
	for _, pid := range descendants(e.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if e.group {
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	} else {
		_ = e.cmd.Process.Kill()
	}
	<-e.exited
}

// descendants are the processes below pid, children first, as /proc
// lists them; none where there is no /proc.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}

// Pid is the emulator's process id; the function runs as its child.
func (e *Emulator) Pid() int {
	if e.cmd.Process == nil {
		return 0
	}
	return e.cmd.Process.Pid
}

// Exited is closed when the emulator has ended.
func (e *Emulator) Exited() <-chan struct{} { return e.exited }
