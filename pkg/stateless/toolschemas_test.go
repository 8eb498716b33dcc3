package stateless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

type listItem struct {
	Name  string   `json:"name"`
	Words []string `json:"words"`
}

// schemaServer registers echo and add (flat schemas) and, with list, a
// tool whose output is a list of objects (not flat).
func schemaServer(opts *stateless.Options, list bool) *stateless.Server {
	s := stateless.NewServer(stateless.Implementation{Name: "schemas", Version: "1"}, opts)
	stateless.AddTool(s, &stateless.Tool{Name: "echo", Description: "Echo text."},
		func(_ context.Context, _ *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, echoOut, error) {
			return nil, echoOut(in), nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "add"},
		func(_ context.Context, _ *stateless.ToolRequest, in addIn) (*stateless.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	if list {
		stateless.AddTool(s, &stateless.Tool{Name: "list"},
			func(_ context.Context, _ *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, struct {
				Items []listItem `json:"items"`
			}, error) {
				return nil, struct {
					Items []listItem `json:"items"`
				}{[]listItem{{Name: in.Text, Words: strings.Fields(in.Text)}}}, nil
			})
	}
	return s
}

func generate(t *testing.T, list bool) []byte {
	t.Helper()
	b, err := stateless.GenerateToolSchemas(schemaServer(&stateless.Options{SchemaEngine: toolschema.Engine{}}, list), toolschema.Engine{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGeneratedSchemasServeAsInferred: a server that takes its typed
// tools' schemas from a generated file, with no engine, lists the same
// tools and answers calls — valid and invalid arguments — byte for byte
// as one that infers them with jsonschema-go.
func TestGeneratedSchemasServeAsInferred(t *testing.T) {
	file := generate(t, false)
	if !json.Valid(file) || !bytes.HasSuffix(file, []byte("\n")) || !bytes.Contains(file, []byte("\n  \"add\": {")) {
		t.Fatalf("generated file:\n%s", file)
	}
	generated := schemaServer(&stateless.Options{ToolSchemas: file}, false)
	inferred := schemaServer(&stateless.Options{SchemaEngine: toolschema.Engine{}}, false)
	if err := stateless.CheckToolSchemas(generated, toolschema.Engine{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, name, params string }{
		{"tools/list", "", withMeta("")},
		{"tools/call", "echo", withMeta(`"name":"echo","arguments":{"text":"hi"}`)},
		{"tools/call", "echo", withMeta(`"name":"echo","arguments":{"text":5}`)},
		{"tools/call", "echo", withMeta(`"name":"echo","arguments":{"text":"hi","other":1}`)},
		{"tools/call", "add", withMeta(`"name":"add","arguments":{"a":1,"b":2.5}`)},
		{"tools/call", "add", withMeta(`"name":"add","arguments":{"a":1}`)},
		{"tools/call", "add", withMeta(`"name":"add","arguments":{"a":2,"b":40}`)},
	} {
		body := req("1", c.method, c.params)
		g := wire.Call(t, generated, "POST", wire.ModernHeaders(c.method, c.name), body)
		i := wire.Call(t, inferred, "POST", wire.ModernHeaders(c.method, c.name), body)
		if g.Status != 200 || !bytes.Equal(g.Body, i.Body) {
			t.Errorf("%s: generated %d %s\ninferred %d %s", body, g.Status, g.Body, i.Status, i.Body)
		}
	}
	r := wire.DecodeRPC(t, wire.Call(t, generated, "POST", wire.ModernHeaders("tools/call", "add"), req("1", "tools/call", withMeta(`"name":"add","arguments":{"a":1}`))).Body)
	if r.Result["isError"] != true {
		t.Errorf("a call missing a required argument: %+v", r)
	}
}

// TestCheckToolSchemasFindsStaleFiles: the check a function's test runs
// names each tool whose generated schemas are not what its Go types give
// now, is missing from the file or is in it for no tool.
func TestCheckToolSchemasFindsStaleFiles(t *testing.T) {
	file := generate(t, false)
	stale := bytes.Replace(file, []byte(`"a"`), []byte(`"x"`), 1) // the add tool's input, as if A were renamed
	if bytes.Equal(stale, file) {
		t.Fatal("no property a in the file")
	}
	err := stateless.CheckToolSchemas(schemaServer(&stateless.Options{ToolSchemas: stale}, false), toolschema.Engine{})
	if err == nil || !strings.Contains(err.Error(), `tool "add": Options.ToolSchemas differs from its Go types`) || strings.Contains(err.Error(), `"echo"`) {
		t.Errorf("stale add: %v", err)
	}

	withoutEcho := []byte(`{"add":` + string(mustMember(t, file, "add")) + `}`)
	err = stateless.CheckToolSchemas(schemaServer(&stateless.Options{ToolSchemas: withoutEcho, SchemaEngine: toolschema.Engine{}}, false), toolschema.Engine{})
	if err == nil || !strings.Contains(err.Error(), `tool "echo": not in Options.ToolSchemas`) {
		t.Errorf("missing echo: %v", err)
	}

	extra := bytes.Replace(file, []byte(`"add":`), []byte(`"gone":{},"add":`), 1)
	err = stateless.CheckToolSchemas(schemaServer(&stateless.Options{ToolSchemas: extra}, false), toolschema.Engine{})
	if err == nil || !strings.Contains(err.Error(), `tool "gone": in Options.ToolSchemas but no typed tool`) {
		t.Errorf("extra entry: %v", err)
	}

	// A server that infers at run time has no file to keep true.
	if err := stateless.CheckToolSchemas(schemaServer(&stateless.Options{SchemaEngine: toolschema.Engine{}}, true), toolschema.Engine{}); err != nil {
		t.Errorf("inferring server: %v", err)
	}

	// A schema given by hand that only the full engine finds wrong.
	s := stateless.NewServer(stateless.Implementation{Name: "s", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	s.AddTool(&stateless.Tool{Name: "ref", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`)},
		func(context.Context, *stateless.ToolRequest) (*stateless.CallToolResult, error) { return nil, nil })
	if err := stateless.CheckToolSchemas(s, toolschema.Engine{}); err == nil || !strings.Contains(err.Error(), `tool "ref"`) {
		t.Errorf("unresolvable reference: %v", err)
	}
}

func mustMember(t *testing.T, file []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(file, &m); err != nil || m[name] == nil {
		t.Fatalf("no %q in %s (%v)", name, file, err)
	}
	return m[name]
}

// TestTypedToolsNeedNoOptions: typed tools whose types are flat, as most
// are, are registered with no options at all: their schemas are inferred
// with no engine and they answer. A type that is not flat needs an
// engine, which the registration says, naming the fixes, so that the
// function fails to start rather than a user's first call; with the
// engine, its non-flat output schema is validated. A generated file that
// does not read, and an input or output type that is not an object, are
// refused at registration as well.
func TestTypedToolsNeedNoOptions(t *testing.T) {
	plain := schemaServer(nil, false)
	if err := plain.Verify(); err != nil {
		t.Fatalf("Verify with no options: %v", err)
	}
	body := req("1", "tools/call", withMeta(`"name":"add","arguments":{"a":2,"b":3}`))
	r := wire.DecodeRPC(t, wire.Call(t, plain, "POST", wire.ModernHeaders("tools/call", "add"), body).Body)
	if sc, _ := json.Marshal(r.Result["structuredContent"]); string(sc) != `{"sum":5}` {
		t.Errorf("add with no options: %+v", r)
	}
	func() {
		defer func() {
			p, _ := recover().(string)
			for _, want := range []string{`tool "list": output schema:`, "is not a flat object", "needs Options.SchemaEngine", "Options.ToolSchemas"} {
				if !strings.Contains(p, want) {
					t.Errorf("a non-flat output type with no engine: %q lacks %q", p, want)
				}
			}
		}()
		schemaServer(nil, true)
	}()
	engine := schemaServer(&stateless.Options{SchemaEngine: toolschema.Engine{}}, true)
	if err := engine.Verify(); err != nil {
		t.Fatalf("Verify with the engine: %v", err)
	}
	body = req("1", "tools/call", withMeta(`"name":"list","arguments":{"text":"a b"}`))
	r = wire.DecodeRPC(t, wire.Call(t, engine, "POST", wire.ModernHeaders("tools/call", "list"), body).Body)
	if sc, _ := json.Marshal(r.Result["structuredContent"]); string(sc) != `{"items":[{"name":"a b","words":["a","b"]}]}` {
		t.Errorf("list with the engine: %+v", r)
	}
	// As strict as the decode on first use: a name twice (even one
	// written with an escape), invalid UTF-8 and a value that is not an
	// object fail the start too.
	for _, bad := range []string{`[]`, `{"echo":{}`, `{"echo":{}}]`, `{"echo":`, `null`, `"echo"`,
		`{"echo":{},"echo":{}}`, `{"echo":{},"\u0065cho":{}}`, "{\"echo\":{\"x\":\"\xff\"}}"} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), `tool "echo": Options.ToolSchemas is not a JSON object of tools`) {
					t.Errorf("registration with the file %s: %v", bad, p)
				}
			}()
			schemaServer(&stateless.Options{ToolSchemas: []byte(bad)}, false)
		}()
	}
	for name, register := range map[string]func(*stateless.Server){
		"input": func(s *stateless.Server) {
			stateless.AddTool(s, &stateless.Tool{Name: "bad"}, func(context.Context, *stateless.ToolRequest, string) (*stateless.CallToolResult, any, error) {
				return nil, nil, nil
			})
		},
		"output": func(s *stateless.Server) {
			stateless.AddTool(s, &stateless.Tool{Name: "bad"}, func(context.Context, *stateless.ToolRequest, struct{}) (*stateless.CallToolResult, []string, error) {
				return nil, nil, nil
			})
		},
	} {
		func() {
			defer func() {
				if p, _ := recover().(string); !strings.Contains(p, `tool "bad": its `+name+` type`) || !strings.Contains(p, "is not an object") {
					t.Errorf("a non-object %s type: %q", name, p)
				}
			}()
			register(stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, nil))
		}()
	}
	// Generated schemas stand in for inference; a non-flat one still
	// needs the engine to validate, which the function's test finds.
	withFile := schemaServer(&stateless.Options{ToolSchemas: generate(t, true), SchemaEngine: toolschema.Engine{}}, true)
	if err := stateless.CheckToolSchemas(withFile, toolschema.Engine{}); err != nil {
		t.Fatal(err)
	}
	noEngine := schemaServer(&stateless.Options{ToolSchemas: generate(t, true)}, true)
	if err := stateless.CheckToolSchemas(noEngine, toolschema.Engine{}); err == nil || !strings.Contains(err.Error(), `tool "list"`) || !strings.Contains(err.Error(), "needs Options.SchemaEngine") {
		t.Errorf("a generated non-flat schema with no engine: %v", err)
	}
}

// TestResourceTemplatesNeedAnEngine: the core links no URI template
// library, so a resource template with no Options.URITemplates is
// refused at registration, naming the fix; with the engine it serves.
func TestResourceTemplatesNeedAnEngine(t *testing.T) {
	read := func(context.Context, *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
		return &stateless.ReadResourceResult{}, nil
	}
	func() {
		defer func() {
			p, _ := recover().(string)
			if !strings.Contains(p, `resource template "note://{id}"`) || !strings.Contains(p, "Options.URITemplates") || !strings.Contains(p, "uritemplate.Engine{}") {
				t.Errorf("a template with no engine: %q", p)
			}
		}()
		stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, nil).
			AddResourceTemplate(&stateless.ResourceTemplate{URITemplate: "note://{id}", Name: "note"}, read)
	}()
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{URITemplates: uritemplate.Engine{}})
	s.AddResourceTemplate(&stateless.ResourceTemplate{URITemplate: "note://{id}", Name: "note"}, read)
	func() {
		defer func() {
			if p, _ := recover().(string); !strings.Contains(p, `resource template "note://{id"`) {
				t.Errorf("a malformed template: %q", p)
			}
		}()
		s.AddResourceTemplate(&stateless.ResourceTemplate{URITemplate: "note://{id", Name: "bad"}, read)
	}()
}
