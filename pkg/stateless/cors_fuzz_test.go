package stateless

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// FuzzPreflight checks, under AllowedOrigins "*" (where every origin
// passes the rule), that an OPTIONS is answered 204, 403 or 405, and
// that what comes back of the peer's strings is only a well-formed
// origin, echoed as sent, and allowed header names that are tokens.
func FuzzPreflight(f *testing.F) {
	f.Add("https://app.example", "POST", "authorization,content-type,mcp-method,mcp-name,mcp-protocol-version")
	f.Add("http://[::1]:5173", "DELETE", "mcp-param-region, x-other")
	f.Add("null", "GET", "")
	f.Add("https://a.example/\r\nSet-Cookie: x", "POST", "content-type\r\nx-evil: 1")
	f.Add("https://a.example, https://b.example", "post", "mcp-param-,(x)")
	s := NewServer(Implementation{Name: "fuzz", Version: "1"}, &Options{SchemaEngine: toolschema.Engine{}, AllowedOrigins: []string{"*"}})
	f.Fuzz(func(t *testing.T, origin, method, headers string) {
		h := http.Header{"Origin": {origin}, "Access-Control-Request-Method": {method}, "Access-Control-Request-Headers": {headers}}
		resp := s.Handle(context.Background(), &Request{Method: http.MethodOptions, Header: h, Host: "api.example.com"})
		switch resp.Status {
		case http.StatusNoContent, http.StatusForbidden, http.StatusMethodNotAllowed:
		default:
			t.Fatalf("status %d", resp.Status)
		}
		for k, vs := range resp.Header {
			for _, v := range vs {
				for i := 0; i < len(v); i++ {
					if c := v[i]; c < ' ' || c == 0x7f {
						t.Fatalf("header %s = %q", k, v)
					}
				}
			}
		}
		// A 405 (an OPTIONS that is no preflight) is an actual answer,
		// which an allowed origin may read too.
		acao, set := resp.Header["Access-Control-Allow-Origin"]
		switch {
		case resp.Status == http.StatusNoContent && !set,
			resp.Status == http.StatusForbidden && set,
			set && (len(acao) != 1 || acao[0] != origin || !serialisedOrigin(origin)):
			t.Fatalf("status %d with Access-Control-Allow-Origin %q for Origin %q", resp.Status, acao, origin)
		}
		if ah := resp.Header.Get("Access-Control-Allow-Headers"); ah != "" {
			for _, name := range strings.Split(ah, ", ") {
				if !validToken(name) || !allowedRequestHeader(name) {
					t.Fatalf("Access-Control-Allow-Headers names %q", name)
				}
			}
		}
	})
}
