package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

// A 1x1 PNG and a minimal WAV, for the image and audio fixtures.
var (
	png1x1, _  = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	wavTiny, _ = base64.StdEncoding.DecodeString("UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=")
)

// listening is how the fixture's listen streams hear of changes: the
// event log its instances share (nil: this process only) and their
// bounds.
type listening struct {
	Events stateless.EventLog
	Listen stateless.ListenOptions
}

// newServer registers every fixture the conformance suite calls, on a
// server that serves the tasks extension ext.
func newServer(sealer reqstate.Sealer, ext *tasks.Extension, l listening) *stateless.Server {
	guard := claims.New(claims.NewMemory(), nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "mcp-lambda-conformance", Version: "1.0.0"},
		&stateless.Options{Sealer: sealer, Interceptors: []stateless.Interceptor{guard.Interceptor()},
			Instructions: "Fixture server for the MCP conformance suite.",
			SchemaEngine: toolschema.Engine{}, // the suite's schemas go beyond flat ones
			URITemplates: uritemplate.Engine{},
			Events:       l.Events, Listen: l.Listen})
	ext.Install(srv)
	tools(srv)
	triggers(srv)
	taskFixtures(srv)
	tickFixtures(srv)
	keyed(srv)
	inputRequired(srv)
	resources(srv)
	prompts(srv)
	return srv
}

// triggers are the suite's hooks that change the tool and prompt lists.
// The fixture's lists are fixed when it starts, as a deployed function's
// are (a deploy changes them, and stateless.Server.AnnounceCatalog tells
// the listeners): a hook announces a change, which reaches the listen
// streams of every instance, as a tool that changes what it serves would.
func triggers(srv *stateless.Server) {
	tool(srv, "test_trigger_tool_change", "Announces a change of the tool list to listen streams.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		req.NotifyToolsListChanged()
		return text("The tool list changed."), nil
	})
	tool(srv, "test_trigger_prompt_change", "Announces a change of the prompt list to listen streams.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		req.NotifyPromptsListChanged()
		return text("The prompt list changed."), nil
	})
}

func text(s string) *stateless.CallToolResult {
	return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(s)}}
}

// noArgs is the input of fixtures that take none.
type noArgs struct{}

func tool(srv *stateless.Server, name, description string, h func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error), task ...stateless.TaskSupport) {
	t := &stateless.Tool{Name: name, Description: description}
	if len(task) > 0 {
		t.TaskSupport = task[0]
	}
	stateless.AddTool(srv, t,
		func(ctx context.Context, req *stateless.ToolRequest, _ noArgs) (*stateless.CallToolResult, any, error) {
			res, err := h(ctx, req)
			return res, nil, err
		})
}

func tools(srv *stateless.Server) {
	tool(srv, "test_simple_text", "Returns simple text content.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return text("This is a simple text response for testing."), nil
	})
	tool(srv, "test_image_content", "Returns image content.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return &stateless.CallToolResult{Content: []stateless.Content{stateless.Image(png1x1, "image/png")}}, nil
	})
	tool(srv, "test_audio_content", "Returns audio content.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return &stateless.CallToolResult{Content: []stateless.Content{stateless.Audio(wavTiny, "audio/wav")}}, nil
	})
	tool(srv, "test_embedded_resource", "Returns an embedded resource.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return &stateless.CallToolResult{Content: []stateless.Content{stateless.Embedded(stateless.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."})}}, nil
	})
	tool(srv, "test_multiple_content_types", "Returns text, image and resource content.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return &stateless.CallToolResult{Content: []stateless.Content{
			stateless.Text("Multiple content types test:"),
			stateless.Image(png1x1, "image/png"),
			stateless.Embedded(stateless.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}),
		}}, nil
	})
	tool(srv, "test_error_handling", "Always fails, as a tool error.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("This tool intentionally returns an error for testing")}, IsError: true}, nil
	})
	tool(srv, "test_tool_with_progress", "Reports progress three times.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		for _, p := range []float64{0, 50, 100} {
			req.Progress(p, 100, fmt.Sprintf("Completed step %v of 100", p))
		}
		return text("Progress test completed"), nil
	})
	tool(srv, "test_tool_with_logging", "Logs three messages.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		for _, m := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			req.Log(stateless.LevelInfo, "conformance", m)
		}
		return text("Logging test completed"), nil
	})
	tool(srv, "test_logging_tool", "Logs only when the request asks for a level.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		req.Log(stateless.LevelInfo, "conformance", "a log message")
		return text("Logging tool completed"), nil
	})
	tool(srv, "test_missing_capability", "Needs the sampling capability.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if req.Capabilities().Sampling == nil {
			return nil, mcperr.NewMissingCapability(map[string]any{"sampling": map[string]any{}})
		}
		return text("The client declared sampling."), nil
	})
	tool(srv, "test_streaming_elicitation", "Asks for input through the result, never on the stream.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if r, ok := req.ElicitResult("user_name"); ok {
			return text("Hello, " + fmt.Sprint(r.Content["name"])), nil
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"user_name": nameForm()}}
	})
	type promptIn struct {
		Prompt string `json:"prompt"`
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "test_sampling", Description: "Samples the client's model."},
		func(ctx context.Context, req *stateless.ToolRequest, in promptIn) (*stateless.CallToolResult, any, error) {
			if raw, ok := req.InputResponse("sample"); ok {
				return text("LLM response: " + sampledText(raw)), nil, nil
			}
			return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"sample": sample(in.Prompt)}}
		})
	type messageIn struct {
		Message string `json:"message"`
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "test_elicitation", Description: "Elicits user information."},
		func(ctx context.Context, req *stateless.ToolRequest, in messageIn) (*stateless.CallToolResult, any, error) {
			if r, ok := req.ElicitResult("info"); ok {
				b, _ := json.Marshal(r.Content)
				return text("User response: action=" + r.Action + ", content=" + string(b)), nil, nil
			}
			return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"info": stateless.ElicitForm(in.Message, map[string]any{
				"type": "object",
				"properties": map[string]any{
					"username": map[string]any{"type": "string", "description": "User's response"},
					"email":    map[string]any{"type": "string", "description": "User's email address"},
				},
				"required": []string{"username", "email"},
			})}}
		})
	srv.AddTool(&stateless.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`)},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			return text("Schema accepted the arguments."), nil
		})
	srv.AddTool(&stateless.Tool{Name: "test_header_param", Description: "Mirrors its region argument into the Mcp-Param-Region header.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`)},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			var in struct {
				Region string `json:"region"`
			}
			json.Unmarshal(req.Arguments, &in)
			return text("Region: " + in.Region), nil
		})
}

// keyed registers a side-effecting tool whose calls with an idempotency
// key run once, for the clients' idempotency checks (not a suite fixture).
func keyed(srv *stateless.Server) {
	var mu sync.Mutex
	runs := 0
	type in struct {
		Amount int `json:"amount"`
		WaitMs int `json:"waitMs,omitempty"`
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "keyed_transfer", Description: "Moves an amount; runs once per idempotency key."},
		func(ctx context.Context, req *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]int, error) {
			mu.Lock()
			runs++
			run := runs
			mu.Unlock()
			time.Sleep(time.Duration(min(a.WaitMs, 2000)) * time.Millisecond)
			return nil, map[string]int{"moved": a.Amount, "run": run}, nil
		})
}

func nameForm() stateless.InputRequest {
	return stateless.ElicitForm("What is your name?", map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"},
	})
}

func sample(prompt string) stateless.InputRequest {
	if prompt == "" {
		prompt = "What is the capital of France?"
	}
	return stateless.CreateMessage(map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": prompt}}},
		"maxTokens": 100,
	})
}

func sampledText(raw json.RawMessage) string {
	var r stateless.CreateMessageResult
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	var block struct {
		Text string `json:"text"`
	}
	json.Unmarshal(r.Content, &block)
	return block.Text
}

// inputRequired registers the multi-round-trip fixtures (SEP-2322).
func inputRequired(srv *stateless.Server) {
	roots := stateless.ListRoots()
	tool(srv, "test_input_required_result_elicitation", "Asks for the user's name.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if r, ok := req.ElicitResult("user_name"); ok {
			return text(fmt.Sprintf("Hello, %v!", r.Content["name"])), nil
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"user_name": nameForm()}}
	})
	tool(srv, "test_input_required_result_sampling", "Asks the client's model a question.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if raw, ok := req.InputResponse("capital_question"); ok {
			return text("The model said: " + sampledText(raw)), nil
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"capital_question": sample("")}}
	})
	tool(srv, "test_input_required_result_list_roots", "Asks for the client's roots.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if raw, ok := req.InputResponse("client_roots"); ok {
			var r stateless.ListRootsResult
			json.Unmarshal(raw, &r)
			return text(fmt.Sprintf("The client has %d roots.", len(r.Roots))), nil
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"client_roots": roots}}
	})
	tool(srv, "test_input_required_result_request_state", "Keeps state between rounds.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if st, ok := req.State(); ok && string(st) == "round-1" {
			if _, answered := req.InputResponse("confirm"); answered {
				return text("state-ok"), nil
			}
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"confirm": confirmForm()}, State: []byte("round-1")}
	})
	tool(srv, "test_input_required_result_tampered_state", "Rejects altered state.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if _, ok := req.State(); ok {
			return text("state-ok"), nil
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"confirm": confirmForm()}, State: []byte("round-1")}
	})
	tool(srv, "test_input_required_result_multiple_inputs", "Asks three things at once.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		_, a := req.InputResponse("user_name")
		_, b := req.InputResponse("capital_question")
		_, c := req.InputResponse("client_roots")
		if _, ok := req.State(); ok && a && b && c {
			return text("All three inputs received."), nil
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{
			"user_name": nameForm(), "capital_question": sample(""), "client_roots": roots,
		}, State: []byte("multiple")}
	})
	tool(srv, "test_input_required_result_multi_round", "Asks twice, remembering the first answer.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		st, _ := req.State()
		switch {
		case strings.HasPrefix(string(st), "step2:"):
			if r, ok := req.ElicitResult("step2"); ok {
				return text(fmt.Sprintf("%s likes %v.", strings.TrimPrefix(string(st), "step2:"), r.Content["color"])), nil
			}
			return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"step2": colorForm()}, State: st}
		case string(st) == "step1":
			if r, ok := req.ElicitResult("step1"); ok {
				// Later rounds carry only their own answers: keep this one.
				return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"step2": colorForm()},
					State: []byte(fmt.Sprint("step2:", r.Content["name"]))}
			}
		}
		return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"step1": nameForm()}, State: []byte("step1")}
	})
	tool(srv, "test_input_required_result_capabilities", "Asks only for what the client declared.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		for _, k := range []string{"user_name", "capital_question", "client_roots"} {
			if _, ok := req.InputResponse(k); ok {
				return text("Input received."), nil
			}
		}
		caps := req.Capabilities()
		switch {
		case caps.Elicitation != nil:
			return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"user_name": nameForm()}}
		case caps.Sampling != nil:
			return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"capital_question": sample("")}}
		case caps.Roots != nil:
			return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"client_roots": roots}}
		}
		return nil, mcperr.NewMissingCapability(map[string]any{"elicitation": map[string]any{}})
	})
	srv.AddPrompt(&stateless.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks for context first."},
		func(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
			if r, ok := req.ElicitResult("user_context"); ok {
				return &stateless.GetPromptResult{Messages: []stateless.PromptMessage{{Role: "user",
					Content: stateless.Text(fmt.Sprintf("Context: %v", r.Content["context"]))}}}, nil
			}
			return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"user_context": stateless.ElicitForm("What context should the prompt use?",
				map[string]any{"type": "object", "properties": map[string]any{"context": map[string]any{"type": "string"}}, "required": []string{"context"}})}}
		})
}

func confirmForm() stateless.InputRequest {
	return stateless.ElicitForm("Confirm?", map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}})
}

func colorForm() stateless.InputRequest {
	return stateless.ElicitForm("What is your favourite color?", map[string]any{
		"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}, "required": []string{"color"},
	})
}

func resources(srv *stateless.Server) {
	read := func(rc stateless.ResourceContents) stateless.ResourceHandler {
		return func(ctx context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
			return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{rc}}, nil
		}
	}
	srv.AddResource(&stateless.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource.", MIMEType: "text/plain"},
		read(stateless.ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource."}))
	srv.AddResource(&stateless.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource.", MIMEType: "image/png"},
		read(stateless.ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: png1x1}))
	srv.AddResource(&stateless.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource a client may watch.", MIMEType: "text/plain"},
		read(stateless.ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content."}))
	srv.AddResourceTemplate(&stateless.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Description: "Data by id.", MIMEType: "application/json"},
		func(ctx context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
			id := req.Vars["id"]
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{{URI: req.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}

func prompts(srv *stateless.Server) {
	srv.AddPrompt(&stateless.Prompt{Name: "test_simple_prompt", Description: "A simple prompt."},
		func(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
			return &stateless.GetPromptResult{Messages: []stateless.PromptMessage{{Role: "user", Content: stateless.Text("This is a simple prompt for testing.")}}}, nil
		})
	srv.AddPrompt(&stateless.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with arguments.",
		Arguments: []stateless.PromptArgument{{Name: "arg1", Description: "First argument", Required: true}, {Name: "arg2", Description: "Second argument", Required: true}}},
		func(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
			return &stateless.GetPromptResult{Messages: []stateless.PromptMessage{{Role: "user",
				Content: stateless.Text(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Arguments["arg1"], req.Arguments["arg2"]))}}}, nil
		})
	srv.AddPrompt(&stateless.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt with an embedded resource.",
		Arguments: []stateless.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
			return &stateless.GetPromptResult{Messages: []stateless.PromptMessage{
				{Role: "user", Content: stateless.Embedded(stateless.ResourceContents{URI: req.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."})},
				{Role: "user", Content: stateless.Text("Please process the embedded resource above.")},
			}}, nil
		})
	srv.AddPrompt(&stateless.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."},
		func(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
			return &stateless.GetPromptResult{Messages: []stateless.PromptMessage{
				{Role: "user", Content: stateless.Image(png1x1, "image/png")},
				{Role: "user", Content: stateless.Text("Please analyze the image above.")},
			}}, nil
		})
	srv.SetCompletionHandler(func(ctx context.Context, req *stateless.CompleteRequest) (*stateless.CompleteResult, error) {
		var values []string
		if req.RefType == "ref/prompt" && req.RefName == "test_prompt_with_arguments" {
			for _, v := range []string{"paris", "park", "party", "test", "testing"} {
				if strings.HasPrefix(v, req.Value) {
					values = append(values, v)
				}
			}
		}
		return &stateless.CompleteResult{Completion: stateless.Completion{Values: values, Total: len(values)}}, nil
	})
}
