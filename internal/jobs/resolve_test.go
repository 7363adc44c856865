package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// TestResolveBinary: a bare name is looked up in PATH as a shell would;
// `go run` is refused with how to build and submit instead.
func TestResolveBinary(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "etl")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	goTool := filepath.Join(dir, "go")
	if err := os.WriteFile(goTool, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := ResolveBinary("etl", nil); err != nil || got != prog {
		t.Errorf("ResolveBinary(etl) = %q, %v; want %s from PATH", got, err, prog)
	}
	if got, err := ResolveBinary("./bin/etl", nil); err != nil || got != "./bin/etl" {
		t.Errorf("a path is kept as given: %q, %v", got, err)
	}
	if _, err := ResolveBinary("nosuch", nil); !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "not found in PATH") {
		t.Errorf("ResolveBinary(nosuch): %v", err)
	}
	_, err := ResolveBinary("go", []string{"run", "."})
	if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "go build -o app . && atoll job submit -- ./app") {
		t.Errorf("ResolveBinary(go run .): %v, want the hint to build first", err)
	}
	if got, err := ResolveBinary("go", []string{"version"}); err != nil || got != goTool {
		t.Errorf("the go command as a job of its own: %q, %v", got, err)
	}
}
