package stateless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
)

// A SchemaEngine infers JSON Schemas from Go types and compiles the
// schemas the server's own validator does not take. The server infers
// and validates the flat schemas most tools have by itself — an object
// of string, number, integer and boolean properties, optionally
// nullable, with required members, a string enum, and no other
// properties or only such scalars — on the JSON bytes. Anything else
// needs an engine: package toolschema has one built on
// google/jsonschema-go.
//
// [Options.SchemaEngine] sets it; there is none by default, so that a
// function whose schemas are flat links no schema library and pays no
// schema library's package initialization at its cold start
// (docs/performance.md measures that link alone: bare-jsonschema).
// Schemas generated ahead of time into [Options.ToolSchemas] spare the
// inference at run time; flat ones need no engine at all.
type SchemaEngine interface {
	// Infer returns the JSON Schema of the JSON encoding of values of
	// type t.
	Infer(t reflect.Type) (json.RawMessage, error)
	// Compile checks schema, resolving its references without fetching
	// any, and returns a function that reports whether a JSON value is
	// valid against it.
	Compile(schema json.RawMessage) (validate func(value []byte) error, err error)
}

// paramHeader is one input property mirrored into an Mcp-Param-* header.
type paramHeader struct {
	header   string // canonical header name, e.g. "Mcp-Param-Region"
	property string
	kind     string // "string", "integer" or "boolean"
}

// schemaValidator validates JSON bytes against a tool schema: on the flat
// path when the schema allows it, else by the engine's validator.
type schemaValidator struct {
	flat *flatSchema
	full func([]byte) error
}

// validate checks data, which must be a valid JSON object.
func (v *schemaValidator) validate(data []byte) error {
	if v.flat != nil {
		return v.flat.validate(data)
	}
	return v.full(data)
}

// compileSchema compiles the schema whose JSON is raw: flat when it can,
// else with the engine.
func compileSchema(raw []byte, engine SchemaEngine) (*schemaValidator, error) {
	if f := compileFlat(raw); f != nil {
		return &schemaValidator{flat: f}, nil
	}
	if engine == nil {
		return nil, errors.New("it is not flat (an object of scalar properties), so it needs Options.SchemaEngine")
	}
	full, err := engine.Compile(raw)
	if err != nil {
		return nil, err
	}
	return &schemaValidator{full: full}, nil
}

// schemaJSON returns the JSON of a schema given in any form a Tool takes,
// compact: a json.RawMessage or []byte as it is, anything else as it
// marshals.
func schemaJSON(v any) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	var buf bytes.Buffer // Compact also refuses what is not JSON
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// schemaRoot is the part of an input schema the server reads itself.
type schemaRoot struct {
	Type       jsontext.Value            `json:"type"`
	Properties map[string]jsontext.Value `json:"properties"`
}

// propertySchema is the part of a property's schema the server reads.
type propertySchema struct {
	Type   jsontext.Value `json:"type"`
	Header jsontext.Value `json:"x-mcp-header"`
}

// readInputSchema checks that an input schema is an object's and collects
// the x-mcp-header annotations of its top-level properties, checking the
// transport's rules: a header name is a token, unique ignoring case, on a
// string, integer or boolean property.
func readInputSchema(raw []byte) ([]paramHeader, error) {
	var root schemaRoot
	if err := jsonv2.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if string(root.Type) != `"object"` {
		return nil, errors.New(`input schema must have type "object" at its root`)
	}
	var out []paramHeader
	seen := map[string]bool{}
	for prop, v := range root.Properties {
		var ps propertySchema
		if v.Kind() != '{' || jsonv2.Unmarshal(v, &ps) != nil || ps.Header == nil {
			continue // a boolean schema, or one without the annotation
		}
		var name string
		if jsonv2.Unmarshal(ps.Header, &name) != nil || name == "" || !isToken(name) {
			return nil, fmt.Errorf("property %q: x-mcp-header must be a non-empty header token", prop)
		}
		key := strings.ToLower(name)
		if seen[key] {
			return nil, fmt.Errorf("x-mcp-header %q is used twice (names are compared ignoring case)", name)
		}
		seen[key] = true
		var kind string
		_ = jsonv2.Unmarshal(ps.Type, &kind)
		if kind != "string" && kind != "integer" && kind != "boolean" {
			return nil, fmt.Errorf("property %q: x-mcp-header needs type string, integer or boolean", prop)
		}
		out = append(out, paramHeader{header: ParamHeaderPrefix + name, property: prop, kind: kind})
	}
	return out, nil
}

func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// generatedSchemas is Options.ToolSchemas, read on first use: tool name
// to its schemas' JSON, compact.
type generatedSchemas struct {
	file []byte

	once  sync.Once
	tools map[string]toolSchemas
	err   error

	namesOnce sync.Once
	names     map[string]bool
	namesErr  error
}

// toolSchemas is one tool's entry in a generated schema file.
type toolSchemas struct {
	InputSchema  jsontext.Value `json:"inputSchema,omitempty"`
	OutputSchema jsontext.Value `json:"outputSchema,omitempty"`
}

func (g *generatedSchemas) load() (map[string]toolSchemas, error) {
	g.once.Do(func() {
		if g.file == nil {
			return
		}
		if err := jsonv2.Unmarshal(g.file, &g.tools); err != nil {
			g.err = fmt.Errorf("stateless: Options.ToolSchemas: %w", err)
			return
		}
		for name, ts := range g.tools {
			for _, v := range []*jsontext.Value{&ts.InputSchema, &ts.OutputSchema} {
				if *v != nil {
					_ = v.Compact()
				}
			}
			g.tools[name] = ts
		}
	})
	return g.tools, g.err
}

// has reports whether the file has an entry for the tool, or what is
// wrong with the file. Registration asks, so a file that does not read
// fails the function's start rather than its first call; a tool missing
// from a file that reads is inferred by the engine on its first use, and
// [CheckToolSchemas] fails the function's test over it. It checks the
// file as strictly as load will decode it (valid JSON and UTF-8, one
// object, no name twice in any object), reads only the top-level member
// names, and leaves the schemas to load on first use. The check is the
// core's own scanner, not a decoder: at a cold start what costs is code
// run and memory touched for the first time (a deeper stack, a new
// decoder's buffers), and a fresh process's first typed tool registered
// in 0.20 ms with a jsontext decoder here, against 0.05 ms with this.
func (g *generatedSchemas) has(name string) (bool, error) {
	g.namesOnce.Do(func() {
		g.names = map[string]bool{}
		if g.file == nil {
			return
		}
		g.namesErr = errors.New("Options.ToolSchemas is not a JSON object of tools")
		if !jsonscan.Valid(g.file) || !jsonscan.UniqueNames(g.file) {
			return
		}
		if jsonscan.Members(g.file, func(n, _ []byte) bool { g.names[string(n)] = true; return true }) {
			g.namesErr = nil
		}
	})
	return g.names[name], g.namesErr
}
