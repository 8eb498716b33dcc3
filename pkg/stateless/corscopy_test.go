package stateless

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCORSCopyIsTheLists: the server's own copy of the CORS lists, which
// it answers from, is written out rather than built at start; it must
// say what the exported lists say.
func TestCORSCopyIsTheLists(t *testing.T) {
	if !slices.Equal(cors.allowMethods, CORSAllowMethods) || cors.methods != strings.Join(CORSAllowMethods, ", ") {
		t.Errorf("methods %q / %q, the list %q", cors.allowMethods, cors.methods, CORSAllowMethods)
	}
	if !slices.Equal(cors.allowHeaders, CORSAllowHeaders) {
		t.Errorf("request headers %q, the list %q", cors.allowHeaders, CORSAllowHeaders)
	}
	if cors.expose != strings.Join(CORSExposeHeaders, ", ") {
		t.Errorf("exposed headers %q, the list %q", cors.expose, CORSExposeHeaders)
	}
	if cors.maxAge != strconv.Itoa(CORSMaxAge) {
		t.Errorf("max age %q, the constant %d", cors.maxAge, CORSMaxAge)
	}
}
