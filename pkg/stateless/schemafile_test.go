package stateless

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzSchemaFileCheck holds registration's check of Options.ToolSchemas
// (encoding/json's validator, a UTF-8 check and the core's member scan)
// to the strict decoder's verdict, which the file meets on first use: a
// file passes exactly when it is one valid JSON object with no member
// name twice, and then the names it reports are the decoder's.
func FuzzSchemaFileCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"echo":{"inputSchema":{"type":"object"}}}`, ` {"a":1, "b":[{"a":2}]} `,
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, "{\"a\":\"\xff\"}", `[]`, `{"a":1}x`, `{"a":1}{}`, `null`, `{"a\"b":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		if len(file) > 512 { // longer adds nothing but minimizing time
			return
		}
		g := &generatedSchemas{file: file}
		_, err := g.has("x")
		want := jsontext.Value(file).IsValid() && jsontext.Value(file).Kind() == '{'
		if (err == nil) != want {
			t.Fatalf("%q: check passes %v, the decoder %v", file, err == nil, want)
		}
		if !want {
			return
		}
		d := jsontext.NewDecoder(bytes.NewReader(file))
		names := map[string]bool{}
		d.ReadToken()
		for d.PeekKind() == '"' {
			tok, _ := d.ReadToken()
			names[tok.String()] = true
			d.SkipValue()
		}
		if len(names) != len(g.names) {
			t.Fatalf("%q: names %v, the decoder's %v", file, g.names, names)
		}
		for n := range names {
			if !g.names[n] {
				t.Fatalf("%q: names %v lack the decoder's %q", file, g.names, n)
			}
		}
	})
}
