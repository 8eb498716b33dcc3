package bench

import (
	stdjson "encoding/json"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	segjson "github.com/segmentio/encoding/json"
)

// The decoder choice of pkg/stateless (issue: a strict, case-sensitive
// decoder from a kept library): the two candidates and encoding/json,
// decoding one tools/call request's envelope and params, each as strictly
// as it can be asked to be. TestDecoderStrictness records what each
// refuses; BenchmarkDecodeToolsCall times them on the same bytes.

type decEnvelope struct {
	JSONRPC string             `json:"jsonrpc"`
	ID      stdjson.RawMessage `json:"id"`
	Method  string             `json:"method"`
	Params  decParams          `json:"params"`
}

type decParams struct {
	Meta struct {
		ProtocolVersion    stdjson.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		ClientCapabilities stdjson.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
	Name      string             `json:"name"`
	Arguments stdjson.RawMessage `json:"arguments"`
}

var decodeBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello h"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)

// decoders are the candidates, each set to be as strict as it offers.
var decoders = []struct {
	name   string
	decode func([]byte, *decEnvelope) error
}{
	{"encoding-json", func(b []byte, v *decEnvelope) error { return stdjson.Unmarshal(b, v) }},
	{"go-json-experiment", func(b []byte, v *decEnvelope) error { return jsonv2.Unmarshal(b, v) }},
	{"segmentio", func(b []byte, v *decEnvelope) error {
		_, err := segjson.Parse(b, v, segjson.DontMatchCaseInsensitiveStructFields)
		return err
	}},
}

// TestDecoderStrictness: which decoder refuses a duplicate name, invalid
// UTF-8 and a lone surrogate, and which reads a name in another case as
// the field. Only go-json-experiment does all four, by default, in the
// one pass that decodes; that is why pkg/stateless uses it. segmentio is
// the fastest (at 2026-11-30, medians of 5: segmentio 0.60 µs and 7
// allocations, go-json-experiment 1.18 µs and 4, encoding/json 4.0 µs and
// 15, for this body), but it would need a second, validating pass over
// every body for the other three.
func TestDecoderStrictness(t *testing.T) {
	cases := map[string][]byte{
		"duplicate name":       []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`),
		"invalid UTF-8":        []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\xff\"}}"),
		"lone surrogate":       []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}}`),
		"name in another case": []byte(`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`),
	}
	want := map[string]map[string]bool{ // decoder → case → strict (refused, or the case variant not taken)
		"encoding-json":      {"duplicate name": false, "invalid UTF-8": false, "lone surrogate": false, "name in another case": false},
		"go-json-experiment": {"duplicate name": true, "invalid UTF-8": true, "lone surrogate": true, "name in another case": true},
		"segmentio":          {"duplicate name": false, "invalid UTF-8": false, "lone surrogate": false, "name in another case": true},
	}
	for _, d := range decoders {
		for name, body := range cases {
			var v decEnvelope
			err := d.decode(body, &v)
			strict := err != nil
			if name == "name in another case" {
				strict = v.Method == ""
			}
			if strict != want[d.name][name] {
				t.Errorf("%s, %s: strict %v, recorded %v (err %v)", d.name, name, strict, want[d.name][name], err)
			}
		}
	}
}

func BenchmarkDecodeToolsCall(b *testing.B) {
	for _, d := range decoders {
		b.Run("lib="+d.name, func(b *testing.B) {
			var v decEnvelope
			if err := d.decode(decodeBody, &v); err != nil || v.Params.Name != "echo" || len(v.Params.Arguments) == 0 {
				b.Fatalf("%v %+v", err, v)
			}
			b.ReportAllocs()
			for b.Loop() {
				v = decEnvelope{}
				if err := d.decode(decodeBody, &v); err != nil || v.Params.Name != "echo" {
					b.Fatal(err)
				}
			}
		})
	}
}
