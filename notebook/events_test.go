package notebook

import (
	"flag"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/fntest"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

var update = flag.Bool("update", false, "rewrite the events' expected responses (TestEvents) or the generated tool schemas (TestToolSchemas)")

// TestEventsInProcess feeds every note book event (events/) through the
// Lambda handler in process, each to a fresh note book, and compares the
// response with the event's expected response.
func TestEventsInProcess(t *testing.T) {
	fntest.EventsInProcess(t, "events", func(cfg *endpoint.Config) (*stateless.Server, error) {
		return newServer(cfg, discardLogger(), nil)
	}, *update)
}

// TestEventsThroughEmulator runs every note book event through
// functions/fixture's bootstrap under the Lambda Runtime Interface
// Emulator, a fresh process for each.
func TestEventsThroughEmulator(t *testing.T) {
	fntest.EventsThroughEmulator(t, "events", fntest.BuildBootstrap(t, "../functions/fixture", fntest.HostArch), *update)
}
