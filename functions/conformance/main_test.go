package main

import (
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// TestFixtureSchemas: every fixture tool's schemas resolve (registration
// leaves them to first use; this is where a bad one fails).
func TestFixtureSchemas(t *testing.T) {
	if err := newServer(reqstate.NewLocal(nil, nil), tasks.New(tasks.Options{Store: tasks.NewMemory()}), listening{}).Verify(); err != nil {
		t.Fatal(err)
	}
}
