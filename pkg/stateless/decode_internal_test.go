package stateless

import (
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
		{`{"jsonrpc":0`, mcperr.ParseError},
		{`{"jsonrpc":0,`, mcperr.ParseError},
		{`{"jsonrpc":0}x`, mcperr.ParseError},
		{`{"jsonrpc":0 "x"}`, mcperr.ParseError},
		{`{"method":{}`, mcperr.ParseError},
		{`{"jsonrpc":0,"method":"a","method":"b"}`, mcperr.ParseError},
		{"{\"jsonrpc\":0,\"a\":\"\xff\"}", mcperr.ParseError},
		{`{"jsonrpc":0,"id":1,"method":"x"}`, mcperr.InvalidRequest},
	} {
		_, e := decodeMessage([]byte(tt.body))
		if e == nil || e.Kind() != tt.want {
			t.Errorf("%q: %v, want %s", tt.body, e, tt.want)
		}
	}
}
