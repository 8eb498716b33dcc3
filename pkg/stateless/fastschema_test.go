package stateless

import (
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

// flatTestSchemas are schemas inside the flat subset.
var flatTestSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":["null","number"]},"c":{"type":"boolean","description":"c"}},"required":["a","c"]}`,
	`{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow"]},"region":{"type":"string","x-mcp-header":"Region"}},"additionalProperties":false}`,
	`{"type":"object"}`,
	`{"type":"object","required":["x"]}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"type":"object","additionalProperties":{"type":["null","integer"]}}`,
	`{"type":"object","properties":{"text":{"type":"string"}},"additionalProperties":{"type":"boolean"}}`,
	`{"type":"object","additionalProperties":{"type":"string","enum":["a","b"]}}`,
}

func resolveForTest(t testing.TB, schema string) (*flatSchema, *jsonschema.Resolved) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := compileFlat([]byte(schema))
	if f == nil {
		t.Fatalf("schema %s is not flat", schema)
	}
	return f, r
}

// agree checks that the flat validator and jsonschema-go give the same
// verdict on data.
func agree(t *testing.T, f *flatSchema, r *jsonschema.Resolved, data []byte) {
	var generic any
	if !jsontext.Value(data).IsValid() || json.Unmarshal(data, &generic) != nil {
		return // not JSON the server would have accepted (it reads strictly)
	}
	if _, ok := generic.(map[string]any); !ok {
		return // arguments are checked to be an object before validation
	}
	fast := f.validate(data)
	slow := r.Validate(generic)
	if (fast == nil) != (slow == nil) {
		t.Fatalf("disagree on %s: flat %v, jsonschema-go %v", data, fast, slow)
	}
}

func TestFlatSchemaAgrees(t *testing.T) {
	inputs := []string{
		`{}`, `{"text":"x"}`, `{"text":5}`, `{"text":null}`, `{"text":"x","extra":1}`,
		`{"a":1,"c":true}`, `{"a":1.0,"c":false}`, `{"a":1.5,"c":true}`, `{"a":"1","c":true}`, `{"a":1,"b":null,"c":true}`,
		`{"a":1e2,"c":true}`, `{"a":-0,"c":true}`, `{"a":1,"c":"true"}`, `{"a":1}`,
		`{"mode":"fast"}`, `{"mode":"medium"}`, `{"mode":"f\u0061st"}`, `{"region":"eu","mode":"slow"}`, `{"other":1}`,
		`{"x":{"deep":[1,2,{"y":"}"}]}}`, `{"text":"a","text":5}`, `{"t\u0065xt":"x"}`, `{"a":1e400,"c":true}`,
		` { "text" : "spaced" } `,
	}
	for _, schema := range flatTestSchemas {
		f, r := resolveForTest(t, schema)
		for _, in := range inputs {
			agree(t, f, r, []byte(in))
		}
	}
}

func TestNotFlat(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"n":{"type":"string","minLength":3}}}`,
		`{"type":"object","properties":{"o":{"type":"object"}}}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"f":{"type":"string","format":"email"}}}`,
		`{"type":"object","properties":{"u":{}}}`,
		`{"type":"object","anyOf":[{"required":["a"]}]}`,
		`{"type":"object","additionalProperties":{"type":"object"}}`,
		`{"type":"object","additionalProperties":{"type":"integer","minimum":0}}`,
		`{"type":"object","additionalProperties":true}`,
		`{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/a"}}}`,
	} {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		if compileFlat([]byte(schema)) != nil {
			t.Errorf("%s compiled as flat", schema)
		}
	}
}

// FuzzFlatSchemaAgrees varies the schema as well as the data: every
// schema the flat validator compiles must be one jsonschema-go resolves,
// and on every object the two must agree.
func FuzzFlatSchemaAgrees(f *testing.F) {
	for i, s := range flatTestSchemas {
		for _, in := range []string{`{"text":"x"}`, `{"a":1.0,"b":null,"c":true}`, `{"mode":"fast","region":"x"}`, `{"x":1}`, `{}`} {
			f.Add([]byte(s), []byte(in))
		}
		f.Add([]byte(s), []byte(`{"a":`+string(rune('0'+i))+`}`))
	}
	f.Add([]byte(`{"type":"object","properties":{"n":{"type":["integer","null"]},"s":{"type":"string","enum":["a","b","\u00e9"]}},"required":["n","s"],"additionalProperties":false}`),
		[]byte(`{"n":null,"s":"é"}`))
	f.Fuzz(func(t *testing.T, schema, data []byte) {
		fs := compileFlat(schema)
		if fs == nil {
			return // outside the flat subset: jsonschema-go validates alone
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(schema, &s); err != nil {
			t.Fatalf("flat compiled a schema jsonschema-go cannot read: %s: %v", schema, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("flat compiled a schema jsonschema-go does not resolve: %s: %v", schema, err)
		}
		agree(t, fs, r, data)
	})
}
