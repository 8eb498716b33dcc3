package stateless

import (
	"bytes"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

type (
	flatNamed  string
	flatSimple struct{ Text string }
	flatTagged struct {
		Text  string  `json:"text" jsonschema:"the text <to> echo & more"`
		Count *int    `json:"count,omitempty"`
		Ratio float64 `json:",omitzero" jsonschema:"a ratio"`
		On    bool    `json:"on"`
		Skip  string  `json:"-"`
		//lint:ignore U1000 an unexported field is not a property
		hid int
		//lint:ignore SA5008 "-," names the property "-", as encoding/json reads it
		Dash  string   `json:"-,"`
		Deep  **string `json:"deep"`
		Small float32
		Big   int64
		Named flatNamed `json:"named,omitempty"`
		Uni   string    `json:"ünï" jsonschema:"é"`
	}
	flatOnlyHidden struct {
		//lint:ignore U1000 a struct whose fields are all unexported has no properties
		hid int
	}
	flatEmbedded struct {
		flatSimple
		N int
	}
	flatSized    struct{ N int8 }
	flatUnsigned struct{ N uint }
	flatNested   struct{ In flatSimple }
	flatSlice    struct{ L []string }
	flatTime     struct{ At time.Time }
	flatBig      struct{ N *big.Int }
	flatAny      struct{ V any }
	flatQuoted   struct {
		N int `json:"n,string"`
	}
	flatEmptyTag struct {
		A string `jsonschema:""`
	}
	flatWordTag struct {
		A string `jsonschema:"minimum=3"`
	}
	flatSpacedTag struct {
		A string `jsonschema:"a = b"`
	}
	selfMarshaling      struct{ A string }
	flatMarshalingField struct{ M selfMarshaling }
)

// flatDup names one property twice, built here because vet refuses it
// written out.
var flatDup = reflect.StructOf([]reflect.StructField{
	{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
	{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
})

func (selfMarshaling) MarshalJSON() ([]byte, error) { return []byte(`"m"`), nil }

// TestInferFlatIsTheEngines: for every type inferFlat takes, its schema
// is byte for byte the engine's; the types it leaves to the engine are
// the ones a flat schema cannot say, and it refuses a jsonschema tag
// exactly when the engine does.
func TestInferFlatIsTheEngines(t *testing.T) {
	flat := []reflect.Type{
		reflect.TypeFor[flatSimple](), reflect.TypeFor[flatTagged](), reflect.TypeFor[flatOnlyHidden](),
		reflect.TypeFor[struct{}](), reflect.TypeFor[flatSpacedTag](),
		reflect.TypeFor[map[string]string](), reflect.TypeFor[map[string]*int](), reflect.TypeFor[map[flatNamed]bool](),
		reflect.TypeFor[map[string]float64](),
	}
	for _, typ := range flat {
		agreeWithEngine(t, typ, true)
	}
	notFlat := []reflect.Type{
		reflect.TypeFor[*flatSimple](), reflect.TypeFor[flatEmbedded](), reflect.TypeFor[flatSized](),
		reflect.TypeFor[flatUnsigned](), reflect.TypeFor[flatNested](), reflect.TypeFor[flatSlice](),
		reflect.TypeFor[flatTime](), reflect.TypeFor[flatBig](), reflect.TypeFor[flatAny](), reflect.TypeFor[flatQuoted](),
		flatDup, reflect.TypeFor[selfMarshaling](), reflect.TypeFor[flatMarshalingField](),
		reflect.TypeFor[time.Time](), reflect.TypeFor[string](), reflect.TypeFor[[]string](),
		reflect.TypeFor[map[int]string](), reflect.TypeFor[map[string][]string](), reflect.TypeFor[map[string]any](),
		reflect.TypeFor[map[string]uint8](),
	}
	for _, typ := range notFlat {
		if raw, ok, err := inferFlat(typ); ok || err != nil {
			t.Errorf("%s: inferred %s, %v; want it left to the engine", typ, raw, err)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[flatEmptyTag](), reflect.TypeFor[flatWordTag]()} {
		_, _, err := inferFlat(typ)
		_, engineErr := toolschema.Engine{}.Infer(typ)
		if err == nil || engineErr == nil || !strings.Contains(engineErr.Error(), err.Error()) {
			t.Errorf("%s: inferFlat %v, the engine %v", typ, err, engineErr)
		}
	}
}

// agreeWithEngine checks inferFlat against the engine on typ; when
// mustBeFlat, inferFlat must take it.
func agreeWithEngine(t *testing.T, typ reflect.Type, mustBeFlat bool) {
	t.Helper()
	raw, ok, err := inferFlat(typ)
	want, engineErr := toolschema.Engine{}.Infer(typ)
	switch {
	case err != nil:
		if engineErr == nil {
			t.Fatalf("%s: inferFlat refuses (%v), the engine infers %s", typ, err, want)
		}
	case !ok:
		if mustBeFlat {
			t.Fatalf("%s: not taken as flat", typ)
		}
	case engineErr != nil:
		t.Fatalf("%s: inferFlat infers %s, the engine refuses (%v)", typ, raw, engineErr)
	case !bytes.Equal(raw, want):
		t.Fatalf("%s:\n inferFlat  %s\n the engine %s", typ, raw, want)
	default:
		if compileFlat(raw) == nil {
			t.Fatalf("%s: inferred %s, which the flat validator does not take", typ, raw)
		}
	}
}

// flatFieldTypes are the field types the fuzz target builds structs of,
// flat and not.
var flatFieldTypes = []reflect.Type{
	reflect.TypeFor[string](), reflect.TypeFor[int](), reflect.TypeFor[int64](), reflect.TypeFor[float64](),
	reflect.TypeFor[float32](), reflect.TypeFor[bool](), reflect.TypeFor[*string](), reflect.TypeFor[**int](),
	reflect.TypeFor[flatNamed](), reflect.TypeFor[uint16](), reflect.TypeFor[[]int](), reflect.TypeFor[flatSimple](),
	reflect.TypeFor[time.Time](), reflect.TypeFor[any](), reflect.TypeFor[map[string]int](),
}

// FuzzInferFlat builds struct and map types from the fuzzer's bytes
// (field names, json and jsonschema tags, field types) and holds
// inferFlat to the engine on each.
func FuzzInferFlat(f *testing.F) {
	f.Add([]byte("\x00\x01"), "text", "text,omitempty", "the text")
	f.Add([]byte("\x02\x05\x06"), "N", "-", "")
	f.Add([]byte("\x03\x09"), "Ratio", ",omitzero", "x=y")
	f.Add([]byte("\x04\x04"), "A", "a,string", "<b>")
	f.Add([]byte("\x07"), "Dup", "-,", "\xff")
	f.Fuzz(func(t *testing.T, shape []byte, name, jsonTag, descTag string) {
		if len(shape) == 0 || len(shape) > 8 || len(name)+len(jsonTag)+len(descTag) > 512 {
			return // bounded, as the other targets are, so no input stalls the engine
		}
		if shape[0]&0x80 != 0 { // a map of one field type
			agreeWithEngine(t, reflect.MapOf(reflect.TypeFor[string](), flatFieldTypes[int(shape[0])%len(flatFieldTypes)]), false)
			return
		}
		var fields []reflect.StructField
		for i, b := range shape {
			fname := "F" + string(rune('A'+i))
			if i == 0 && validFieldName(name) {
				fname = name
			}
			var tag []string
			if b&0x10 != 0 {
				tag = append(tag, `json:`+strconv.Quote(jsonTag))
			}
			if b&0x20 != 0 {
				tag = append(tag, `jsonschema:`+strconv.Quote(descTag))
			}
			fields = append(fields, reflect.StructField{
				Name: fname, Type: flatFieldTypes[int(b&0x0f)%len(flatFieldTypes)],
				Tag: reflect.StructTag(strings.Join(tag, " ")),
			})
		}
		typ := func() (typ reflect.Type) {
			defer func() {
				if recover() != nil {
					typ = nil // a field set StructOf refuses (a name twice, say)
				}
			}()
			return reflect.StructOf(fields)
		}()
		if typ != nil {
			agreeWithEngine(t, typ, false)
		}
	})
}

func validFieldName(s string) bool {
	if s == "" || !(s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
