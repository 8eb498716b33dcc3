// Package need lets a test that needs a tool `make tools` installs (the
// Lambda runtime emulator, Chromium, the npm test tools) run with only Go
// installed: without the tool it is skipped, saying how to run it, so that
// `go test ./...` on a fresh clone is green. Under make, which sets
// MCP_TESTS_NEED_TOOLS=1, a missing tool fails the test instead: CI skips
// nothing.
package need

import (
	"os"
	"testing"
)

// EnvRequire names the variable that turns a missing tool into a failure.
const EnvRequire = "MCP_TESTS_NEED_TOOLS"

// Tool ends t when what (a tool's name) is missing, err saying why:
// skipped, or failed when EnvRequire is 1.
func Tool(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s: not installed (%v); run make tools", what, err)
	}
	t.Skipf("%s: not installed (%v); make tools installs it, make test runs this test", what, err)
}
