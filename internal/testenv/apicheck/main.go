// Command apicheck holds the module's public API to the last release's
// (make api): it runs apidiff (golang.org/x/exp/cmd/apidiff) against the
// newest baseline in api/ (api/vX.Y.Z.apidiff, the export data of the
// module as released), prints every incompatible change it finds, and
// fails unless each one is named in CHANGELOG.md's Unreleased section, as
// docs/compatibility.md asks. -write VERSION writes the baseline of a
// release instead.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const module = "github.com/serverless-mcp/mcp-lambda"

func main() {
	apidiff := flag.String("apidiff", "apidiff", "the apidiff command")
	dir := flag.String("dir", "api", "the baselines' directory")
	changelog := flag.String("changelog", "CHANGELOG.md", "the changelog")
	write := flag.String("write", "", "write the baseline of this release (vX.Y.Z) instead of checking")
	flag.Parse()
	if err := run(*apidiff, *dir, *changelog, *write); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run(apidiff, dir, changelog, write string) error {
	if write != "" {
		if _, ok := release(write); !ok {
			return fmt.Errorf("-write %q: want a release version such as v0.2.0", write)
		}
		out := filepath.Join(dir, write+".apidiff")
		if _, err := apidiffRun(apidiff, "-m", "-w", out, module); err != nil {
			return err
		}
		fmt.Println("api: wrote", out)
		return nil
	}
	base, version, err := newestBaseline(dir)
	if err != nil {
		return err
	}
	out, err := apidiffRun(apidiff, "-m", "-incompatible", base, module)
	if err != nil {
		return err
	}
	changes := incompatible(out)
	log, err := os.ReadFile(changelog)
	if err != nil {
		return err
	}
	unreleased := unreleasedSection(string(log))
	var unnamed []string
	for _, c := range changes {
		fmt.Println("api: incompatible with", version+":", c.line)
		if !strings.Contains(unreleased, c.symbol) {
			unnamed = append(unnamed, c.symbol)
		}
	}
	if len(unnamed) > 0 {
		return fmt.Errorf("%d incompatible change(s) since %s not named in %s's Unreleased section (docs/compatibility.md): %s",
			len(unnamed), version, changelog, strings.Join(unnamed, ", "))
	}
	fmt.Printf("api: %d incompatible change(s) since %s, each named in %s\n", len(changes), version, changelog)
	return nil
}

// apidiffRun runs apidiff, its own notes about internal packages dropped.
func apidiffRun(apidiff string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(apidiff, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("apidiff %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// newestBaseline is the baseline of the highest release in dir.
func newestBaseline(dir string) (path, version string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "v*.apidiff"))
	if err != nil {
		return "", "", err
	}
	var versions []string
	for _, f := range files {
		v := strings.TrimSuffix(filepath.Base(f), ".apidiff")
		if _, ok := release(v); ok {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return "", "", errors.New("no baseline (api/vX.Y.Z.apidiff): make api-baseline RELEASE=vX.Y.Z writes one at a release")
	}
	slices.SortFunc(versions, func(a, b string) int {
		x, _ := release(a)
		y, _ := release(b)
		return slices.Compare(x[:], y[:])
	})
	v := versions[len(versions)-1]
	return filepath.Join(dir, v+".apidiff"), v, nil
}

type change struct{ line, symbol string }

// changeLine is one of apidiff's: "- ./pkg/breaker.Knob: removed".
var changeLine = regexp.MustCompile(`^- \./([^:]+): (.+)$`)

// incompatible reads apidiff -incompatible's lines.
func incompatible(out string) []change {
	var cs []change
	for _, l := range strings.Split(out, "\n") {
		// The public API is pkg/...: functions/ are commands.
		if m := changeLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil && strings.HasPrefix(m[1], "pkg/") {
			cs = append(cs, change{line: m[1] + ": " + m[2], symbol: m[1]})
		}
	}
	return cs
}

// unreleasedSection is the changelog's "## Unreleased" section.
func unreleasedSection(log string) string {
	_, rest, ok := strings.Cut(log, "\n## Unreleased")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// release reads a release version vMAJOR.MINOR.PATCH.
func release(v string) ([3]int, bool) {
	var n [3]int
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if !strings.HasPrefix(v, "v") || len(parts) != 3 {
		return n, false
	}
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || strconv.Itoa(x) != p {
			return n, false
		}
		n[i] = x
	}
	return n, true
}
