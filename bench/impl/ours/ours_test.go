package ours

import (
	"flag"
	"os"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

var update = flag.Bool("update", false, "regenerate toolschemas.json from the tools' Go types")

// TestToolSchemas keeps toolschemas.json true to the tools' Go types and
// checks the server as it is built, without a schema engine:
//
//	go test ./impl/ours -run TestToolSchemas -update
func TestToolSchemas(t *testing.T) {
	if *update {
		b, err := stateless.GenerateToolSchemas(build(false, toolschema.Engine{}), toolschema.Engine{})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("toolschemas.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		toolSchemas = b
	}
	if err := stateless.CheckToolSchemas(NewServer(), toolschema.Engine{}); err != nil {
		t.Fatal(err)
	}
}
