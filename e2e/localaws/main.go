// Command localaws starts the local AWS parts the function uses, for a
// developer's `sam local` session (`make local-aws`): DynamoDB Local with
// the claims table, and local-kms seeded with the request-state key, on
// the fixed ports deploy/sam-local-env.json names. It reads everything
// from that file, so the servers are always where the file sends the
// function. It prints the sam commands to run, and stops both servers on
// Ctrl-C.
//
// Neither server has a host option: both listen on every interface of
// this machine while they run. They hold only local test data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/samlocal"
)

func main() {
	envPath := flag.String("env", "deploy/sam-local-env.json", "the env-vars file given to sam local")
	seed := flag.String("seed", "deploy/local-kms-seed.yaml", "local-kms seed file holding the file's key")
	function := flag.String("function", "McpFunction", "the file's section that names the endpoints, table and key")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *envPath, *seed, *function, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "local-aws:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, envPath, seed, function string, out io.Writer) error {
	env, err := samlocal.ReadEnv(envPath, function)
	if err != nil {
		return err
	}
	ddb, err := samlocal.ParseEndpoint(env, samlocal.EnvDynamoDBEndpoint)
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := samlocal.StartStack(startCtx, env, samlocal.StackOptions{SeedPath: seed, FixedPorts: true, Exposed: true})
	if err != nil {
		return fmt.Errorf("%w (is something else on the ports %s names?)", err, envPath)
	}
	defer s.Stop()

	// With 127.0.0.1 endpoints the container must share the host's
	// network (Linux); host.docker.internal reaches the host from Docker
	// Desktop's own network.
	network := ""
	if ddb.Host != "host.docker.internal" {
		network = " --docker-network host"
	}
	fmt.Fprintf(out, `
DynamoDB Local  %s   table %s (in memory: gone when this stops)
local-kms       %s   key %s
*** WARNING: both listen on EVERY interface of this machine while they run (neither has a
*** host option): anyone who can reach it can read and write the table and use the key.
*** Run this on a trusted network only.

In another terminal, after sam build:
  sam local invoke McpFunction -e notebook/events/notes-add.json --env-vars %s%s
  sam local start-api --env-vars %s%s
Without Docker, the same environment under the Lambda runtime emulator:
  make invoke EVENT=notebook/events/notes-add.json ENV=%s

Ctrl-C stops both.
`, s.DynamoDB.Endpoint, s.Table, s.KMS.Endpoint, s.KeyARN, envPath, network, envPath, network, envPath)

	var ended error
	select {
	case <-ctx.Done():
	case err := <-s.DynamoDB.Exited():
		ended = errors.Join(errors.New("DynamoDB Local ended"), err)
	case err := <-s.KMS.Exited():
		ended = errors.Join(errors.New("local-kms ended"), err)
	}
	if ended != nil {
		// Ctrl-C reaches the whole process group at once: a server that
		// ends within moments of it was stopped, not lost.
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
			return ended
		}
	}
	fmt.Fprintln(out, "\nstopping DynamoDB Local and local-kms")
	return nil
}
