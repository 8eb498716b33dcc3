package smoke

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
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
	bin, err := filepath.Abs(filepath.Join(tools, "node_modules", ".bin"))
	if err != nil {
		r.fail(check, "%q", err.Error())
		return
	}
	suite := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "conformance"), args...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	listing, err := suite("list", "--server", "--requirements", revision)
	required := requiredServerScenarios(listing)
	if len(required) == 0 {
		r.fail(check, "the suite (%s, make tools installs it) listed no required server scenarios: %v", filepath.Join(bin, "conformance"), err)
		return
	}
	// The exit status counts the scenarios left out too: the verdict is
	// read from the per-scenario lines.
	out, _ := suite("server", "--url", r.c.ConformanceURL, "--requirements", revision)
	results := scenarioResults(out)
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
		case res.failed > 0:
			failed = append(failed, fmt.Sprintf("%s (%d of %d checks)", sc, res.failed, res.passed+res.failed))
		default:
			checks += res.passed
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

type scenarioResult struct{ passed, failed int }

var scenarioLine = regexp.MustCompile(`(?m)^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed`)

// scenarioResults reads the suite's per-scenario lines.
func scenarioResults(out string) map[string]scenarioResult {
	res := map[string]scenarioResult{}
	for _, m := range scenarioLine.FindAllStringSubmatch(out, -1) {
		var r scenarioResult
		fmt.Sscan(m[2], &r.passed)
		fmt.Sscan(m[3], &r.failed)
		res[m[1]] = r
	}
	return res
}
