// Package notebook is the demo's tool set: a small note book with the
// patterns a fork needs, each in one tool (a read-only search behind a
// scope, a keyed side-effecting add, a delete confirmed by an
// input-required round, a digest that reports progress, an export that
// runs as a task and asks for a title), a resource, a resource template,
// a prompt and completions.
//
// It is also the workload the repository's harnesses drive (chaos, soak,
// interop's authorization tests, the cold-start bench, the sample events
// under notebook/events): they run functions/fixture, which serves this
// package whatever functions/mcp serves. A fork replaces the one call to
// [New] in functions/mcp and keeps this package for those harnesses; it is
// not part of the public API that docs/compatibility.md covers.
package notebook

import (
	_ "embed"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

// toolSchemas are the tools' schemas, generated from their Go types
// (TestToolSchemas keeps them true, `make regen` rewrites them), so that
// no call infers one.
//
//go:embed toolschemas.json
var toolSchemas []byte

// schemaEngine validates what the server's flat validator does not:
// notes_search's result, a list of notes (see stateless.SchemaEngine).
var schemaEngine = toolschema.Engine{}

// Name is the note book's implementation name, in server/discover.
const Name = "mcp-lambda-demo"

// New composes the production endpoint of package endpoint serving the
// note book: its identity (version is the build's), instructions, schemas
// and scopes in o, its tools on the endpoint's server, its notes in the
// claims table beside the claims when cfg names one (else in memory).
func New(cfg *endpoint.Config, o endpoint.Options, version string) (*endpoint.Endpoint, error) {
	o.Implementation = stateless.Implementation{Name: Name, Title: "Note book", Version: version}
	o.Instructions = "A note book: add, search, digest and delete notes. Notes belong to the caller."
	o.ToolSchemas, o.SchemaEngine = toolSchemas, schemaEngine
	o.URITemplates = uritemplate.Engine{} // notes://note/{id}
	o.DefaultScopes, o.ScopeImplies, o.ResourceName = []string{scopesRead[0], scopesWrite[0]}, scopeImplies, "Note book"
	ep, err := endpoint.New(cfg, o)
	if err != nil {
		return nil, err
	}
	(&demo{notes: newTableNotes(ep.Items, 0)}).register(ep.Server)
	return ep, nil
}
