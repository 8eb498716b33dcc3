package stateless

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// TestReplayForm: the stored form of a result is the result with
// MetaReplay added to its _meta, for every shape the encoder writes, and
// a replay sends it without decoding it.
func TestReplayForm(t *testing.T) {
	s := NewServer(Implementation{Name: "r", Version: "1"}, &Options{SchemaEngine: toolschema.Engine{}})
	for _, c := range []struct {
		name string
		v    any
		f    resultFields
	}{
		{"modern", map[string]any{"content": []any{}}, resultFields{modern: true}},
		{"modern with the handler's _meta", map[string]any{"content": []any{}}, resultFields{modern: true, meta: Meta{"a": 1}}},
		{"legacy, no _meta", map[string]any{"content": []any{}}, resultFields{}},
		{"legacy, empty", struct{}{}, resultFields{}},
		{"legacy with the handler's _meta", struct{}{}, resultFields{meta: Meta{"b": "x"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			_, res, err := appendResult(s, nil, json.RawMessage("1"), c.v, &f)
			if err != nil {
				t.Fatal(err)
			}
			stored := res.replayForm()
			var got, want map[string]any
			if err := json.Unmarshal(stored, &got); err != nil {
				t.Fatalf("%s: %v", stored, err)
			}
			marked, err := markReplay(res.obj)
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(marked, &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("stored %s, want %s", stored, marked)
			}
			if out, err := markedReplay(stored); err != nil || string(out) != string(stored) {
				t.Errorf("a stored replay form was re-encoded: %s", out)
			}
		})
	}
}
