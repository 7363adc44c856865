package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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

// In this package's test binary, which its worker processes run too, a
// CSV line of too few fields (a file read half written) counts as an
// error that may pass: no test can make a real file system fail with EIO
// on cue, and a file served half written, then whole, can (the read
// retry tests).
func init() { transientCauses = append(transientCauses, csv.ErrFieldCount) }

// TestFileErrorTransient: a FileError matches ErrTransient when its cause
// is a system error that may pass, after it travels too; a missing file,
// a permission, a parse error do not.
func TestFileErrorTransient(t *testing.T) {
	for _, c := range []struct {
		cause error
		want  bool
	}{
		{&fs.PathError{Op: "read", Path: "a.csv", Err: syscall.EIO}, true},
		{fmt.Errorf("parquet: reading page: %w", syscall.ETIMEDOUT), true},
		{&fs.PathError{Op: "open", Path: "a.csv", Err: syscall.ESTALE}, true},
		{os.ErrDeadlineExceeded, true},
		{&fs.PathError{Op: "open", Path: "a.csv", Err: syscall.ENOENT}, false},
		{&fs.PathError{Op: "open", Path: "a.csv", Err: syscall.EACCES}, false},
		{errors.New("parquet: invalid footer"), false},
	} {
		fe := fileError("read", "a.csv", c.cause)
		back := &FileError{Op: fe.Op, Path: fe.Path, Message: fe.Message, Transient: fe.Transient}
		if errors.Is(fe, ErrTransient) != c.want || errors.Is(back, ErrTransient) != c.want || fe.Transient != c.want {
			t.Errorf("%v: matches ErrTransient %v, decoded %v, want %v", c.cause, errors.Is(fe, ErrTransient), errors.Is(back, ErrTransient), c.want)
		}
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
