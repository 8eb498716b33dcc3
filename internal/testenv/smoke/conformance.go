package smoke

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// needsLoopback are the required scenarios that a deployed endpoint
// cannot pass by design: dns-rebinding-protection checks that a server on
// a loopback URL refuses a foreign Host, which an endpoint behind API
// Gateway (whose Host is the gateway's) is not.
var needsLoopback = []string{"dns-rebinding-protection"}

// conformance runs the official conformance suite's server scenarios
// that revision 2026-07-28 requires against ConformanceURL (the
// conformance fixture, ConformanceFixture=true), but those that need a
// loopback URL, and passes when each passed every check.
func (r *run) conformance(ctx context.Context) {
	const check = "conformance"
	if r.c.ConformanceURL == "" {
		r.skip(check, "no CONFORMANCE_URL")
		return
	}
	tools := r.c.Tools
	if tools == "" {
		tools = "tools"
	}
	suite := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := RunSuite(ctx, tools, &out, &out, args...)
		return out.String(), err
	}
	listing, err := suite("list", "--server", "--requirements", revision)
	required := requiredServerScenarios(listing)
	if len(required) == 0 {
		r.fail(check, "the suite (%s, make tools installs it) listed no required server scenarios: %v", filepath.Join(tools, "node_modules", ".bin", "conformance"), err)
		return
	}
	// The exit status counts the scenarios left out too: the verdict is
	// read from the per-scenario lines.
	out, _ := suite("server", "--url", r.c.ConformanceURL, "--requirements", revision)
	results := ScenarioResults(out)
	var failed, missing []string
	checks := 0
	for _, sc := range required {
		if slices.Contains(needsLoopback, sc) {
			continue
		}
		res, ok := results[sc]
		switch {
		case !ok:
			missing = append(missing, sc)
		case res.Failed > 0:
			failed = append(failed, fmt.Sprintf("%s (%d of %d checks)", sc, res.Failed, res.Passed+res.Failed))
		default:
			checks += res.Passed
		}
	}
	switch {
	case len(failed) > 0:
		names := failed
		if len(names) > 6 {
			names = append(slices.Clip(names[:6]), fmt.Sprintf("and %d more", len(failed)-6))
		}
		r.fail(check, "%d of %d required scenarios failed: %s", len(failed), len(required)-len(needsLoopback), strings.Join(names, ", "))
	case len(missing) > 0:
		r.fail(check, "the suite did not report %s", strings.Join(missing, ", "))
	default:
		r.pass(check, "%d required scenarios of %s, %d checks, none failed (%s needs a loopback URL)",
			len(required)-len(needsLoopback), revision, checks, strings.Join(needsLoopback, ", "))
	}
}

// requiredServerScenarios reads the server scenarios from the suite's
// `list --server --requirements` output.
func requiredServerScenarios(listing string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			in = true
		case in && strings.HasPrefix(line, "  - "):
			out = append(out, strings.TrimPrefix(line, "  - "))
		case in && strings.TrimSpace(line) == "":
			return out
		}
	}
	return out
}

// RunSuite runs the official conformance suite's CLI with args, on the
// Node 22 that tools (the npm tools' directory, which make tools
// installs) provides. make smoke's check and make conformance both run
// it so.
func RunSuite(ctx context.Context, tools string, stdout, stderr io.Writer, args ...string) error {
	bin, err := filepath.Abs(filepath.Join(tools, "node_modules", ".bin"))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "conformance"), args...)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// ScenarioResult is one scenario's line of the suite's output.
type ScenarioResult struct{ Passed, Failed int }

var scenarioLine = regexp.MustCompile(`(?m)^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed`)

// ScenarioResults reads the suite's per-scenario lines, by scenario.
func ScenarioResults(out string) map[string]ScenarioResult {
	res := map[string]ScenarioResult{}
	for _, m := range scenarioLine.FindAllStringSubmatch(out, -1) {
		var r ScenarioResult
		fmt.Sscan(m[2], &r.Passed)
		fmt.Sscan(m[3], &r.Failed)
		res[m[1]] = r
	}
	return res
}
