package workerproto

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestHostCoreIsPure keeps the host's core (hostcore.go) a state machine:
// it imports nothing that does I/O or concurrency, nothing of protoactor
// or of the connection, reads no clock, arms no timer and starts no
// goroutine. The host actor (host.go) does all of that.
func TestHostCoreIsPure(t *testing.T) {
	allowed := map[string]bool{"slices": true, "time": true, "github.com/atoll-runtime/atoll/atollpb": true,
		"github.com/atoll-runtime/atoll/internal/registry": true}
	forbiddenTime := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "hostcore.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); !allowed[path] {
			t.Errorf("%s imports %s", fset.Position(imp.Pos()), path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			t.Errorf("%s: the core starts a goroutine", fset.Position(n.Pos()))
		case *ast.SelectorExpr:
			if pkg, ok := n.X.(*ast.Ident); ok && pkg.Name == "time" && forbiddenTime[n.Sel.Name] {
				t.Errorf("%s: the core calls time.%s (time is an input)", fset.Position(n.Pos()), n.Sel.Name)
			}
		}
		return true
	})
}
