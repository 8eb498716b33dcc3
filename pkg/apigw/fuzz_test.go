package apigw

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

// FuzzDecode: any payload either decodes or is refused, never panics; a
// decoded body is what encoding/json reads from the event; header names
// are canonical.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":"2.0","headers":{"content-type":"application/json","mcp-name":"a\u00e9"},"requestContext":{"http":{"method":"POST"}},"body":"{\"a\":\"\\u00e9\\\"\"}"}`))
	f.Add([]byte(`{"httpMethod":"POST","multiValueHeaders":{"Mcp-Param-X":["1","2"]},"body":null}`))
	f.Add([]byte(`{"version":"2.0","requestContext":{"http":{"method":"POST"}},"isBase64Encoded":true,"body":"eyJhIjoxfQ=="}`))
	f.Add([]byte(`{"version":"2.0","requestContext":{"http":{"method":"POST"},"authorizer":{"jwt":{"claims":{"sub":5}}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, err := Decode(payload)
		if err != nil {
			return
		}
		for k := range r.Header {
			if k != http.CanonicalHeaderKey(k) {
				t.Fatalf("header %q is not canonical", k)
			}
		}
		var ev struct {
			Body            *string `json:"body"`
			IsBase64Encoded bool    `json:"isBase64Encoded"`
		}
		if json.Unmarshal(payload, &ev) != nil || ev.Body == nil {
			return
		}
		want := []byte(*ev.Body)
		if ev.IsBase64Encoded {
			var derr error
			if want, derr = base64.StdEncoding.DecodeString(*ev.Body); derr != nil {
				t.Fatalf("decoded a body that is not base64: %v", errors.Join(derr))
			}
		}
		if string(r.Body) != string(want) {
			t.Fatalf("body %q, encoding/json reads %q", r.Body, want)
		}
	})
}
