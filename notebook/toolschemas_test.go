package notebook

import (
	"os"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// TestToolSchemas keeps toolschemas.json, the demo tools' schemas the
// function embeds, true to their Go types, and checks every schema as the
// function serves it (main's schema options) and with the full engine.
// After changing a tool's types, regenerate the file:
//
//	go test ./functions/mcp -run TestToolSchemas -update
func TestToolSchemas(t *testing.T) {
	if *update {
		gen := taskServer(stateless.Implementation{Name: "gen", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
		(&demo{}).register(gen)
		b, err := stateless.GenerateToolSchemas(gen, toolschema.Engine{})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("toolschemas.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile("toolschemas.json")
	if err != nil {
		t.Fatal(err)
	}
	// The options main gives the server, as far as schemas go.
	srv := taskServer(stateless.Implementation{Name: "mcp-lambda-demo", Version: "test"}, &stateless.Options{ToolSchemas: file, SchemaEngine: schemaEngine})
	(&demo{}).register(srv)
	if err := stateless.CheckToolSchemas(srv, toolschema.Engine{}); err != nil {
		t.Fatalf("%v\nAfter adding or changing a tool, regenerate the generated files with: make regen", err)
	}
}
