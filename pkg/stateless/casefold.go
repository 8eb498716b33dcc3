package stateless

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
)

// encoding/json matches object keys to struct fields ignoring case, and
// takes the last of several matches. A reader that matches exactly — a
// gateway, a firewall, a log pipeline, a JSON Schema validator — then sees
// a different message than the server acts on: {"method":"tools/list",
// "Method":"server/discover"}, or tool arguments {"amount":"1",
// "AMOUNT":"1000000"} where the schema checks one and the handler gets the
// other. A keyGuard, built from the Go type a value decodes into, refuses
// any key that is not a field's exact name but matches one ignoring case.
type keyGuard struct {
	fields map[string]*keyGuard // exact JSON name -> guard of its value (nil: nothing to check)
	names  []string             // the field names, for the case-insensitive comparison
	elem   *keyGuard            // array elements and map values
	object bool                 // the value is a struct
}

// errCaseVariant reports a key that differs from a field's name only in
// case.
var errCaseVariant = errors.New("an object key differs from a known name only in letter case")

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// newKeyGuard builds the guard for values decoded into t; nil when no
// struct can be reached from t.
func newKeyGuard(t reflect.Type) *keyGuard {
	return buildGuard(t, map[reflect.Type]*keyGuard{})
}

func buildGuard(t reflect.Type, seen map[reflect.Type]*keyGuard) *keyGuard {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil // decodes itself
	}
	if g, ok := seen[t]; ok {
		return g // recursive type: the guard under construction
	}
	switch t.Kind() {
	case reflect.Struct:
		g := &keyGuard{fields: map[string]*keyGuard{}, object: true}
		seen[t] = g
		addFields(g, t, seen)
		return g
	case reflect.Slice, reflect.Array, reflect.Map:
		if e := buildGuard(t.Elem(), seen); e != nil {
			return &keyGuard{elem: e}
		}
	}
	return nil
}

// addFields adds t's JSON fields to g, promoting embedded structs' fields
// as encoding/json does.
func addFields(g *keyGuard, t reflect.Type, seen map[reflect.Type]*keyGuard) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(g, ft, seen)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		g.fields[name] = buildGuard(f.Type, seen)
		g.names = append(g.names, name)
	}
}

// check walks data, which must be valid JSON, along the guard.
func (g *keyGuard) check(data []byte) error {
	if g == nil {
		return nil
	}
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) {
		return nil
	}
	switch data[i] {
	case '{':
		return g.checkObject(data[i:])
	case '[':
		if g.elem == nil {
			return nil
		}
		return eachElement(data[i:], g.elem.check)
	}
	return nil
}

func (g *keyGuard) checkObject(data []byte) error {
	i := jsonscan.SkipSpace(data, 1)
	for i < len(data) && data[i] == '"' {
		end, escaped := jsonscan.ScanString(data, i)
		key := data[i+1 : end-1]
		if escaped {
			var k string
			if json.Unmarshal(data[i:end], &k) != nil {
				return errCaseVariant
			}
			key = []byte(k)
		}
		i = jsonscan.SkipSpace(data, end)
		i = jsonscan.SkipSpace(data, i+1) // ':'
		vStart := i
		i = jsonscan.SkipValue(data, i)
		value := data[vStart:i]
		if g.object {
			if sub, ok := g.fields[string(key)]; ok {
				if err := sub.check(value); err != nil {
					return err
				}
			} else if g.matchesFolded(key) {
				return errCaseVariant
			}
		} else if g.elem != nil { // a map: every value
			if err := g.elem.check(value); err != nil {
				return err
			}
		}
		i = jsonscan.SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = jsonscan.SkipSpace(data, i+1)
		}
	}
	return nil
}

// matchesFolded reports whether key equals a field name under Unicode
// case folding, which is how encoding/json matches names.
func (g *keyGuard) matchesFolded(key []byte) bool {
	for _, n := range g.names {
		if equalFold(n, key) {
			return true
		}
	}
	return false
}

// equalFold is strings.EqualFold of a string and a byte slice, without
// converting either.
func equalFold(s string, b []byte) bool {
	for s != "" && len(b) > 0 {
		var sr, br rune
		if s[0] < utf8.RuneSelf {
			sr, s = rune(s[0]), s[1:]
		} else {
			r, n := utf8.DecodeRuneInString(s)
			sr, s = r, s[n:]
		}
		if b[0] < utf8.RuneSelf {
			br, b = rune(b[0]), b[1:]
		} else {
			r, n := utf8.DecodeRune(b)
			br, b = r, b[n:]
		}
		if sr == br {
			continue
		}
		if !sameFold(sr, br) {
			return false
		}
	}
	return s == "" && len(b) == 0
}

// sameFold reports whether r and q are in one Unicode simple fold orbit.
func sameFold(r, q rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == q {
			return true
		}
	}
	return false
}

func eachElement(data []byte, f func([]byte) error) error {
	i := jsonscan.SkipSpace(data, 1)
	for i < len(data) && data[i] != ']' {
		start := i
		i = jsonscan.SkipValue(data, i)
		if err := f(data[start:i]); err != nil {
			return err
		}
		i = jsonscan.SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = jsonscan.SkipSpace(data, i+1)
		}
	}
	return nil
}
