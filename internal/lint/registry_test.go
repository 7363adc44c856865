package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestOneRegistry: what a program registers by name lives in
// internal/registry (a registry.Kind per namespace), not in a package's
// own map of names under a mutex.
func TestOneRegistry(t *testing.T) {
	root, _, pkgs := modulePackages(t)
	fset := token.NewFileSet()
	for _, p := range pkgs {
		if p.dir == "internal/registry" {
			continue
		}
		for _, name := range p.bp.GoFiles {
			rel := pathJoin(p.dir, name)
			f := parse(t, fset, filepath.Join(root, p.dir, name), parser.SkipObjectResolution)
			for _, v := range lockedNameTables(f) {
				t.Errorf("%s:%d: %s is a table of names under a mutex; declare a kind of internal/registry (registry.NewKind) instead",
					rel, fset.Position(v.Pos()).Line, v.Name)
			}
		}
	}
}

// lockedNameTables returns f's package-level variables of a struct type
// written in place (var x struct{...}, var x = struct{...}{...}) with a
// sync.Mutex or sync.RWMutex field and a map[string]... field: the shape
// of a registry kept by hand.
func lockedNameTables(f *ast.File) []*ast.Ident {
	var syncNames []string
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "sync" {
			name := "sync"
			if imp.Name != nil {
				name = imp.Name.Name
			}
			syncNames = append(syncNames, name)
		}
	}
	if len(syncNames) == 0 {
		return nil
	}
	var out []*ast.Ident
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			st, _ := vs.Type.(*ast.StructType)
			if st == nil && len(vs.Values) == 1 {
				if cl, ok := vs.Values[0].(*ast.CompositeLit); ok {
					st, _ = cl.Type.(*ast.StructType)
				}
			}
			if st != nil && hasMutexAndNameMap(st, syncNames) {
				out = append(out, vs.Names...)
			}
		}
	}
	return out
}

func hasMutexAndNameMap(st *ast.StructType, syncNames []string) bool {
	mutex, names := false, false
	for _, fld := range st.Fields.List {
		switch ty := fld.Type.(type) {
		case *ast.SelectorExpr:
			if id, ok := ty.X.(*ast.Ident); ok && slices.Contains(syncNames, id.Name) && (ty.Sel.Name == "Mutex" || ty.Sel.Name == "RWMutex") {
				mutex = true
			}
		case *ast.MapType:
			if id, ok := ty.Key.(*ast.Ident); ok && id.Name == "string" {
				names = true
			}
		}
	}
	return mutex && names
}

// The check finds the shape graph and data had before they moved onto
// internal/registry, and leaves a mutex without a map of names alone.
func TestOneRegistryChecker(t *testing.T) {
	src := `package x

import (
	"sync"
	s2 "sync"
)

var funcs = struct {
	sync.RWMutex
	m map[string]int
}{m: map[string]int{}}

var byName struct {
	mu s2.Mutex
	m  map[string]any
}

var cache struct {
	sync.Mutex
	xs []int64
}

var ids = struct {
	sync.Mutex
	m map[int]string
}{}
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range lockedNameTables(f) {
		got = append(got, id.Name)
	}
	if len(got) != 2 || got[0] != "funcs" || got[1] != "byName" {
		t.Errorf("lockedNameTables found %v, want [funcs byName]", got)
	}
}
