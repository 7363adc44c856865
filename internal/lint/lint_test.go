package lint

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sleepAllowed lists the test files (slash paths from the repository root)
// allowed to call time.Sleep. Keep it empty: wait on a condition or a
// channel with a timeout instead.
var sleepAllowed = map[string]bool{}

// pkg is one package directory of the module.
type pkg struct {
	dir        string // slash path relative to the module root ("." for the root)
	importPath string
	bp         *build.Package
}

// modulePackages returns the module root, its path and every package
// directory under it, skipping hidden and underscore directories, testdata
// and vendor (the go command ignores them too).
func modulePackages(t *testing.T) (root, module string, pkgs []pkg) {
	t.Helper()
	root, module = moduleRoot(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module is not ours
			}
		}
		bp, err := build.ImportDir(path, build.ImportComment)
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		}
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		ip := module
		if rel != "." {
			ip += "/" + rel
		}
		pkgs = append(pkgs, pkg{dir: rel, importPath: ip, bp: bp})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("no packages found")
	}
	return root, module, pkgs
}

// moduleRoot walks up from the working directory to go.mod.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(rest), `"`)
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func parse(t *testing.T, fset *token.FileSet, path string, mode parser.Mode) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, mode)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return f
}

// TestPackageDoc: every package has a doc comment "// Package name ..."
// in one of its files (for package main, any doc comment, as Go allows
// "Command foo ..." or a free description).
func TestPackageDoc(t *testing.T) {
	root, _, pkgs := modulePackages(t)
	fset := token.NewFileSet()
	for _, p := range pkgs {
		files := p.bp.GoFiles
		if len(files) == 0 {
			files = p.bp.TestGoFiles // a test-only package
		}
		if len(files) == 0 {
			continue // only external _test files
		}
		found := false
		for _, name := range files {
			f := parse(t, fset, filepath.Join(root, p.dir, name), parser.PackageClauseOnly|parser.ParseComments)
			if f.Doc == nil {
				continue
			}
			if isPackageDoc(f.Doc.Text(), p.bp.Name) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: no package doc comment (// Package %s ...); add one, e.g. in doc.go", p.dir, p.bp.Name)
		}
	}
}

// isPackageDoc reports whether a file's doc comment documents package name:
// "Package name ..." or, for package main, any text.
func isPackageDoc(text, name string) bool {
	fields := strings.Fields(text)
	if name == "main" {
		return len(fields) > 0
	}
	return len(fields) >= 2 && fields[0] == "Package" && strings.TrimRight(fields[1], ".,:;") == name
}

// TestNoSleepInTests: tests wait on conditions, never on fixed sleeps.
func TestNoSleepInTests(t *testing.T) {
	root, _, pkgs := modulePackages(t)
	fset := token.NewFileSet()
	for _, p := range pkgs {
		for _, name := range slices.Concat(p.bp.TestGoFiles, p.bp.XTestGoFiles) {
			rel := pathJoin(p.dir, name)
			if sleepAllowed[rel] {
				continue
			}
			f := parse(t, fset, filepath.Join(root, p.dir, name), parser.SkipObjectResolution)
			for _, pos := range calls(f, "time", "Sleep") {
				t.Errorf("%s:%d: time.Sleep in a test; wait on a condition or channel with a timeout", rel, fset.Position(pos).Line)
			}
		}
	}
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// calls returns the positions of calls to importPath.fn in f, whatever
// name the import has.
func calls(f *ast.File, importPath, fn string) []token.Pos {
	var names []string
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			name := importPath[strings.LastIndex(importPath, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != fn {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(names, id.Name) {
			out = append(out, sel.Pos())
		}
		return true
	})
	return out
}

// isTestHelperPackage reports whether a package exists to help tests (its
// name starts or ends with "test", e.g. internal/testcluster, atolltest),
// so its production files may import "testing".
func isTestHelperPackage(dir string) bool {
	base := dir[strings.LastIndex(dir, "/")+1:]
	return strings.HasPrefix(base, "test") || strings.HasSuffix(base, "test")
}

// TestProductionDoesNotImportTesting: test helpers live in _test.go files
// or in test-helper packages, never in production code.
func TestProductionDoesNotImportTesting(t *testing.T) {
	_, _, pkgs := modulePackages(t)
	for _, p := range pkgs {
		if isTestHelperPackage(p.dir) {
			continue
		}
		for _, imp := range []string{"testing", "testing/quick", "testing/fstest", "testing/iotest", "testing/slogtest", "testing/synctest"} {
			if slices.Contains(p.bp.Imports, imp) {
				t.Errorf("%s: non-test files import %q", p.dir, imp)
			}
		}
	}
}

// TestRootDoesNotImportCmd: the public package atoll must not depend on the
// CLI, directly or through other packages of the module.
func TestRootDoesNotImportCmd(t *testing.T) {
	_, module, pkgs := modulePackages(t)
	byPath := make(map[string]pkg, len(pkgs))
	for _, p := range pkgs {
		byPath[p.importPath] = p
	}
	rootPkg, ok := byPath[module]
	if !ok {
		t.Skip("no root package yet")
	}
	cmd := module + "/cmd"
	// Breadth-first over module-internal imports of non-test files,
	// remembering who imported what to print the chain.
	via := map[string]string{module: ""}
	queue := []pkg{rootPkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range p.bp.Imports {
			if _, seen := via[imp]; seen || !strings.HasPrefix(imp, module+"/") {
				continue
			}
			via[imp] = p.importPath
			if imp == cmd || strings.HasPrefix(imp, cmd+"/") {
				chain := []string{imp}
				for at := p.importPath; at != ""; at = via[at] {
					chain = append(chain, at)
				}
				slices.Reverse(chain)
				t.Errorf("the root package imports %s: %s", imp, strings.Join(chain, " -> "))
				continue
			}
			if q, ok := byPath[imp]; ok {
				queue = append(queue, q)
			}
		}
	}
}

// The checks above must catch what they claim to.
func TestCheckers(t *testing.T) {
	src := `package x_test

import (
	"testing"
	clock "time"
)

func TestX(t *testing.T) { clock.Sleep(1); time.Sleep(2) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls(f, "time", "Sleep"); len(got) != 1 || fset.Position(got[0]).Line != 8 {
		t.Errorf("calls found %v, want the aliased call on line 8 only", got)
	}
	for text, want := range map[string]bool{
		"Package lint holds rules.\n": true,
		"Package lint\n":              true,
		"Package linter does x\n":     false,
		"Lint holds rules\n":          false,
	} {
		if isPackageDoc(text, "lint") != want {
			t.Errorf("isPackageDoc(%q) != %v", text, want)
		}
	}
	if !isPackageDoc("Quickstart shows atoll.\n", "main") || isPackageDoc("", "main") {
		t.Error("package main doc rule")
	}
	for dir, want := range map[string]bool{"internal/testcluster": true, "atolltest": true, "internal/pss": false, ".": false} {
		if isTestHelperPackage(dir) != want {
			t.Errorf("isTestHelperPackage(%q) != %v", dir, want)
		}
	}
}
