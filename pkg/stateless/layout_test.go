package stateless_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayout holds the package to its shape: no source file over 300
// lines, no type with more than a dozen methods. A request path split by
// step and feature stays readable; a type that grows past a dozen
// methods is doing more than one thing.
func TestLayout(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "\n"); n > 300 {
			t.Errorf("%s has %d lines, over 300", f, n)
		}
		af, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			typ := fd.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				methods[id.Name]++
			}
		}
	}
	for typ, n := range methods {
		if n > 12 {
			t.Errorf("type %s has %d methods, over a dozen", typ, n)
		}
	}
	if len(methods) == 0 {
		t.Fatal("no methods found: the test reads nothing")
	}
}
