package stateless

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// inferFlat infers, with no engine, the schema of a Go type whose JSON
// is a flat object — a struct of string, integer (int, int64), number
// (float32, float64) and boolean fields, each perhaps behind pointers,
// or a map of such values by string keys — which is what most tools
// take and return, and what [flatSchema] validates. Its output is byte
// for byte what package toolschema's engine infers for the same type
// (the differential tests and fuzz target hold it to that), so a schema
// does not change when a function sets an engine, and a file generated
// with the engine agrees with a function that has none.
//
// It answers ok false for any other type: an engine must infer that
// one. The engine is not linked by default because its package
// initialization alone costs each cold start about as much as the whole
// rest of this package does (docs/performance.md: bare-jsonschema
// against ours).
//
// err is the engine's own refusal of a jsonschema tag, so that a
// function without an engine is told what it would be told with one.
func inferFlat(t reflect.Type) (schema []byte, ok bool, err error) {
	if marshalsItself(t) {
		return nil, false, nil
	}
	switch t.Kind() {
	case reflect.Map:
		return inferFlatMap(t)
	case reflect.Struct:
	default:
		return nil, false, nil
	}
	fields := reflect.VisibleFields(t)
	if len(fields) == 0 {
		return []byte(`{"type":"object","additionalProperties":false}`), true, nil
	}
	b := append(make([]byte, 0, 64+48*len(fields)), `{"type":"object","properties":{`...)
	var required []string
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if f.Anonymous {
			return nil, false, nil // promoted fields: left to the engine
		}
		name, omitEmpty, quoted, skip := jsonField(f)
		if skip {
			continue
		}
		if quoted || seen[name] || len(seen) == 64 {
			return nil, false, nil
		}
		seen[name] = true
		typ, nullable := f.Type, false
		for typ.Kind() == reflect.Pointer {
			typ, nullable = typ.Elem(), true
		}
		kind := flatKind(typ)
		if kind == "" {
			return nil, false, nil
		}
		if len(seen) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(b, name)
		b = append(b, `:{"type":`...)
		b = appendFlatType(b, kind, nullable)
		if tag, ok := f.Tag.Lookup("jsonschema"); ok {
			if err := checkDescriptionTag(t, f, tag); err != nil {
				return nil, false, err
			}
			b = append(b, `,"description":`...)
			b = appendJSONString(b, tag)
		}
		b = append(b, '}')
		if !omitEmpty {
			required = append(required, name)
		}
	}
	b = append(b, '}')
	if len(required) > 0 {
		b = append(b, `,"required":[`...)
		for i, name := range required {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, name)
		}
		b = append(b, ']')
	}
	return append(b, `,"additionalProperties":false}`...), true, nil
}

// inferFlatMap infers the schema of a map of scalars by string keys,
// the engine's: an object whose additional properties are the values'.
func inferFlatMap(t reflect.Type) (schema []byte, ok bool, err error) {
	if t.Key().Kind() != reflect.String {
		return nil, false, nil
	}
	typ, nullable := t.Elem(), false
	for typ.Kind() == reflect.Pointer {
		typ, nullable = typ.Elem(), true
	}
	kind := flatKind(typ)
	if kind == "" {
		return nil, false, nil
	}
	b := append(make([]byte, 0, 80), `{"type":"object","additionalProperties":{"type":`...)
	b = appendFlatType(b, kind, nullable)
	return append(b, "}}"...), true, nil
}

// appendFlatType appends a scalar's JSON Schema type, with null when it
// is nullable, as the engine writes it.
func appendFlatType(b []byte, kind string, nullable bool) []byte {
	if nullable {
		b = append(b, `["null","`...)
		b = append(b, kind...)
		return append(b, `"]`...)
	}
	b = append(b, '"')
	b = append(b, kind...)
	return append(b, '"')
}

// jsonField reads a struct field as encoding/json names it: skip for an
// unexported field or a "-" tag, omitEmpty for omitempty or omitzero,
// quoted for the string option (which changes the value's JSON type).
func jsonField(f reflect.StructField) (name string, omitEmpty, quoted, skip bool) {
	if !f.IsExported() {
		return "", false, false, true
	}
	name = f.Name
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return name, false, false, false
	}
	n, opts, found := strings.Cut(tag, ",")
	if n == "-" && !found {
		return "", false, false, true
	}
	if n != "" {
		name = n
	}
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		switch o {
		case "omitempty", "omitzero":
			omitEmpty = true
		case "string":
			quoted = true
		}
	}
	return name, omitEmpty, quoted, false
}

// flatKind is the JSON Schema type of a field's value type, or "" when
// the type is not one flatSchema validates or encodes otherwise than its
// kind says (a type with its own MarshalJSON or MarshalText). The sized
// integers are left out: the engine gives them bounds, which a flat
// schema has not.
func flatKind(t reflect.Type) string {
	if marshalsItself(t) {
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return ""
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshalsItself reports whether values of t (or pointers to them)
// choose their own JSON encoding.
func marshalsItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) ||
		p.Implements(jsonMarshalerType) || p.Implements(textMarshalerType)
}

// checkDescriptionTag refuses what the engine refuses in a jsonschema
// tag: an empty one, and one beginning "WORD=", kept for future options.
func checkDescriptionTag(t reflect.Type, f reflect.StructField, tag string) error {
	if tag == "" {
		return fmt.Errorf("empty jsonschema tag on struct field %s.%s", t, f.Name)
	}
	if i := strings.IndexByte(tag, '='); i >= 0 && !strings.ContainsAny(tag[:i], " \t\n") {
		return fmt.Errorf("tag must not begin with 'WORD=': %q", tag)
	}
	return nil
}

// appendJSONString appends s as encoding/json marshals a string, HTML
// characters escaped, as the engine's output has it.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
