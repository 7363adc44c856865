package raylet

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCoreIsPure keeps the Core a state machine (core*.go): it imports
// nothing that does I/O or concurrency, creates no context, reads no
// clock, arms no timer, starts no goroutine, and uses nothing of
// protoactor but the PID type it carries for the shell. The shell
// (raylet.go, shell.go) does all of that.
func TestCoreIsPure(t *testing.T) {
	forbiddenImports := map[string]bool{
		"context": true, "os": true, "io": true, "net": true, "sync": true, "sync/atomic": true, "math/rand": true,
		"math/rand/v2": true, "crypto/rand": true, "github.com/atoll-runtime/atoll/internal/telemetry": true,
		"github.com/atoll-runtime/atoll/internal/workerconn": true,
	}
	forbiddenTime := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	files, err := filepath.Glob("core*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); forbiddenImports[path] {
				t.Errorf("%s imports %s", fset.Position(imp.Pos()), path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: the core starts a goroutine", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				pkg, ok := n.X.(*ast.Ident)
				switch {
				case !ok:
				case pkg.Name == "time" && forbiddenTime[n.Sel.Name]:
					t.Errorf("%s: the core calls time.%s (time is an input)", fset.Position(n.Pos()), n.Sel.Name)
				case pkg.Name == "actor" && n.Sel.Name != "PID":
					t.Errorf("%s: the core uses actor.%s (only the shell talks to actors)", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked %d core files; the glob is wrong", checked)
	}
}
