// Command conformance is the fixture server of the official MCP
// conformance suite, built on the same library as the product and run the
// same way: on Lambda behind API Gateway, or locally on MCP_ADDR at /mcp.
// It exposes every tool, resource, template, prompt and completion the
// suite calls (fixtures.go). Its multi-round fixtures use the real sealer:
// KMS when MCP_STATE_KMS_KEY is set, else a key from MCP_STATE_KEY, else a
// random per-process key.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/events"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
	"github.com/serverless-mcp/mcp-lambda/pkg/runner"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

func main() {
	if err := run(context.Background(), os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sealer, err := newSealer(ctx, getenv)
	if err != nil {
		return err
	}
	addr := getenv("MCP_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	to, err := newTasks(ctx, getenv)
	if err != nil {
		return err
	}
	requestTimeout, err := runner.RequestTimeout(getenv)
	if err != nil {
		return err
	}
	streams, err := runner.StreamEvents(getenv)
	if err != nil {
		return err
	}
	l, err := newListening(ctx, getenv)
	if err != nil {
		return err
	}
	ext := tasks.New(to)
	srv := newServer(sealer, ext, l)
	if l.Events != nil {
		// Beside the first requests, as the endpoint does it.
		go func() {
			actx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if err := srv.AnnounceCatalog(actx); err != nil {
				logger.Warn("the catalog was not recorded", "error", err)
			}
		}()
	}
	return runner.Run(ctx, srv, runner.Options{InLambda: runner.InLambda(getenv), Addr: addr, Logger: logger, Stdout: stdout,
		RequestTimeout: requestTimeout, StreamKinds: streams, Events: []runner.EventHandler{ext.HandleEvent}})
}

// newTasks configures the tasks extension: tasks in memory and run in
// this process, unless MCP_TASKS_TABLE names a DynamoDB table (with the
// claims table's shape) to share them between processes; on Lambda each
// task runs in an asynchronous invocation of the function itself.
func newTasks(ctx context.Context, getenv func(string) string) (tasks.Options, error) {
	to := tasks.Options{Store: tasks.NewMemory()}
	table, inLambda := getenv("MCP_TASKS_TABLE"), runner.InLambda(getenv)
	if table == "" && !inLambda {
		return to, nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return to, fmt.Errorf("the tasks need the AWS configuration, which does not load: %w", err)
	}
	if table != "" {
		to.Store = &tasks.DynamoDB{Client: dynamodb.NewFromConfig(cfg), Table: table, SortKey: "sk"}
	}
	if inLambda {
		client := lambda.NewFromConfig(cfg)
		to.Dispatch = (&tasks.Lambda{Client: func(context.Context) (tasks.LambdaAPI, error) { return client, nil }, Function: getenv("AWS_LAMBDA_FUNCTION_NAME")}).Dispatch
	}
	return to, nil
}

// newListening configures the listen streams as the endpoint does
// (endpoint.LoadListen), their events in MCP_TASKS_TABLE when it is set,
// so that a change made on one instance reaches a stream held on another.
func newListening(ctx context.Context, getenv func(string) string) (listening, error) {
	lo, err := endpoint.LoadListen(getenv)
	if err != nil {
		return listening{}, err
	}
	l := listening{Listen: lo}
	if table := getenv("MCP_TASKS_TABLE"); table != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return l, fmt.Errorf("the event log needs the AWS configuration, which does not load: %w", err)
		}
		// Scoped apart from the deployed function's, which shares the table.
		l.Events = &events.DynamoDB{Client: dynamodb.NewFromConfig(cfg), Table: table, SortKey: "sk", Scope: "conformance"}
	}
	return l, nil
}

// newSealer reads the state configuration as the demo does
// (pkg/endpoint); the fixture binds every state to MCP_AUDIENCE when
// set.
func newSealer(ctx context.Context, getenv func(string) string) (reqstate.Sealer, error) {
	st, err := endpoint.LoadState(getenv)
	if err != nil {
		return nil, err
	}
	var client awskms.API
	if st.KMSKey != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s is set but the AWS configuration does not load: %w", endpoint.EnvStateKMSKey, err)
		}
		client = kms.NewFromConfig(cfg)
	}
	return st.Sealer(func() awskms.API { return client }, getenv("MCP_AUDIENCE"), "conformance")
}
