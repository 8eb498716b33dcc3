package main

import (
	"flag"
	"io"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/fntest"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

var update = flag.Bool("update", false, "rewrite the events' expected responses")

// The function's own sample events (events/): the protocol's answers,
// whatever tools newEndpoint registers. They name no tool but through
// tools/list, whose expected answer `make regen` rewrites for a fork's
// tools. The demo's events are the note book's (notebook/events), checked
// against functions/fixture.
const eventsDir = "../../events"

func newServer(cfg *endpoint.Config) (*stateless.Server, error) {
	ep, err := newEndpoint(cfg, endpoint.Options{Logger: fntest.DiscardLogger(), Stdout: io.Discard})
	if err != nil {
		return nil, err
	}
	return ep.Server, nil
}

// TestEventsInProcess feeds every sample event through the Lambda handler
// in-process, each to a fresh server, and compares the response with the
// event's expected response.
func TestEventsInProcess(t *testing.T) {
	fntest.EventsInProcess(t, eventsDir, newServer, *update)
}

// TestEventsThroughEmulator runs every sample event through the real
// bootstrap binary under the Lambda Runtime Interface Emulator, a fresh
// process for each, as `sam local invoke` would.
func TestEventsThroughEmulator(t *testing.T) {
	fntest.EventsThroughEmulator(t, eventsDir, fntest.BuildBootstrap(t, ".", fntest.HostArch), *update)
}
