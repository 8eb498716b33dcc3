// Package interop checks the stateless server against real MCP clients:
// the official Go SDK (github.com/modelcontextprotocol/go-sdk) and mcp-go
// (github.com/mark3labs/mcp-go), each at revision 2026-07-28 and pinned to
// the legacy revisions the server also serves.
//
// It is a separate module so that the main module's go.mod stays free of
// the client libraries. [NewFixtureServer] builds the server every test
// talks to; it is exported so that the same clients can be run against
// other transports (for example a Lambda emulator) with the same
// expectations.
package interop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

// Identity and instructions of the fixture server.
const (
	FixtureName         = "interop-fixture"
	FixtureVersion      = "1.0.0"
	FixtureInstructions = "Interop fixture: echo, add and confirm tools, memo resources, a greet prompt."
)

// Names of the fixture's tools, resources and prompt.
const (
	ToolEcho    = "echo"
	ToolAdd     = "add"
	ToolConfirm = "confirm"

	ReadmeURI      = "memo://readme"
	ReadmeMIMEType = "text/plain"
	ReadmeText     = "Read me first: this server is an interop fixture."

	NoteTemplate = "memo://notes/{id}"

	PromptGreet    = "greet"
	PromptGreetArg = "name"

	// ConfirmKey is the key of the confirm tool's elicitation request.
	ConfirmKey = "confirm"
	// ConfirmField is the property of the confirm form the user fills.
	ConfirmField = "name"
)

// confirmState is what the confirm tool seals between its two rounds.
const confirmState = "confirm/round-1"

// CompletionNames are the values completion/complete offers for the greet
// prompt's name argument, filtered by prefix.
var CompletionNames = []string{"Ada", "Alan", "Barbara", "Grace"}

// EchoIn is the input of the echo tool.
type EchoIn struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

// EchoOut is the structured output of the echo tool.
type EchoOut struct {
	Text string `json:"text" jsonschema:"the text that was sent"`
}

// AddIn is the input of the add tool.
type AddIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

// AddOut is the structured output of the add tool.
type AddOut struct {
	Sum int `json:"sum" jsonschema:"a + b"`
}

// ConfirmIn is the input of the confirm tool.
type ConfirmIn struct {
	Action string `json:"action" jsonschema:"what the user is asked to confirm"`
}

// ConfirmMessage is the elicitation message the confirm tool sends for
// action.
func ConfirmMessage(action string) string { return "Confirm " + action + "? Enter your name." }

// ConfirmAccepted is the confirm tool's final text when the user accepted
// action giving name.
func ConfirmAccepted(action, name string) string {
	return fmt.Sprintf("accepted: %s confirmed by %s", action, name)
}

// ConfirmRefused is the confirm tool's final text when the user answered
// action with the elicitation action decline or cancel.
func ConfirmRefused(action, how string) string { return fmt.Sprintf("%s: %s", how, action) }

// NoteText is the text of the note with id.
func NoteText(id string) string { return "Note " + id + ": remember the milk." }

// GreetText is the text of the greet prompt's message for name.
func GreetText(name string) string { return "Please greet " + name + " warmly." }

// confirmSchema is the requestedSchema of the confirm form.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		ConfirmField: map[string]any{"type": "string", "description": "Your name"},
	},
	"required": []string{ConfirmField},
}

// NewFixtureServer returns the server the interop tests talk to:
//
//   - tool echo (read-only): {text} -> structured {text};
//   - tool add: {a, b} -> structured {sum};
//   - tool confirm: {action}; asks the user, through a form elicitation
//     under key [ConfirmKey], to confirm the action, and on the retry
//     answers [ConfirmAccepted] or [ConfirmRefused];
//   - resource [ReadmeURI] (text/plain [ReadmeText]);
//   - resource template [NoteTemplate] ([NoteText] of the id);
//   - prompt greet with a required argument name ([GreetText]);
//   - completion of the greet prompt's name from [CompletionNames], and of
//     the note template's id.
func NewFixtureServer() *stateless.Server { return NewFixtureServerWith(nil) }

// NewFixtureServerWith is NewFixtureServer with options, for example a
// sealer shared by several instances; the fixture's instructions are
// always set.
func NewFixtureServerWith(opts *stateless.Options) *stateless.Server {
	o := stateless.Options{}
	if opts != nil {
		o = *opts
	}
	o.Instructions = FixtureInstructions
	if o.URITemplates == nil {
		o.URITemplates = uritemplate.Engine{} // its resource templates
	}
	if o.SchemaEngine == nil {
		o.SchemaEngine = toolschema.Engine{} // its tools infer their schemas at run time
	}
	srv := stateless.NewServer(stateless.Implementation{Name: FixtureName, Version: FixtureVersion}, &o)

	stateless.AddTool(srv, &stateless.Tool{
		Name:        ToolEcho,
		Title:       "Echo",
		Description: "Echoes its text back.",
		Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *stateless.ToolRequest, in EchoIn) (*stateless.CallToolResult, EchoOut, error) {
		// No result: the server serializes the structured output into
		// the text block itself.
		return nil, EchoOut(in), nil
	})

	stateless.AddTool(srv, &stateless.Tool{
		Name:        ToolAdd,
		Description: "Adds two integers.",
	}, func(_ context.Context, _ *stateless.ToolRequest, in AddIn) (*stateless.CallToolResult, AddOut, error) {
		return nil, AddOut{Sum: in.A + in.B}, nil
	})

	stateless.AddTool(srv, &stateless.Tool{
		Name:        ToolConfirm,
		Description: "Asks the user to confirm an action.",
	}, confirm)

	srv.AddResource(&stateless.Resource{
		URI:      ReadmeURI,
		Name:     "readme",
		Title:    "Read me",
		MIMEType: ReadmeMIMEType,
	}, func(_ context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
		return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{
			{URI: req.URI, MIMEType: ReadmeMIMEType, Text: ReadmeText},
		}}, nil
	})

	srv.AddResourceTemplate(&stateless.ResourceTemplate{
		URITemplate: NoteTemplate,
		Name:        "note",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
		return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{
			{URI: req.URI, MIMEType: "text/plain", Text: NoteText(req.Vars["id"])},
		}}, nil
	})

	srv.AddPrompt(&stateless.Prompt{
		Name:        PromptGreet,
		Description: "Greets someone.",
		Arguments: []stateless.PromptArgument{
			{Name: PromptGreetArg, Description: "who to greet", Required: true},
		},
	}, func(_ context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
		return &stateless.GetPromptResult{
			Description: "A greeting",
			Messages: []stateless.PromptMessage{
				{Role: "user", Content: stateless.Text(GreetText(req.Arguments[PromptGreetArg]))},
			},
		}, nil
	})

	srv.SetCompletionHandler(func(_ context.Context, req *stateless.CompleteRequest) (*stateless.CompleteResult, error) {
		var pool []string
		switch {
		case req.RefType == "ref/prompt" && req.RefName == PromptGreet && req.Argument == PromptGreetArg:
			pool = CompletionNames
		case req.RefType == "ref/resource" && req.RefName == NoteTemplate && req.Argument == "id":
			pool = []string{"1", "2", "42"}
		}
		var out []string
		for _, v := range pool {
			if strings.HasPrefix(strings.ToLower(v), strings.ToLower(req.Value)) {
				out = append(out, v)
			}
		}
		return &stateless.CompleteResult{Completion: stateless.Completion{Values: out, Total: len(out)}}, nil
	})
	return srv
}

// confirm is the confirm tool: a two-round multi-round-trip request. The
// first round asks for a form; the retry reads the answer and the state.
func confirm(_ context.Context, req *stateless.ToolRequest, in ConfirmIn) (*stateless.CallToolResult, any, error) {
	ask := &stateless.InputRequired{
		Requests: map[string]stateless.InputRequest{
			ConfirmKey: stateless.ElicitForm(ConfirmMessage(in.Action), confirmSchema),
		},
		State: []byte(confirmState),
	}
	st, ok := req.State()
	if !ok {
		return nil, nil, ask
	}
	if string(st) != confirmState {
		return nil, nil, fmt.Errorf("confirm: unexpected state %q", st)
	}
	res, ok := req.ElicitResult(ConfirmKey)
	if !ok {
		// The retry carries no answer: ask again, as the spec advises.
		return nil, nil, ask
	}
	if !res.Accepted() {
		return text(ConfirmRefused(in.Action, res.Action)), nil, nil
	}
	name, _ := res.Content[ConfirmField].(string)
	if name == "" {
		return nil, nil, ask
	}
	return text(ConfirmAccepted(in.Action, name)), nil, nil
}

func text(s string) *stateless.CallToolResult {
	return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(s)}}
}

// ToolNames lists the fixture's tool names in the order tools/list
// returns them.
func ToolNames() []string {
	names := []string{ToolEcho, ToolAdd, ToolConfirm}
	slices.Sort(names)
	return names
}

// NewKeyedServer is a server whose side-effecting tool "transfer" is made
// exactly-once by in-memory idempotency claims; its result carries a
// sequence number, so a replay shows it did not run again.
func NewKeyedServer() *stateless.Server {
	srv := stateless.NewServer(stateless.Implementation{Name: "keyed", Version: "1"},
		&stateless.Options{Interceptors: []stateless.Interceptor{claims.New(claims.NewMemory(), nil).Interceptor()}, SchemaEngine: toolschema.Engine{}})
	var mu sync.Mutex
	runs := 0
	type in struct {
		Amount int `json:"amount"`
		Wait   int `json:"waitMs,omitempty"`
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "transfer", Description: "Moves an amount; runs once per idempotency key."},
		func(ctx context.Context, req *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]int, error) {
			mu.Lock()
			runs++
			run := runs
			mu.Unlock()
			time.Sleep(time.Duration(a.Wait) * time.Millisecond)
			return nil, map[string]int{"moved": a.Amount, "run": run}, nil
		})
	return srv
}
