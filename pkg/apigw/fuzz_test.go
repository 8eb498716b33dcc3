package apigw

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"net/http"
	"strings"
	"testing"
)

// fuzzing reports whether this process runs generated inputs for go test
// -fuzz (a fuzz worker), not the seed corpus under go test.
func fuzzing() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// maxFuzzPayload bounds the events FuzzDecode looks at while fuzzing (the
// seeds are under 200 bytes): a longer generated event that brings new
// coverage through a per-byte loop is minimized for up to a minute, with
// no executions counted meanwhile, as pkg/stateless's fuzz targets found.
const maxFuzzPayload = 512

// FuzzDecode: any payload either decodes or is refused, never panics; a
// decoded body is what encoding/json reads from the event; header names
// are canonical.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":"2.0","headers":{"content-type":"application/json","mcp-name":"a\u00e9"},"requestContext":{"http":{"method":"POST"}},"body":"{\"a\":\"\\u00e9\\\"\"}"}`))
	f.Add([]byte(`{"httpMethod":"POST","multiValueHeaders":{"Mcp-Param-X":["1","2"]},"body":null}`))
	f.Add([]byte(`{"version":"2.0","requestContext":{"http":{"method":"POST"}},"isBase64Encoded":true,"body":"eyJhIjoxfQ=="}`))
	f.Add([]byte(`{"version":"2.0","requestContext":{"http":{"method":"POST"},"authorizer":{"jwt":{"claims":{"sub":5}}}}}`))
	f.Add([]byte(`{"version":"2.0","requestContext":{"requestId":"r\u0031","http":{"method":"POST"},"authorizer":{"jwt":{"claims":{"iss":"https://i","sub":"anonymous"}}}}}`))
	f.Add([]byte(`{"version":"2.0","requestContext":{"http":{"method":"POST"},"authorizer":{"lambda":{"principalId":7,"sub":"s"}}}}`))
	f.Add([]byte(`{"httpMethod":"POST","requestContext":{"authorizer":{"principalId":"a","PrincipalId":"b","integrationLatency":0}}}`))
	f.Add([]byte(`{"httpMethod":"POST","requestContext":{"identity":{"userArn":"arn:aws:iam::1:role/r","accessKey":"A"},"Identity":null}}`))
	f.Add([]byte(`{"version":"2.0","headers":{"x-forwarded-for":"203.0.113.9"},"requestContext":{"http":{"method":"POST","sourceIp":"198.51.100.7"}}}`))
	f.Add([]byte(`{"httpMethod":"POST","requestContext":{"identity":{"sourceIp":"2001:db8::1"}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if fuzzing() && len(payload) > maxFuzzPayload {
			return
		}
		r, err := Decode(payload)
		if err != nil {
			return
		}
		// A principal is namespaced, never the anonymous caller's, and an
		// unidentified request has none.
		if r.Unidentified && r.Principal != "" {
			t.Fatalf("unidentified with principal %q", r.Principal)
		}
		if p := r.Principal; p != "" && !strings.HasPrefix(p, "jwt:") && !strings.HasPrefix(p, "iam:") && !strings.HasPrefix(p, "authorizer:") {
			t.Fatalf("principal %q is not namespaced", p)
		}
		// The request context is read by exact names: what encoding/json
		// reads from the member named exactly requestId.
		var rc struct {
			RequestContext map[string]json.RawMessage `json:"requestContext"`
		}
		if json.Unmarshal(payload, &rc) == nil {
			var id string
			if raw, ok := rc.RequestContext["requestId"]; ok && string(raw) != "null" && json.Unmarshal(raw, &id) == nil && r.RequestID != id {
				t.Fatalf("request id %q, encoding/json reads %q", r.RequestID, id)
			}
		}
		// An address is an IP address in its canonical form, or none.
		if a := r.Address; a != "" {
			if ip := net.ParseIP(a); ip == nil || ip.String() != a {
				t.Fatalf("address %q is not a canonical IP address", a)
			}
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
