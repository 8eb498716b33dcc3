package stateless

import (
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
