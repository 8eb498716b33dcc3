package uritemplate_test

import (
	"maps"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

var _ stateless.URITemplateEngine = uritemplate.Engine{}

// TestMatch: a URI matches a template only when the template can expand
// to it, and the variables are its decoded values.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		template, uri string
		want          map[string]string // nil: no match
	}{
		{"note://{id}", "note://42", map[string]string{"id": "42"}},
		{"note://{id}", "note://a%20b", map[string]string{"id": "a b"}},
		{"note://{id}", "note://a/b", nil},
		{"note://{id}", "file://42", nil},
		{"file:///{+path}", "file:///a/b/c.txt", map[string]string{"path": "a/b/c.txt"}},
		{"test://template/{id}/data", "test://template/7/data", map[string]string{"id": "7"}},
		{"test://template/{id}/data", "test://template/7/data/x", nil},
		{"{/0}", "0", nil}, // the library's matcher alone takes it
		{"x{?a,b}", "x?a=1&b=2", map[string]string{"a": "1", "b": "2"}},
	} {
		match, err := uritemplate.Engine{}.Parse(c.template)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.template, err)
		}
		got, ok := match(c.uri)
		if ok != (c.want != nil) || ok && !maps.Equal(got, c.want) {
			t.Errorf("%q against %q: %v %v, want %v", c.uri, c.template, got, ok, c.want)
		}
	}
	for _, bad := range []string{"note://{id", "note://{}", "note://{=x}", "note://{a:0}"} {
		if _, err := (uritemplate.Engine{}).Parse(bad); err == nil {
			t.Errorf("Parse(%q) took a malformed template", bad)
		}
	}
}
