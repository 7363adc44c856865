package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent fails when the checked-in zz_generated_*.go
// files of the root package differ from what the generator makes now: a
// template changed without `go generate`, or a generated file edited by
// hand.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "..")
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%v: run go generate in the repository root", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate in the repository root (go run ./internal/gen/funcs)", name)
		}
	}
	// No generated file is left behind by a template that went away.
	old, err := filepath.Glob(filepath.Join(root, "zz_generated_*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range old {
		if _, ok := files[filepath.Base(path)]; !ok {
			t.Errorf("%s is not generated any more: delete it", path)
		}
	}
}
