package stateless

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Values the package writes out rather than builds at start, so that a
// cold start runs no code for them, held to what they copy.

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

// TestMetricLimitErrorsNameTheLimits: the errors of the metric limits are
// written out rather than formatted at start; they must name the limits
// the code enforces.
func TestMetricLimitErrorsNameTheLimits(t *testing.T) {
	for _, c := range []struct {
		err   error
		limit int
	}{{errTooManyMetrics, MaxMetrics}, {errTooManyValues, MaxMetricValues}} {
		if want := " at most " + strconv.Itoa(c.limit) + " "; !strings.Contains(c.err.Error(), want) {
			t.Errorf("%q does not say %q", c.err, want)
		}
	}
}
