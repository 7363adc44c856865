package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/atoll-runtime/atoll"
)

func TestFileErrorMatchesFsErrors(t *testing.T) {
	_, err := os.ReadFile(filepath.Join(t.TempDir(), "missing.csv"))
	fe := fileError("read", "missing.csv", err)
	if !errors.Is(fe, fs.ErrNotExist) || errors.Is(fe, fs.ErrPermission) || fe.Error() != "data: read missing.csv: "+err.Error() {
		t.Fatalf("%v: NotExist %v", fe, fe.NotExist)
	}
	// Decoded in the caller, without its cause, it still matches.
	back := &FileError{Op: fe.Op, Path: fe.Path, Message: fe.Message, NotExist: fe.NotExist}
	if !errors.Is(back, fs.ErrNotExist) {
		t.Fatal("a FileError without its cause does not match fs.ErrNotExist")
	}
	if fe := fileError("write", "x", fmt.Errorf("create: %w", fs.ErrPermission)); !errors.Is(fe, fs.ErrPermission) || errors.Is(fe, fs.ErrNotExist) {
		t.Fatalf("%v", fe)
	}
}

func TestColumnAndSchemaErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&ColumnError{Column: "x", Columns: []string{"a", "b"}}, `data: no column "x" (columns: a, b)`},
		{&ColumnError{Op: "sum", Column: "name", Type: "utf8", Supported: "int64, int32"}, `data: sum of column "name" of type utf8 is not supported (int64, int32)`},
		{&SchemaError{What: "Union of datasets", A: "a", B: "b"}, "data: Union of datasets of different schemas: a and b"},
	} {
		if c.err.Error() != c.want || !errors.Is(c.err, atoll.ErrInvalidArgument) {
			t.Errorf("%v, want %q matching ErrInvalidArgument", c.err, c.want)
		}
	}
}
