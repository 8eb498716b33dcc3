package stateless

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// paramHeader is one input property mirrored into an Mcp-Param-* header.
type paramHeader struct {
	header   string // canonical header name, e.g. "Mcp-Param-Region"
	property string
	kind     string // "string", "integer" or "boolean"
}

// resolveSchema turns any schema form into a resolved schema and its JSON.
// Remote references are never fetched.
func resolveSchema(v any) (*jsonschema.Resolved, json.RawMessage, error) {
	var raw json.RawMessage
	var sch *jsonschema.Schema
	switch x := v.(type) {
	case *jsonschema.Schema:
		// Inferred or built in Go: resolve it as it is, without a round
		// trip through JSON (registration is on the cold-start path).
		b, err := json.Marshal(x)
		if err != nil {
			return nil, nil, err
		}
		raw, sch = b, x
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, nil, err
		}
		raw = b
	}
	if sch == nil {
		sch = new(jsonschema.Schema)
		if err := json.Unmarshal(raw, sch); err != nil {
			return nil, nil, err
		}
	}
	res, err := sch.Resolve(nil)
	if err != nil {
		return nil, nil, err
	}
	return res, raw, nil
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

// headerParams collects the x-mcp-header annotations of the top-level
// properties of an input schema, checking the transport's rules: a header
// name is a token, unique ignoring case, on a string, integer or boolean
// property.
func headerParams(s *jsonschema.Schema) ([]paramHeader, error) {
	var out []paramHeader
	seen := map[string]bool{}
	for prop, ps := range s.Properties {
		if ps == nil || ps.Extra == nil {
			continue
		}
		v, ok := ps.Extra["x-mcp-header"]
		if !ok {
			continue
		}
		name, ok := v.(string)
		if !ok || name == "" || !isToken(name) {
			return nil, fmt.Errorf("property %q: x-mcp-header must be a non-empty header token", prop)
		}
		key := strings.ToLower(name)
		if seen[key] {
			return nil, fmt.Errorf("x-mcp-header %q is used twice (names are compared ignoring case)", name)
		}
		seen[key] = true
		kind := ps.Type
		if kind != "string" && kind != "integer" && kind != "boolean" {
			return nil, fmt.Errorf("property %q: x-mcp-header needs type string, integer or boolean", prop)
		}
		out = append(out, paramHeader{header: ParamHeaderPrefix + name, property: prop, kind: kind})
	}
	return out, nil
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
