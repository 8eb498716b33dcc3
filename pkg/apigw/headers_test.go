package apigw

import (
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestProtocolHeadersAreTheServers: the headers an event's decoding keeps
// are every header the server reads, by any case, in the server's
// canonical form, and the authorization proxy's two; others are dropped
// but Mcp-Param-*, kept canonical.
func TestProtocolHeadersAreTheServers(t *testing.T) {
	if paramPrefix != strings.ToLower(stateless.ParamHeaderPrefix) {
		t.Errorf("paramPrefix %q, the server's %q", paramPrefix, stateless.ParamHeaderPrefix)
	}
	for _, h := range append(stateless.RequestHeaders(), "Cookie", "Sec-Fetch-Site") {
		for _, name := range []string{h, strings.ToLower(h), strings.ToUpper(h)} {
			if got := canonicalProtocolHeader([]byte(name)); got != h {
				t.Errorf("canonicalProtocolHeader(%q) = %q, want %q", name, got, h)
			}
		}
	}
	for name, want := range map[string]string{"User-Agent": "", "X-Forwarded-For": "", "Mcp-Sessionid": "",
		"mcp-param-region": "Mcp-Param-Region", "MCP-PARAM-A": "Mcp-Param-A", strings.Repeat("a", 65): ""} {
		if got := canonicalProtocolHeader([]byte(name)); got != want {
			t.Errorf("canonicalProtocolHeader(%q) = %q, want %q", name, got, want)
		}
	}
}
