package lint

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packageTableSection is the heading of ARCHITECTURE.md's section whose
// tables list the module's packages.
const packageTableSection = "## Packages"

// packageGroups are the directories whose packages the table may list as
// one row, "cmd/*" or "samples/*", instead of one row each.
var packageGroups = []string{"cmd", "samples"}

// TestArchitecturePackageTable: the package table of ARCHITECTURE.md
// names every package `go list ./...` prints, and nothing else. A row's
// first cell starts with the package's path relative to the module root
// in backquotes (`internal/owner`), `atoll` for the root package; the
// packages under cmd/ and samples/ may be one row each, `cmd/*` and
// `samples/*`.
func TestArchitecturePackageTable(t *testing.T) {
	root, module := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := packageTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range checkPackageTable(rows, listPackages(t, root, module)) {
		t.Error("ARCHITECTURE.md: " + msg)
	}
}

// listPackages is what `go list ./...` prints, relative to the module
// ("." for the root); without a go command, the same walk the other
// rules use (which follows the go command's rules).
func listPackages(t *testing.T, root, module string) []string {
	t.Helper()
	var paths []string
	if gobin, err := exec.LookPath("go"); err == nil {
		cmd := exec.Command(gobin, "list", "./...")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list ./...: %v", err)
		}
		paths = append(paths, strings.Fields(string(out))...)
	} else {
		_, _, pkgs := modulePackages(t)
		for _, p := range pkgs {
			paths = append(paths, p.importPath)
		}
	}
	var rel []string
	for _, p := range paths {
		switch {
		case p == module:
			rel = append(rel, ".")
		case strings.HasPrefix(p, module+"/"):
			rel = append(rel, strings.TrimPrefix(p, module+"/"))
		default:
			t.Errorf("go list printed %s, outside module %s", p, module)
		}
	}
	return rel
}

// packageTable returns the package of every table row in the package
// table section of doc, in order: the first backquoted word of the row's
// first cell, "." for `atoll`.
func packageTable(doc []byte) ([]string, error) {
	var rows []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			in = line == packageTableSection
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		first = strings.TrimSpace(first)
		if !strings.HasPrefix(first, "`") {
			continue // a header or separator row
		}
		name, _, ok := strings.Cut(first[1:], "`")
		if !ok {
			continue
		}
		if name == "atoll" {
			name = "."
		}
		rows = append(rows, name)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errNoTable
	}
	return rows, nil
}

type lintError string

func (e lintError) Error() string { return string(e) }

const errNoTable = lintError(`no package table: a "` + packageTableSection + `" section with table rows whose first cell starts with a backquoted package path`)

// checkPackageTable compares the table's rows with the listed packages
// and describes each difference.
func checkPackageTable(rows, listed []string) []string {
	var msgs []string
	inGroup := func(p string) (string, bool) {
		for _, g := range packageGroups {
			if strings.HasPrefix(p, g+"/") {
				return g + "/*", true
			}
		}
		return "", false
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			msgs = append(msgs, "the package table lists "+show(r)+" twice")
		}
		seen[r] = true
	}
	for _, p := range listed {
		if seen[p] {
			continue
		}
		if g, ok := inGroup(p); ok && seen[g] {
			continue
		}
		msgs = append(msgs, "package "+show(p)+" is missing from the package table")
	}
	for _, r := range rows {
		if g, ok := strings.CutSuffix(r, "/*"); ok {
			if !slices.Contains(packageGroups, g) {
				msgs = append(msgs, "the package table lists the group "+r+"; only "+strings.Join(packageGroups, "/*, ")+"/* may be groups")
				continue
			}
			if !slices.ContainsFunc(listed, func(p string) bool { return strings.HasPrefix(p, g+"/") }) {
				msgs = append(msgs, "the package table lists "+r+", but no package is under "+g+"/")
			}
			continue
		}
		if !slices.Contains(listed, r) {
			msgs = append(msgs, "the package table lists "+show(r)+", which go list ./... does not print")
		}
	}
	return msgs
}

func show(p string) string {
	if p == "." {
		return "atoll (the root)"
	}
	return p
}

// The package table check must catch what it claims to.
func TestPackageTableChecker(t *testing.T) {
	doc := []byte("# x\n\n## Packages\n\n| package | owns |\n|---|---|\n| `atoll` (root) | the SDK |\n| `internal/owner` | refs |\n| `samples/*` | samples |\n| `internal/gone` | nothing |\n| `internal/owner` | twice |\n\n## Later\n\n| `internal/ignored` | x |\n")
	rows, err := packageTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "internal/owner", "samples/*", "internal/gone", "internal/owner"}; !slices.Equal(rows, want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
	got := checkPackageTable(rows, []string{".", "internal/owner", "internal/raylet", "samples/sort", "cmd/atoll"})
	want := []string{
		"the package table lists internal/owner twice",
		"package internal/raylet is missing from the package table",
		"package cmd/atoll is missing from the package table",
		"the package table lists internal/gone, which go list ./... does not print",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := packageTable([]byte("## Packages\n\nno table\n")); err == nil {
		t.Error("a section without a table passed")
	}
}
