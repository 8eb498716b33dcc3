// Package toolschema is a [stateless.SchemaEngine] built on
// google/jsonschema-go: it infers a tool's schemas from its Go types and
// validates the schemas beyond the server's own flat validator.
//
// It is a package of its own so that only what uses it links it. A
// function's tests use it to generate and check the schemas its typed
// tools embed ([stateless.GenerateToolSchemas],
// [stateless.CheckToolSchemas]); the function links it only when
// a schema is not flat or it infers schemas at run time, and then pays
// its initialization (about a millisecond) at every cold start.
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
