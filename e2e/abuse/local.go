package abuse

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/samlocal"
)

// Local is the function as a local server: the fixture's binary run as
// make run runs functions/mcp, listening on MCP_ADDR.
type Local struct {
	URL  string
	Log  string
	proc *loopback.Process
}

// StartLocal runs bin with env (nothing else of this process's
// environment) on a free loopback port, its output in logPath, and
// returns when it accepts connections.
func StartLocal(ctx context.Context, bin string, env map[string]string, logPath string) (*Local, error) {
	port, err := loopback.FreePort()
	if err != nil {
		return nil, err
	}
	out, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("abuse: %w", err)
	}
	defer out.Close()
	e := map[string]string{"MCP_ADDR": loopback.Addr(port)}
	for k, v := range env {
		e[k] = v
	}
	cmd := exec.Command(bin)
	cmd.Env = samlocal.Environ(e)
	cmd.Stdout, cmd.Stderr = out, out
	proc, err := loopback.Start(ctx, cmd, loopback.Addr(port), 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("abuse: local server %s: %w", bin, err)
	}
	return &Local{URL: "http://" + loopback.Addr(port) + "/mcp", Log: logPath, proc: proc}, nil
}

// Stop ends the server, as a service is stopped.
func (l *Local) Stop() { l.proc.Terminate(3 * time.Second) }
