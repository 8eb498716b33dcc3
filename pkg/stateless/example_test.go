package stateless_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

type EchoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type EchoOut struct {
	Text string `json:"text"`
}

// The package documentation's server, called as a 2026-07-28 client
// calls it: one POST, the protocol version and capabilities in _meta.
func Example() {
	srv := stateless.NewServer(stateless.Implementation{Name: "notes", Version: "1.0.0"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	stateless.AddTool(srv, &stateless.Tool{Name: "echo", Description: "Echo text."},
		func(ctx context.Context, req *stateless.ToolRequest, in EchoIn) (*stateless.CallToolResult, EchoOut, error) {
			//lint:ignore S1016 the package documentation's snippet, as written there
			return nil, EchoOut{Text: in.Text}, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},
	  "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "echo")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.String())
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"text\":\"hi\"}"}],"structuredContent":{"text":"hi"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"notes","version":"1.0.0"}}}}
}

type weatherIn struct {
	City string `json:"city" jsonschema:"the city"`
}
type weatherOut struct {
	TempC float64 `json:"tempC"`
}

type demo struct{}

func (d *demo) weather(ctx context.Context, req *stateless.ToolRequest, in weatherIn) (*stateless.CallToolResult, weatherOut, error) {
	return nil, weatherOut{TempC: 21.5}, nil
}

// The README's tool: input and output schemas come from the Go types,
// here inferred at run time by the engine, and arguments are validated
// before the handler runs.
func ExampleAddTool() {
	srv := stateless.NewServer(stateless.Implementation{Name: "demo", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	d := &demo{}
	// in register:
	stateless.AddTool(srv, &stateless.Tool{Name: "weather", Description: "Current temperature."}, d.weather)

	call := func(args string) string {
		h := http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"weather"}}
		resp := srv.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":` + args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)})
		return string(resp.Body)
	}
	fmt.Println(strings.Contains(call(`{"city":"Lyon"}`), `"structuredContent":{"tempC":21.5}`))
	fmt.Println(strings.Contains(call(`{"city":7}`), `"isError":true`))
	// Output:
	// true
	// true
}

// Schemas generated ahead of time: a function's test writes them (and
// keeps them true with CheckToolSchemas), the function embeds them, and a
// server with flat schemas then needs no engine at run time.
func ExampleGenerateToolSchemas() {
	register := func(srv *stateless.Server) {
		stateless.AddTool(srv, &stateless.Tool{Name: "weather", Description: "Current temperature."}, (&demo{}).weather)
	}
	// In the function's test (go test -run TestToolSchemas -update):
	gen := stateless.NewServer(stateless.Implementation{Name: "demo", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	register(gen)
	file, err := stateless.GenerateToolSchemas(gen, toolschema.Engine{})
	if err != nil {
		panic(err)
	}
	fmt.Print(string(file))

	// In the function, with the file embedded (go:embed):
	srv := stateless.NewServer(stateless.Implementation{Name: "demo", Version: "1"}, &stateless.Options{ToolSchemas: file})
	register(srv)
	fmt.Println(stateless.CheckToolSchemas(srv, toolschema.Engine{}))
	// Output:
	// {
	//   "weather": {
	//     "inputSchema": {
	//       "type": "object",
	//       "properties": {
	//         "city": {
	//           "type": "string",
	//           "description": "the city"
	//         }
	//       },
	//       "required": [
	//         "city"
	//       ],
	//       "additionalProperties": false
	//     },
	//     "outputSchema": {
	//       "type": "object",
	//       "properties": {
	//         "tempC": {
	//           "type": "number"
	//         }
	//       },
	//       "required": [
	//         "tempC"
	//       ],
	//       "additionalProperties": false
	//     }
	//   }
	// }
	// <nil>
}
