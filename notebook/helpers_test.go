package notebook

import (
	"io"
	"log/slog"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

// newServer is the note book's server for cfg as New composes it,
// logging to logger, observed by ob (nil: not observed).
func newServer(cfg *endpoint.Config, logger *slog.Logger, ob *observe.Observer) (*stateless.Server, error) {
	return newServerWith(cfg, logger, ob, nil)
}

// newServerWith is newServer with the given AWS clients (nil: the
// default ones).
func newServerWith(cfg *endpoint.Config, logger *slog.Logger, ob *observe.Observer, clients *endpoint.Clients) (*stateless.Server, error) {
	ep, err := New(cfg, endpoint.Options{Logger: logger, Observer: ob, Clients: clients, Stdout: io.Discard}, "test")
	if err != nil {
		return nil, err
	}
	return ep.Server, nil
}

// taskServer is a server with opts that serves the tasks extension, its
// tasks in memory and run in this process: the note book's task tools
// need one.
func taskServer(info stateless.Implementation, opts *stateless.Options) *stateless.Server {
	ext := tasks.New(tasks.Options{Store: tasks.NewMemory()})
	if opts.URITemplates == nil {
		o := *opts
		o.URITemplates = uritemplate.Engine{} // the demo's notes://note/{id}
		opts = &o
	}
	srv := stateless.NewServer(info, opts)
	ext.Install(srv)
	return srv
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// localEndpoint is the note book's endpoint as it runs locally with no
// configuration (everything in memory), its log lines and metrics in out.
func localEndpoint(t *testing.T) (*endpoint.Endpoint, *syncbuf.Buffer) {
	t.Helper()
	cfg, err := endpoint.LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	out := &syncbuf.Buffer{}
	ep, err := New(cfg, endpoint.Options{Stdout: out}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return ep, out
}
