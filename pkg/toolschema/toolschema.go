// Package toolschema is a [stateless.SchemaEngine] built on
// google/jsonschema-go: it infers a tool's schemas from its Go types and
// validates the schemas beyond the server's own flat validator.
//
// A function sets it (stateless.Options.SchemaEngine) when a tool's
// schema goes beyond the flat ones the server infers and validates
// itself: a list in a result, say. Package stateless does not import it,
// so a function that does not set it links no schema library and pays no
// schema library's package initialization at its cold start
// (docs/performance.md measures that link alone: the bare-jsonschema
// subject). A function's tests also use it to generate and check the
// schemas its typed tools embed ([stateless.GenerateToolSchemas],
// [stateless.CheckToolSchemas]), which spare the inference at run time:
// when those schemas are flat, only the tests link this package.
package toolschema

import (
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Engine infers and compiles schemas with google/jsonschema-go. Remote
// references are never fetched. The zero value is ready to use.
type Engine struct{}

// Infer returns the schema jsonschema-go infers for t: an object's
// properties from its fields' json tags, described by their jsonschema
// tags.
func (Engine) Infer(t reflect.Type) (json.RawMessage, error) {
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Compile resolves schema and returns its validator, which checks a JSON
// value as encoding/json decodes it.
func (Engine) Compile(schema json.RawMessage) (func([]byte) error, error) {
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(schema, s); err != nil {
		return nil, err
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return func(value []byte) error {
		var v any
		if err := json.Unmarshal(value, &v); err != nil {
			return err
		}
		return r.Validate(v)
	}, nil
}
