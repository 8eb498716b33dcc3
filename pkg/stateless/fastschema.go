package stateless

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
)

// flatSchema validates the common shape of tool schemas — an object of
// primitive, optionally nullable properties, with required members, and
// no additional properties or only primitive ones (a map of scalars) —
// directly on the JSON bytes, without decoding them into Go values.
// Every tool call validates its arguments and most validate a structured
// result, and a general validator that walks decoded maps costs several
// times the whole rest of the call.
//
// It decides every value on its own, so a call whose schemas are flat
// needs no schema engine at all. A schema that uses anything else needs
// Options.SchemaEngine; flatSchema and google/jsonschema-go agree on
// every schema flatSchema accepts (see the differential fuzz test).
type flatSchema struct {
	props      map[string]flatProp // at most 64, each with its index
	required   []string
	closed     bool      // additionalProperties: false
	extra      *flatProp // additionalProperties: a flat property's schema (a map's values)
	nRequired  int
	requiredIx map[string]int
}

type flatProp struct {
	index    int
	kind     byte // 's' string, 'i' integer, 'n' number, 'b' boolean
	nullable bool
	enum     []string // string enum, nil for none
}

// compileFlat returns a flatSchema for the schema whose JSON is raw, or nil
// if it uses anything beyond the flat subset.
func compileFlat(raw []byte) *flatSchema {
	var root map[string]json.RawMessage
	if jsonv2.Unmarshal(raw, &root) != nil {
		return nil
	}
	f := &flatSchema{props: map[string]flatProp{}, requiredIx: map[string]int{}}
	for k, v := range root {
		switch k {
		case "type":
			if string(v) != `"object"` {
				return nil
			}
		case "title", "description", "$comment":
		case "$schema":
			if string(v) != `"https://json-schema.org/draft/2020-12/schema"` {
				return nil
			}
		case "required":
			if jsonv2.Unmarshal(v, &f.required) != nil {
				return nil
			}
		case "additionalProperties":
			if string(v) == "false" {
				f.closed = true
				break
			}
			p, ok := compileFlatProp(v)
			if !ok {
				return nil
			}
			f.extra = &p
		case "properties":
			var props map[string]json.RawMessage
			if jsonv2.Unmarshal(v, &props) != nil {
				return nil
			}
			if len(props) > 64 {
				return nil
			}
			for name, ps := range props {
				p, ok := compileFlatProp(ps)
				if !ok {
					return nil
				}
				p.index = len(f.props)
				f.props[name] = p
			}
		default:
			return nil
		}
	}
	if _, ok := root["type"]; !ok {
		return nil
	}
	for i, r := range f.required {
		if _, dup := f.requiredIx[r]; dup {
			return nil
		}
		f.requiredIx[r] = i
	}
	f.nRequired = len(f.required)
	if f.nRequired > 64 {
		return nil
	}
	return f
}

func compileFlatProp(raw json.RawMessage) (flatProp, bool) {
	var m map[string]json.RawMessage
	if jsonv2.Unmarshal(raw, &m) != nil {
		return flatProp{}, false
	}
	var p flatProp
	hasType := false
	for k, v := range m {
		switch k {
		case "title", "description", "$comment", "x-mcp-header", "default", "examples", "deprecated", "readOnly", "writeOnly":
		case "type":
			var one string
			var many []string
			switch {
			case jsonv2.Unmarshal(v, &one) == nil:
				many = []string{one}
			case jsonv2.Unmarshal(v, &many) == nil:
			default:
				return p, false
			}
			for _, t := range many {
				if t == "null" {
					p.nullable = true
					continue
				}
				if hasType {
					return p, false // two non-null types
				}
				hasType = true
				switch t {
				case "string":
					p.kind = 's'
				case "integer":
					p.kind = 'i'
				case "number":
					p.kind = 'n'
				case "boolean":
					p.kind = 'b'
				default:
					return p, false
				}
			}
			if !hasType {
				return p, false
			}
		case "enum":
			if jsonv2.Unmarshal(v, &p.enum) != nil || p.enum == nil {
				return p, false
			}
		default:
			return p, false
		}
	}
	if !hasType || (p.enum != nil && (p.kind != 's' || p.nullable)) {
		return p, false
	}
	return p, true
}

// validate checks the JSON object in data, which must be syntactically
// valid JSON. Member names are read as every decoder reads them, escapes
// resolved (jsonscan.Members); a name given twice is refused, as the
// server's decoder refuses it in a request.
func (f *flatSchema) validate(data []byte) error {
	var seen, seenProps uint64
	var err error
	if !jsonscan.Members(data, func(key, value []byte) bool {
		p, known := f.props[string(key)]
		if known {
			if seenProps&(1<<p.index) != 0 {
				err = errors.New("property " + strconv.Quote(string(key)) + " is given twice")
				return false
			}
			seenProps |= 1 << p.index
			if e := p.check(value); e != nil {
				err = errors.New("property " + strconv.Quote(string(key)) + ": " + e.Error())
				return false
			}
		} else if f.closed {
			err = errors.New("unexpected property " + strconv.Quote(string(key)))
			return false
		} else if f.extra != nil {
			if e := f.extra.check(value); e != nil {
				err = errors.New("property " + strconv.Quote(string(key)) + ": " + e.Error())
				return false
			}
		}
		if ix, ok := f.requiredIx[string(key)]; ok {
			seen |= 1 << ix
		}
		return true
	}) {
		if err == nil {
			return errors.New("arguments must be an object")
		}
		return err
	}
	return f.checkRequired(seen)
}

func (f *flatSchema) checkRequired(seen uint64) error {
	if f.nRequired == 0 || seen == (uint64(1)<<f.nRequired)-1 {
		return nil
	}
	for i, r := range f.required {
		if seen&(1<<i) == 0 {
			return errors.New("missing required property " + strconv.Quote(r))
		}
	}
	return nil
}

func (p flatProp) check(v []byte) error {
	if len(v) == 0 {
		return errors.New("empty value")
	}
	if v[0] == 'n' {
		if p.nullable {
			return nil
		}
		return errors.New("null is not allowed")
	}
	switch p.kind {
	case 's':
		if v[0] != '"' {
			return errors.New("want a string")
		}
		if p.enum != nil {
			end, escaped := jsonscan.ScanString(v, 0)
			s := v[1 : end-1]
			if escaped || !utf8.Valid(s) {
				// Compare the text as encoding/json decodes it.
				s = jsonscan.AppendUnquoted(nil, v[:end])
			}
			for _, e := range p.enum {
				if e == string(s) {
					return nil
				}
			}
			return errors.New("value is not one of the allowed values")
		}
		return nil
	case 'b':
		if v[0] != 't' && v[0] != 'f' {
			return errors.New("want a boolean")
		}
		return nil
	case 'n', 'i':
		if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
			return errors.New("want a number")
		}
		if !finiteLiteral(v) {
			return errors.New("number out of range") // as decoders refuse what a float64 cannot hold
		}
		if p.kind == 'i' && !isIntegerLiteral(v) {
			return errors.New("want an integer")
		}
		return nil
	}
	return errors.New("unknown kind")
}

// isIntegerLiteral reports whether a JSON number is an integer in JSON
// Schema's sense: its value has no fractional part (so 2.0 is one).
func isIntegerLiteral(v []byte) bool {
	for _, c := range v {
		if c == '.' || c == 'e' || c == 'E' {
			f, err := strconv.ParseFloat(string(v), 64)
			return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
		}
	}
	return true
}

// finiteLiteral reports whether a JSON number fits a float64, as decoders
// into Go values require.
func finiteLiteral(v []byte) bool {
	if len(v) <= 300 && !bytes.ContainsAny(v, "eE") {
		return true // fewer digits than the largest float64 has
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return err == nil && !math.IsInf(f, 0)
}
