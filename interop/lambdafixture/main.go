// Command lambdafixture is the interop fixture server built as a Lambda
// function, so that the real clients can be run through the Lambda path:
// the built bootstrap under the runtime emulator, behind an API Gateway
// front.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/serverless-mcp/mcp-lambda/interop"
	"github.com/serverless-mcp/mcp-lambda/pkg/runner"
)

func main() {
	addr := os.Getenv("MCP_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	srv := interop.NewFixtureServer()
	if os.Getenv("MCP_FIXTURE") == "keyed" {
		srv = interop.NewKeyedServer()
	}
	// REST API events (MCP_STREAM_EVENTS=rest) are the streaming door's:
	// answered as a response stream, as the deployed function answers them.
	streams, err := runner.StreamEvents(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lambdafixture:", err)
		os.Exit(1)
	}
	if err := runner.Run(context.Background(), srv, runner.Options{InLambda: runner.InLambda(os.Getenv), Addr: addr, Logger: logger, Stdout: os.Stdout, StreamKinds: streams}); err != nil {
		fmt.Fprintln(os.Stderr, "lambdafixture:", err)
		os.Exit(1)
	}
}
