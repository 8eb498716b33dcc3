// Command mcp is the deployable MCP endpoint: inside AWS Lambda it serves
// API Gateway (HTTP API and REST) and function URL events; anywhere else
// it is a local HTTP server on MCP_ADDR (default 127.0.0.1:8080) at /mcp,
// with embedded defaults and no configuration needed.
//
// The demo it serves is a note book (demo.go): fork it and put your own
// tools in its place.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/serverless-mcp/mcp-lambda/internal/runner"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := run(context.Background(), os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

// run starts the endpoint in the mode the environment calls for.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	srv, err := newServer(cfg, logger)
	if err != nil {
		return err
	}
	if err := runner.Run(ctx, cfg.InLambda, srv, cfg.Addr, logger, stdout); err != nil {
		return fmt.Errorf("%s=%s: %w", envAddr, cfg.Addr, err)
	}
	return nil
}

// newServer builds the demo server from the configuration.
func newServer(cfg *Config, logger *slog.Logger) (*stateless.Server, error) {
	return newServerWith(cfg, logger, &awsClients{})
}

// newServerWith builds the server with the given (lazily made) AWS
// clients.
func newServerWith(cfg *Config, logger *slog.Logger, clients *awsClients) (*stateless.Server, error) {
	sealer, err := newSealer(cfg, clients)
	if err != nil {
		return nil, err
	}
	var store claims.Store = claims.NewMemory()
	var notes NoteStore = newMemoryNotes()
	if cfg.ClaimsTable != "" {
		store = &lazyStore{aws: clients, table: cfg.ClaimsTable}
		notes = &dynamoNotes{aws: clients, table: cfg.ClaimsTable}
	} else if cfg.InLambda {
		logger.Warn("no " + envClaimsTable + ": idempotency claims and notes are kept per instance")
	}
	guard := claims.New(store, nil)
	srv := stateless.NewServer(stateless.Implementation{
		Name:    "mcp-lambda-demo",
		Title:   "Note book",
		Version: version,
	}, &stateless.Options{
		Instructions:   "A note book: add, search, digest and delete notes. Notes belong to the caller.",
		AllowedOrigins: cfg.AllowedOrigins,
		Sealer:         sealer,
		Idempotency:    guard,
		Redeemer:       guard,
		Observe:        logRequest(logger),
	})
	(&demo{notes: notes}).register(srv)
	return srv, nil
}

// newSealer picks the request-state sealer: rooted in KMS when a key is
// configured (template.yaml passes one), else a key from the environment,
// else a random per-process key (local runs).
func newSealer(cfg *Config, clients *awsClients) (reqstate.Sealer, error) {
	opts := reqstate.LocalOptions{TTL: cfg.StateTTL, Audience: cfg.Audience}
	switch {
	case cfg.StateKMSKey != "":
		return reqstate.NewKMS(awskms.New(lazyKMS{clients}), reqstate.KMSOptions{LocalOptions: opts, KeyID: cfg.StateKMSKey, Function: cfg.FunctionName})
	case cfg.StateKey != nil:
		return reqstate.NewLocalKey(cfg.StateKey, &opts)
	}
	return reqstate.NewLocal(nil, &opts), nil
}

// logRequest logs one line per request: never arguments, tokens or state.
func logRequest(logger *slog.Logger) func(context.Context, *stateless.Outcome) {
	return func(ctx context.Context, o *stateless.Outcome) {
		attrs := make([]slog.Attr, 0, 9)
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			attrs = append(attrs, slog.String("request_id", lc.AwsRequestID))
		}
		if id := apigw.RequestID(ctx); id != "" {
			attrs = append(attrs, slog.String("gateway_request_id", id))
		}
		attrs = append(attrs,
			slog.String("method", o.Method),
			slog.Int("status", o.Status),
			slog.Float64("duration_ms", float64(o.Duration.Microseconds())/1000),
		)
		if o.Target != "" {
			attrs = append(attrs, slog.String("tool", o.Target))
		}
		outcome, level := "ok", slog.LevelInfo
		switch {
		case o.Code != 0:
			outcome = o.Kind
			if o.Status >= 500 {
				level = slog.LevelError
			}
			attrs = append(attrs, slog.Int("code", o.Code))
		case o.Kind != "":
			outcome = o.Kind // a tool failure shown to the model
		}
		attrs = append(attrs, slog.String("outcome", outcome))
		if o.Err != nil {
			attrs = append(attrs, slog.String("error", o.Err.Error()))
		}
		logger.LogAttrs(ctx, level, "request", attrs...)
	}
}
