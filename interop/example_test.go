package interop

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

type searchIn struct {
	Query string `json:"query"`
}

type searchOut struct {
	Notes []string `json:"notes"`
}

// The README's client, line for line but for the endpoint's address,
// against a server with a notes_search like the demo's on a loopback
// port.
func Example_client() {
	srv := stateless.NewServer(stateless.Implementation{Name: "notes", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	stateless.AddTool(srv, &stateless.Tool{Name: "notes_search", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, in searchIn) (*stateless.CallToolResult, searchOut, error) {
			return nil, searchOut{Notes: []string{"Buy " + in.Query}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()
	endpoint := "http://" + ln.Addr().String() + "/mcp"
	ctx := context.Background()

	client := mcp.NewClient(&mcp.Implementation{Name: "me", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "notes_search", Arguments: map[string]any{"query": "milk"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StructuredContent)
	// Output:
	// map[notes:[Buy milk]]
}
