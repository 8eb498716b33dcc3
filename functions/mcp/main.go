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
	"os"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
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
	cfg, err := endpoint.LoadConfig(getenv)
	if err != nil {
		return err
	}
	ep, err := newEndpoint(cfg, endpoint.Options{Stdout: stdout})
	if err != nil {
		return err
	}
	return ep.Run(ctx)
}

// newEndpoint composes the demo endpoint: the production parts from
// package endpoint, the note book's tools on its server, its notes in the
// claims table beside the claims (or in memory).
func newEndpoint(cfg *endpoint.Config, o endpoint.Options) (*endpoint.Endpoint, error) {
	o.Implementation = stateless.Implementation{Name: "mcp-lambda-demo", Title: "Note book", Version: version}
	o.Instructions = "A note book: add, search, digest and delete notes. Notes belong to the caller."
	o.ToolSchemas, o.SchemaEngine = toolSchemas, schemaEngine
	o.DefaultScopes, o.ScopeImplies, o.ResourceName = []string{scopesRead[0], scopesWrite[0]}, scopeImplies, "Note book"
	ep, err := endpoint.New(cfg, o)
	if err != nil {
		return nil, err
	}
	var notes NoteStore = newMemoryNotes()
	if cfg.ClaimsTable != "" {
		clients := ep.Clients
		notes = &dynamoNotes{client: func(ctx context.Context) (notesAPI, error) { return clients.DynamoDB(ctx) }, table: cfg.ClaimsTable}
	}
	(&demo{notes: notes}).register(ep.Server)
	return ep, nil
}
