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
	_ "embed"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/serverless-mcp/mcp-lambda/internal/runner"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// toolSchemas are the demo tools' schemas, generated from their Go types
// (TestToolSchemas keeps them true), so that no call infers one.
//
//go:embed toolschemas.json
var toolSchemas []byte

// schemaEngine validates what the server's flat validator does not:
// notes_search's result, a list of notes. It costs the function about a
// millisecond of cold start (see package toolschema).
var schemaEngine = toolschema.Engine{}

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
	ob := newObserver(cfg, stdout)
	logger := ob.Logger()
	srv, err := newServer(cfg, logger, ob)
	if err != nil {
		return err
	}
	opts := runner.Options{InLambda: cfg.InLambda, Addr: cfg.Addr, Endpoint: cfg.Audience, Logger: logger, Stdout: stdout, RequestTimeout: cfg.RequestTimeout, StreamKinds: cfg.StreamKinds}
	if err := runner.Run(ctx, srv, opts); err != nil {
		return fmt.Errorf("%s=%s: %w", envAddr, cfg.Addr, err)
	}
	return nil
}

// newObserver returns what writes the function's log lines and metrics.
func newObserver(cfg *Config, stdout io.Writer) *observe.Observer {
	return observe.New(stdout, observe.Options{
		Level:         cfg.LogLevel,
		Namespace:     cfg.MetricsNamespace,
		Function:      cfg.FunctionName,
		ToolErrorText: cfg.LogToolErrorText,
	})
}

// newServer builds the demo server from the configuration.
func newServer(cfg *Config, logger *slog.Logger, ob *observe.Observer) (*stateless.Server, error) {
	return newServerWith(cfg, logger, ob, &awsClients{})
}

// newServerWith builds the server with the given (lazily made) AWS
// clients.
func newServerWith(cfg *Config, logger *slog.Logger, ob *observe.Observer, clients *awsClients) (*stateless.Server, error) {
	sealer, err := newSealer(cfg, clients)
	if err != nil {
		return nil, err
	}
	var store claims.Store = claims.NewMemory()
	var notes NoteStore = newMemoryNotes()
	var taskStore stateless.TaskStore = tasks.NewMemory()
	if cfg.ClaimsTable != "" {
		store = &lazyStore{aws: clients, table: cfg.ClaimsTable}
		notes = &dynamoNotes{client: clients.notesAPI, table: cfg.ClaimsTable}
		taskStore = &tasks.DynamoDB{Client: lazyDynamo{clients}, Table: cfg.ClaimsTable, SortKey: tableSortKey}
	} else if cfg.InLambda {
		logger.Warn("no " + envClaimsTable + ": idempotency claims, notes and tasks are kept per instance")
	}
	// Tasks run in this process locally; on Lambda each runs in an
	// asynchronous invocation of the function itself.
	taskOpts := &stateless.TaskOptions{Store: taskStore, TTL: cfg.TaskTTL}
	if cfg.InLambda {
		taskOpts.Dispatch = (&tasks.Lambda{Client: clients.lambdaAPI, Function: cfg.FunctionName}).Dispatch
	}
	guard := claims.New(store, nil)
	opts := &stateless.Options{
		Instructions:    "A note book: add, search, digest and delete notes. Notes belong to the caller.",
		AllowedOrigins:  cfg.AllowedOrigins,
		Sealer:          sealer,
		Idempotency:     guard,
		Redeemer:        guard,
		ToolSchemas:     toolSchemas,
		SchemaEngine:    schemaEngine,
		DeadlineMargin:  cfg.DeadlineMargin,
		StreamKeepAlive: cfg.StreamKeepAlive,
		Tasks:           taskOpts,
	}
	if ob != nil {
		opts.Observe = ob.Observe
	}
	if opts.Auth, err = newAuth(cfg); err != nil {
		return nil, err
	}
	if cfg.AuthIssuer == "" && !cfg.InLambda && !loopbackAddr(cfg.Addr) {
		logger.Warn("no " + envAuthIssuer + ": the endpoint serves anyone who can reach " + cfg.Addr)
	}
	srv := stateless.NewServer(stateless.Implementation{
		Name:    "mcp-lambda-demo",
		Title:   "Note book",
		Version: version,
	}, opts)
	(&demo{notes: notes}).register(srv)
	return srv, nil
}

// loopbackAddr reports whether a listening address is a loopback one.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopback(host)
}

// newSealer picks the request-state sealer: rooted in KMS when a key is
// configured (template.yaml passes one), else a key from the environment,
// else a random per-process key (local runs). Request state is bound to
// the endpoint's URL per request (see Config.Audience), so the sealer
// itself names no audience.
func newSealer(cfg *Config, clients *awsClients) (reqstate.Sealer, error) {
	return cfg.State.Sealer(func() awskms.API { return lazyKMS{clients} }, "", cfg.FunctionName)
}
