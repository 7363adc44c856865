package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pureCores are the state machines of the runtime: the files (globs from
// the module root) that decide, while an actor around them does the I/O.
// Each takes time as an input and returns what to do; see ARCHITECTURE.md,
// "Who owns which state".
var pureCores = []string{
	"internal/owner/*.go",          // owner.Table
	"internal/raylet/core*.go",     // raylet.Core
	"internal/cluster/forward*.go", // cluster.Forwarder
	"internal/objectstore/store*.go",
	"internal/objectstore/spill_picker.go",
	"amm/*.go",                         // the AMM's policies
	"internal/workerproto/hostcore.go", // workerproto.HostCore
	"internal/placement/*.go",          // placement.Manager, Schedule
	"internal/autoscaler/policy.go",    // autoscaler.Decide
}

// TestCoresArePure keeps those files state machines: they import nothing
// that does I/O or concurrency, create no context, read no clock, arm no
// timer, start no goroutine, and use nothing of protoactor but the PID
// type they carry for their shells.
func TestCoresArePure(t *testing.T) {
	root, _ := moduleRoot(t)
	forbiddenImports := map[string]bool{
		"context": true, "os": true, "io": true, "net": true, "sync": true, "sync/atomic": true, "math/rand": true,
		"math/rand/v2": true, "crypto/rand": true, "github.com/nats-io/nats.go": true,
		"github.com/atoll-runtime/atoll/internal/telemetry": true, "github.com/atoll-runtime/atoll/internal/workerconn": true,
	}
	forbiddenTime := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	fset := token.NewFileSet()
	for _, glob := range pureCores {
		files, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			checked++
			checkPure(t, fset, name, forbiddenImports, forbiddenTime)
		}
		if checked == 0 {
			t.Errorf("%s matches no file: a core moved, update pureCores", glob)
		}
	}
}

func checkPure(t *testing.T, fset *token.FileSet, name string, forbiddenImports, forbiddenTime map[string]bool) {
	t.Helper()
	f := parse(t, fset, name, parser.SkipObjectResolution)
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); forbiddenImports[path] {
			t.Errorf("%s imports %s", fset.Position(imp.Pos()), path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			t.Errorf("%s: a core starts a goroutine", fset.Position(n.Pos()))
		case *ast.SelectorExpr:
			pkg, ok := n.X.(*ast.Ident)
			switch {
			case !ok:
			case pkg.Name == "time" && forbiddenTime[n.Sel.Name]:
				t.Errorf("%s: a core calls time.%s (time is an input)", fset.Position(n.Pos()), n.Sel.Name)
			case pkg.Name == "actor" && n.Sel.Name != "PID":
				t.Errorf("%s: a core uses actor.%s (only its shell talks to actors)", fset.Position(n.Pos()), n.Sel.Name)
			}
		}
		return true
	})
}
