package endpoint

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is this module's path; root is its directory, from this
// package's.
const (
	module = "github.com/serverless-mcp/mcp-lambda"
	root   = "../.."
)

// moduleDeps returns every package of the module that pkg imports,
// directly or not, mapped to the chain of imports that reaches it, as
// go/build reads the packages' non-test files for this platform.
func moduleDeps(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	chains := map[string][]string{}
	var visit func(p string, chain []string)
	visit = func(p string, chain []string) {
		bp, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, module+"/"))), 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			if !strings.HasPrefix(imp, module+"/") || chains[imp] != nil {
				continue
			}
			chains[imp] = append(slices.Clone(chain), imp)
			visit(imp, chains[imp])
		}
	}
	visit(pkg, []string{pkg})
	return chains
}

// TestNoSidewaysArrows: the package graph has no arrow from a door to an
// extension, nor from the observer to a door. The doors (pkg/runner,
// pkg/apigw) serve the core and know none of the extensions (claims,
// tasks, quotas, the breaker), which register what they need themselves
// (interceptors, event handlers: runner.Options.Events); the observer
// (pkg/observe) reads what the core reports (the request id included,
// stateless.RequestID), never a door. Imports through other packages
// count; test files do not.
func TestNoSidewaysArrows(t *testing.T) {
	doors := []string{"pkg/runner", "pkg/apigw"}
	extensions := []string{"pkg/claims", "pkg/tasks", "pkg/ratelimit", "pkg/breaker"}
	for _, rule := range []struct {
		from      []string
		forbidden []string
		what      string
	}{
		{doors, extensions, "a door imports an extension"},
		{[]string{"pkg/observe"}, doors, "the observer imports a door"},
	} {
		for _, from := range rule.from {
			deps := moduleDeps(t, module+"/"+from)
			for _, to := range rule.forbidden {
				if chain := deps[module+"/"+to]; chain != nil {
					t.Errorf("%s: %s", rule.what, strings.Join(chain, " -> "))
				}
			}
		}
	}
	// The walk sees what it should: this package composes them all.
	deps := moduleDeps(t, module+"/pkg/endpoint")
	for _, p := range append(append(doors, extensions...), "pkg/observe", "pkg/auth", "pkg/stateless") {
		if deps[module+"/"+p] == nil {
			t.Errorf("pkg/endpoint does not reach %s: the walk is broken", p)
		}
	}
}
