package smoke

import (
	"bytes"
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// verdictsOf runs the checks with c and returns the verdicts by check.
func verdictsOf(t *testing.T, c Config) (map[string]Verdict, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	by := map[string]Verdict{}
	for _, v := range Run(ctx, c, &out) {
		by[v.Check] = v
	}
	return by, out.String()
}

// TestUnreachableFailsOnce: an endpoint that gives no answer fails the
// first check, saying so, and skips every check that would call it again,
// rather than failing each for the same reason.
func TestUnreachableFailsOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // nothing listens there now
	by, out := verdictsOf(t, Config{URL: url, Token: "t"})
	if v := by["unauthenticated"]; v.Result != "FAIL" || !strings.Contains(v.Detail, "no answer") {
		t.Errorf("unauthenticated: %v", v)
	}
	if n := strings.Count(out, "FAIL"); n != 1 {
		t.Errorf("%d failures, want 1:\n%s", n, out)
	}
	for _, c := range []string{"discover", "tools-list", "missing-meta", "unsupported-version", "keyed-call", "keyed-replay"} {
		if by[c].Result != "SKIP" {
			t.Errorf("%s: %v, want skipped", c, by[c])
		}
	}
}

// TestForkNamesItsTools: against a function without the demo's tools (a
// fork's), the checks that would call them are skipped, naming the
// settings that name the fork's own, and nothing fails.
func TestForkNamesItsTools(t *testing.T) {
	srv := stateless.NewServer(stateless.Implementation{Name: "fork", Version: "1"}, nil)
	stateless.AddTool(srv, &stateless.Tool{Name: "count_add"}, func(context.Context, *stateless.ToolRequest, struct{}) (*stateless.CallToolResult, map[string]int, error) {
		return nil, map[string]int{"count": 1}, nil
	})
	hs := httptest.NewServer(&stateless.HTTPHandler{Server: srv})
	defer hs.Close()
	by, out := verdictsOf(t, Config{URL: hs.URL + "/mcp", StreamURL: hs.URL + "/mcp"})
	if v := by["keyed-call"]; v.Result != "SKIP" || !strings.Contains(v.Detail, "KEYED_TOOL=") || !strings.Contains(v.Detail, "notes_add") {
		t.Errorf("keyed-call: %v", v)
	}
	if v := by["streaming"]; v.Result != "SKIP" || !strings.Contains(v.Detail, "PROGRESS_TOOL=") {
		t.Errorf("streaming: %v", v)
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("a failure:\n%s", out)
	}
	// Named, the fork's own tool is called.
	by, _ = verdictsOf(t, Config{URL: hs.URL + "/mcp", KeyedTool: "count_add", KeyedArgs: "{}"})
	if v := by["keyed-call"]; v.Result != "PASS" {
		t.Errorf("keyed-call with KEYED_TOOL: %v", v)
	}
}
