package stateless

import (
	"bytes"
	"encoding/json"
	"testing"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// A member of the wrong type stops the decoder before the rest of the
// body is read; what follows it must still be JSON for the refusal to be
// an invalid request rather than a parse error.
func TestDecodeMessageWrongTypeThenNotJSON(t *testing.T) {
	for _, tt := range []struct {
		body string
		want mcperr.Kind
	}{
		{`{"jsonrpc":0`, mcperr.KindParseError},
		{`{"jsonrpc":0,`, mcperr.KindParseError},
		{`{"jsonrpc":0}x`, mcperr.KindParseError},
		{`{"jsonrpc":0 "x"}`, mcperr.KindParseError},
		{`{"method":{}`, mcperr.KindParseError},
		{`{"jsonrpc":0,"method":"a","method":"b"}`, mcperr.KindParseError},
		{"{\"jsonrpc\":0,\"a\":\"\xff\"}", mcperr.KindParseError},
		{`{"jsonrpc":0,"id":1,"method":"x"}`, mcperr.KindInvalidRequest},
	} {
		_, e := decodeMessage([]byte(tt.body), nil)
		if e == nil || e.Kind() != tt.want {
			t.Errorf("%q: %v, want %s", tt.body, e, tt.want)
		}
	}
}

// TestDecodeCapabilities: member names match exactly; a capability is
// declared by an object; a member of another type leaves only itself
// undeclared; a name twice declares nothing.
func TestDecodeCapabilities(t *testing.T) {
	tests := []struct {
		raw                                 string
		elicitation, sampling, roots, tasks bool
	}{
		{`{"elicitation":{}}`, true, false, false, false},
		{`{"ELICITATION":{}}`, false, false, false, false},
		{`{"Elicitation":{},"Sampling":{}}`, false, false, false, false},
		{`{"elicitation":{"form":{}},"sampling":{},"roots":{"listChanged":true}}`, true, true, true, false},
		{`{"elicitation":5,"sampling":{}}`, false, true, false, false},
		{`{"sampling":null,"roots":[]}`, false, false, false, false},
		{`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, false, false, false, true},
		{`{"extensions":{"IO.MODELCONTEXTPROTOCOL/TASKS":{}}}`, false, false, false, false},
		{`{"EXTENSIONS":{"io.modelcontextprotocol/tasks":{}}}`, false, false, false, false},
		{`{"sampling":{},"sampling":{}}`, false, false, false, false},
		{``, false, false, false, false},
	}
	for _, tt := range tests {
		c := decodeCapabilities(json.RawMessage(tt.raw))
		_, tasks := c.Extensions[ExtensionTasks]
		if got := (c.Elicitation != nil); got != tt.elicitation || (c.Sampling != nil) != tt.sampling || (c.Roots != nil) != tt.roots || tasks != tt.tasks {
			t.Errorf("%s: elicitation %v, sampling %v, roots %v, tasks %v; want %v %v %v %v", tt.raw,
				c.Elicitation != nil, c.Sampling != nil, c.Roots != nil, tasks, tt.elicitation, tt.sampling, tt.roots, tt.tasks)
		}
	}
}

// TestSpansAreOfTheBody: the raw members a request's decoding keeps (the
// id, the params, the _meta values, a tool's arguments) are slices of the
// body, not copies, and stay what they were after other messages are
// decoded (a decoder that copied into a reused buffer would change them);
// a null member is the bytes null, as jsontext.Value reads it.
func TestSpansAreOfTheBody(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"progressToken":null},"name":"echo","arguments":{"text":"hi"}}}`)
	d, e := decodeMessage(body, nil)
	if e != nil {
		t.Fatal(e)
	}
	p := d.params.(*callToolParams)
	meta := p.Meta
	within := func(name string, v []byte) {
		t.Helper()
		if len(v) == 0 {
			t.Fatalf("%s is empty", name)
		}
		i := bytes.Index(body, v)
		if i < 0 || &body[i] != &v[0] {
			t.Errorf("%s (%s) is not a slice of the body", name, v)
		}
	}
	within("id", d.id)
	within("params", d.rawParams)
	within("protocolVersion", meta.ProtocolVersion)
	within("clientCapabilities", meta.ClientCapabilities)
	within("arguments", p.Arguments)
	if string(meta.ProgressToken) != "null" {
		t.Errorf("a null member is %q, want the bytes null", meta.ProgressToken)
	}
	for range 100 {
		other := []byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"other","arguments":{"text":"overwritten"}}}`)
		if _, e := decodeMessage(other, nil); e != nil {
			t.Fatal(e)
		}
	}
	if string(p.Arguments) != `{"text":"hi"}` || string(d.id) != "7" || string(meta.ClientCapabilities) != `{"elicitation":{}}` {
		t.Errorf("the spans changed after other messages were decoded: %s, %s, %s", p.Arguments, d.id, meta.ClientCapabilities)
	}
}
