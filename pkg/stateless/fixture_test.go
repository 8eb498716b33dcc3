package stateless_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}
type echoOut struct {
	Text string `json:"text"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}
type addOut struct {
	Sum int `json:"sum"`
}

// fixture is a server with one of everything, and counters that prove
// whether a handler ran.
type fixture struct {
	srv        *stateless.Server
	confirmRan atomic.Int32
	echoRan    atomic.Int32
	addRan     atomic.Int32
}

func newFixture(t testing.TB, opts *stateless.Options) *fixture {
	t.Helper()
	f := &fixture{}
	o := stateless.Options{}
	if opts != nil {
		o = *opts
	}
	if o.URITemplates == nil {
		o.URITemplates = uritemplate.Engine{}
	}
	if o.SchemaEngine == nil {
		o.SchemaEngine = toolschema.Engine{}
	}
	f.srv = stateless.NewServer(stateless.Implementation{Name: "fixture", Version: "1.0.0"}, &o)
	s := f.srv
	stateless.AddTool(s, &stateless.Tool{Name: "echo", Description: "Echo text.",
		Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, echoOut, error) {
			f.echoRan.Add(1)
			return nil, echoOut(in), nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "add", Description: "Add two integers."},
		func(ctx context.Context, req *stateless.ToolRequest, in addIn) (*stateless.CallToolResult, addOut, error) {
			f.addRan.Add(1)
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "confirm", Description: "Asks the user to confirm."},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			f.confirmRan.Add(1)
			if st, ok := req.State(); ok {
				r, ok := req.ElicitResult("ok")
				if !ok {
					return nil, nil, &stateless.InputRequired{Requests: confirmRequest(), State: st}
				}
				return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(fmt.Sprintf("%s:%s:%s", st, r.Action, in.Text))}}, nil, nil
			}
			return nil, nil, &stateless.InputRequired{Requests: confirmRequest(), State: []byte("round1")}
		})
	s.AddTool(&stateless.Tool{Name: "region", Description: "Uses a header-mirrored argument.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},"dry":{"type":"boolean","x-mcp-header":"Dry"}},"required":["region"]}`)},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("ok")}}, nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "secret", Description: "Hidden from everyone but admin.",
		Visible: func(ctx context.Context, p string) bool { return p == "admin" }},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("classified")}}, nil, nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "fail", Description: "Fails as the arguments say."},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			switch in.Text {
			case "tool":
				return nil, nil, mcperr.NewNotFound("no such note")
			case "plain":
				return nil, nil, errors.New("disk full")
			case "refuse":
				return nil, nil, mcperr.New(mcperr.KindRateLimited)
			case "panic":
				panic("boom")
			case "sampling":
				return nil, nil, mcperr.NewMissingCapability(map[string]any{"sampling": map[string]any{}})
			}
			return nil, nil, nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "badout", Description: "Breaks its output schema.",
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			return &stateless.CallToolResult{StructuredContent: map[string]any{"n": "not a number"}}, nil, nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "progress", Description: "Reports progress and logs."},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			for i := 1; i <= 3; i++ {
				req.Progress(float64(i), 3, "step")
			}
			req.Log(stateless.LevelDebug, "fixture", "debug detail")
			req.Log(stateless.LevelWarning, "fixture", "warning detail")
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("done")}}, nil, nil
		})
	s.AddResource(&stateless.Resource{URI: "memo://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
			return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{{URI: req.URI, MIMEType: "text/plain", Text: "hello"}}}, nil
		})
	s.AddResourceTemplate(&stateless.ResourceTemplate{URITemplate: "memo://notes/{id}", Name: "note"},
		func(ctx context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
			if req.Vars["id"] == "missing" {
				return nil, mcperr.NewUnknownResource(req.URI)
			}
			return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{{URI: req.URI, Text: "note " + req.Vars["id"]}}}, nil
		})
	s.AddPrompt(&stateless.Prompt{Name: "greet", Description: "Greets.", Arguments: []stateless.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
			return &stateless.GetPromptResult{Messages: []stateless.PromptMessage{{Role: "user", Content: stateless.Text("Hello, " + req.Arguments["name"])}}}, nil
		})
	s.SetCompletionHandler(func(ctx context.Context, req *stateless.CompleteRequest) (*stateless.CompleteResult, error) {
		var vals []string
		for _, v := range []string{"alice", "albert", "bob"} {
			if strings.HasPrefix(v, req.Value) {
				vals = append(vals, v)
			}
		}
		return &stateless.CompleteResult{Completion: stateless.Completion{Values: vals}}, nil
	})
	return f
}

func confirmRequest() map[string]stateless.InputRequest {
	return map[string]stateless.InputRequest{"ok": stateless.ElicitForm("Proceed?", map[string]any{
		"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
	})}
}

// text is a result of one text block.
func text(s string) *stateless.CallToolResult {
	return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(s)}}
}
