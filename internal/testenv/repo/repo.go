// Package repo finds the repository a test or developer target runs in,
// and names the commit it is at, for the harnesses' reports (the chaos
// run, the soak). It is a test tool, not part of the deployed product.
package repo

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const module = "module github.com/serverless-mcp/mcp-lambda\n"

// Root is the directory of the main module's go.mod at or above the
// working directory.
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte(module)) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("repo: not inside the repository")
		}
	}
}

// Describe names the commit root is at, "-dirty" when the tree has
// changes; "an unknown commit" when git cannot say.
func Describe(root string) string {
	cmd := exec.Command("git", "describe", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "an unknown commit"
	}
	return strings.TrimSpace(string(out))
}

// Env returns the environment variable k, or def when it is unset or
// empty.
func Env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
