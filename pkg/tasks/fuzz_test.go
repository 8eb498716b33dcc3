package tasks_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// FuzzDecodeEvent: a worker event is decoded only when it is exactly
// {"mcpTask": <non-empty string>}, as encoding/json reads that string; a
// gateway event (any other member) never is; and what AppendEvent writes
// decodes back to its id.
//
// The seeds are in testdata/fuzz/FuzzDecodeEvent.
func FuzzDecodeEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > 512 {
			return
		}
		id, err := tasks.DecodeEvent(payload)
		if err != nil {
			if id != "" {
				t.Fatalf("error %v with id %q", err, id)
			}
		} else {
			var m map[string]json.RawMessage
			if json.Unmarshal(payload, &m) != nil || len(m) != 1 {
				t.Fatalf("decoded %q from %q, which is not an object of one member", id, payload)
			}
			var want string
			if json.Unmarshal(m["mcpTask"], &want) != nil || want != id || id == "" {
				t.Fatalf("decoded %q from %q; encoding/json reads %q", id, payload, want)
			}
		}
		if s := string(payload); s != "" && utf8.ValidString(s) {
			back, err := tasks.DecodeEvent(tasks.AppendEvent(nil, s))
			if err != nil || back != s {
				t.Fatalf("AppendEvent(%q) decodes to %q, %v", s, back, err)
			}
		}
	})
}
