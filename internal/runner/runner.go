// Package runner serves a stateless.Server the way the project's functions
// run: inside AWS Lambda (AWS_LAMBDA_RUNTIME_API set) through the API
// Gateway adapter, anywhere else as an HTTP server at /mcp that stops
// gracefully on SIGINT or SIGTERM.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// InLambda reports whether the Lambda runtime API is present.
func InLambda(getenv func(string) string) bool { return getenv("AWS_LAMBDA_RUNTIME_API") != "" }

// Run serves srv until ctx ends (locally) or forever (on Lambda). addr is
// the local listening address; the endpoint's URL is printed to stdout.
func Run(ctx context.Context, inLambda bool, srv *stateless.Server, addr string, logger *slog.Logger, stdout io.Writer) error {
	if inLambda {
		lambda.StartWithOptions(&apigw.Handler{Server: srv}, lambda.WithContext(ctx))
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "MCP endpoint: http://%s/mcp\n", ln.Addr())

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
