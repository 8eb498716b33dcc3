// Package loopback has what the test emulators share: a check that the
// process runs in a network namespace with nothing but loopback, a free
// port, and a wait for a server to listen.
package loopback

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Only reports whether this process's network namespace has no interface
// but loopback, so that a server listening on every interface is still
// reachable from this machine alone.
func Only() bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePorts returns n distinct loopback ports that were free: each is
// held open until all are found, so that the kernel cannot hand the same
// one out twice (two FreePort calls in a row can).
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	held := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Addr is 127.0.0.1:port.
func Addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// WaitListening waits until addr accepts a connection, the process ends
// (exited receives), ctx ends, or limit passes.
func WaitListening(ctx context.Context, addr string, exited <-chan error, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return errors.Join(errors.New("exited before listening"), err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("not listening in time")
		}
	}
}

// Process is an emulator process started by Start.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has ended
	err    error         // how it ended, once exited is closed
}

// Start starts cmd and waits until it listens on addr (within limit).
func Start(ctx context.Context, cmd *exec.Cmd, addr string, limit time.Duration) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := WaitListening(ctx, addr, p.Exited(), limit); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Exited returns a channel that receives how the process ended, once it
// has ended. Each call makes a new channel, so any number of callers may
// wait, and Stop still can.
func (p *Process) Exited() <-chan error {
	c := make(chan error, 1)
	go func() {
		<-p.exited
		c <- p.err
	}()
	return c
}

// Stop kills the process and waits for it to end.
func (p *Process) Stop() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Terminate asks the process to end (SIGTERM), as a service is stopped
// for a restart, and kills it if it has not ended within grace. It waits
// for the end either way.
func (p *Process) Terminate(grace time.Duration) {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.Stop()
	}
}

// Pid is the process's id.
func (p *Process) Pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}
