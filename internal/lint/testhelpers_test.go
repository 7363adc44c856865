package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// sharedHelpers are test helpers internal/testutil has: a package's tests
// use those, never a copy of their own.
var sharedHelpers = map[string]string{
	"eventually": "testutil.Eventually", "waitFor": "testutil.Eventually", "waitUntil": "testutil.Eventually",
	"syncBuffer": "testutil.LogBuffer", "syncWriter": "testutil.LogBuffer", "lockedBuffer": "testutil.LogBuffer",
}

// TestOneHelperPerNeed: tests wait with testutil.Eventually, capture logs
// with testutil.LogBuffer and check for leaked goroutines with
// testutil.VerifyNoLeaks, not with copies of their own.
func TestOneHelperPerNeed(t *testing.T) {
	root, _, pkgs := modulePackages(t)
	fset := token.NewFileSet()
	for _, p := range pkgs {
		if p.dir == "internal/testutil" {
			continue
		}
		for _, name := range slices.Concat(p.bp.TestGoFiles, p.bp.XTestGoFiles) {
			rel := pathJoin(p.dir, name)
			f := parse(t, fset, filepath.Join(root, p.dir, name), parser.SkipObjectResolution)
			for _, d := range f.Decls {
				var ident string
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						ident = d.Name.Name
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok {
							ident = ts.Name.Name
						}
					}
				}
				if use, ok := sharedHelpers[ident]; ok {
					t.Errorf("%s: %s is a copy of %s: use that", rel, ident, use)
				}
			}
			for _, pos := range calls(f, "go.uber.org/goleak", "VerifyTestMain") {
				t.Errorf("%s:%d: goleak.VerifyTestMain: use testutil.VerifyNoLeaks (one list of goroutines that are not leaks)", rel, fset.Position(pos).Line)
			}
		}
	}
}
