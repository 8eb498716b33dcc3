package stateless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// toolSchema returns the JSON of one of a tool's schemas: as the tool
// gives it; else, for a typed tool, as Options.ToolSchemas has it, or as
// Options.SchemaEngine infers it from typ, or, with no engine, as
// registration inferred it (inferred) or inferFlat does now.
func toolSchema(s *Server, name string, given any, typ reflect.Type, inferred []byte, output bool) ([]byte, error) {
	if given != nil {
		return schemaJSON(given)
	}
	tools, err := s.schemas.load()
	if err != nil {
		return nil, err
	}
	if ts, ok := tools[name]; ok {
		v := ts.InputSchema
		if output {
			v = ts.OutputSchema
		}
		if v != nil {
			return v, nil
		}
	}
	if s.opts.SchemaEngine != nil {
		return s.opts.SchemaEngine.Infer(typ)
	}
	if inferred != nil {
		return inferred, nil
	}
	raw, ok, err := inferFlat(typ)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNeedsEngine(typ)
	}
	return raw, nil
}

// errNeedsEngine says why a type's schema cannot be had without an
// engine, and the three ways to have it.
func errNeedsEngine(typ reflect.Type) error {
	return fmt.Errorf("%s is not a flat object (a struct of string, int, int64, float and bool fields, perhaps pointers, or a map of such values), so inferring its schema needs Options.SchemaEngine (package toolschema has one); or give the tool its schema, or generate it into Options.ToolSchemas", typ)
}

// Verify prepares every registered tool now — finds, compiles and checks
// its schemas, which registration leaves to the tool's first use so that
// a cold start pays for none of them — and returns what is wrong with
// any. A server's tests call it (or [CheckToolSchemas]), so that a
// bad schema fails them rather than a user's first call, which would be
// refused as an internal error.
func (s *Server) Verify() error {
	var errs []error
	for _, t := range s.reg.Load().tools {
		if err := t.prepare(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// GenerateToolSchemas infers with e the schemas of s's typed tools that
// give none and returns them in the form Options.ToolSchemas takes: a
// JSON object from tool name to its inputSchema and outputSchema,
// indented, members sorted. Write it to the file a function embeds; its
// test calls [CheckToolSchemas] to keep it true to the Go types.
func GenerateToolSchemas(s *Server, e SchemaEngine) ([]byte, error) {
	tools, err := inferSchemas(s, e)
	if err != nil {
		return nil, err
	}
	b, err := jsonv2.Marshal(tools, jsonv2.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func inferSchemas(s *Server, e SchemaEngine) (map[string]toolSchemas, error) {
	out := map[string]toolSchemas{}
	var errs []error
	for _, t := range s.reg.Load().tools {
		var ts toolSchemas
		for _, x := range []struct {
			typ reflect.Type
			v   *jsontext.Value
			of  string
		}{{t.inType, &ts.InputSchema, "input"}, {t.outType, &ts.OutputSchema, "output"}} {
			if x.typ == nil {
				continue
			}
			raw, err := e.Infer(x.typ)
			if err != nil {
				errs = append(errs, fmt.Errorf("tool %q: %s schema: %w", t.def.Name, x.of, err))
				continue
			}
			*x.v = jsontext.Value(bytes.Clone(raw))
			if err := x.v.Compact(); err != nil {
				errs = append(errs, fmt.Errorf("tool %q: %s schema: %w", t.def.Name, x.of, err))
			}
		}
		if ts.InputSchema != nil || ts.OutputSchema != nil {
			out[t.def.Name] = ts
		}
	}
	return out, errors.Join(errs...)
}

// CheckToolSchemas is the test of s's schemas, for its function's
// tests: every tool prepares ([Server.Verify]); e compiles every schema,
// flat ones too, so a schema only the server's flat validator has read is
// checked by a full one; and Options.ToolSchemas holds exactly the
// schemas e infers from the typed tools' Go types now, so a changed type
// whose file was not regenerated fails the test, naming the tool (a
// server without the option infers at run time, and has no file to
// check).
func CheckToolSchemas(s *Server, e SchemaEngine) error {
	errs := []error{s.Verify()}
	for _, t := range s.reg.Load().tools {
		if t.prepare() != nil {
			continue // Verify said why
		}
		// Prepared, the tool's schemas are their JSON.
		for _, sch := range []any{t.def.InputSchema, t.def.OutputSchema} {
			if raw, ok := sch.(json.RawMessage); ok {
				if _, err := e.Compile(raw); err != nil {
					errs = append(errs, fmt.Errorf("tool %q: %w", t.def.Name, err))
				}
			}
		}
	}
	if s.opts.ToolSchemas == nil {
		return errors.Join(errs...) // inferred at run time: nothing to keep true
	}
	want, err := inferSchemas(s, e)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	have, err := s.schemas.load()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	// In name order, so that the same mismatch reads the same each run.
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		h, ok := have[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("tool %q: not in Options.ToolSchemas; regenerate it (GenerateToolSchemas)", name))
		case !bytes.Equal(h.InputSchema, w.InputSchema) || !bytes.Equal(h.OutputSchema, w.OutputSchema):
			errs = append(errs, fmt.Errorf("tool %q: Options.ToolSchemas differs from its Go types; regenerate it (GenerateToolSchemas)", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[name]; !ok {
			errs = append(errs, fmt.Errorf("tool %q: in Options.ToolSchemas but no typed tool of that name takes its schemas from there", name))
		}
	}
	return errors.Join(errs...)
}
