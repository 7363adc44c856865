package data_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// quotaError is a registered error type a row function returns.
type quotaError struct{ ID int64 }

func (e *quotaError) Error() string { return fmt.Sprintf("row %d over quota", e.ID) }

func init() { atoll.RegisterError[*quotaError]() }

var (
	overQuota = data.RegisterRowFunc("test.overQuota", func(_ context.Context, r data.Row) (data.Row, error) {
		if id := r["id"].(int64); id == 2 {
			return nil, fmt.Errorf("checking: %w", &quotaError{ID: id})
		}
		return r, nil
	})
	panics = data.RegisterPredicate("test.panics", func(_ context.Context, r data.Row) (bool, error) {
		if r["id"].(int64) == 1 {
			panic("no predicate for 1")
		}
		return true, nil
	})
)

// lateRowFunc registers a function in the driver only, as a program
// that registers after atoll.Init does: worker processes never know it.
var lateRowFunc = sync.OnceValue(func() *data.RowFunc {
	return data.RegisterRowFunc("test.late", func(_ context.Context, r data.Row) (data.Row, error) { return r, nil })
})

// The errors of tasks that ran in worker processes are typed in the
// driver: errors.As and errors.Is see through the TaskError.
func TestErrorsFromWorkers(t *testing.T) {
	// A file where the last case writes a directory. Made before start,
	// so that its removal comes after Shutdown: the write's other tasks
	// may still run when the first one's error returns, and one that
	// starts after the file is gone makes the directory (and writes
	// into it) while the removal runs.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := start(t)
	count := func(name string, ds *data.Dataset) error {
		t.Helper()
		_, err := ds.Count(ctx)
		if !errors.Is(err, atoll.ErrTask) {
			t.Fatalf("%s: %v, want a TaskError", name, err)
		}
		return err
	}

	err := count("map", data.Range(4).Map(overQuota))
	var fe *data.FunctionError
	if !errors.As(err, &fe) || fe.Func != "test.overQuota" || fe.Op != "map" || fe.Panicked || !errors.Is(err, data.ErrFunctionFailed) {
		t.Fatalf("map: %v, FunctionError %+v", err, fe)
	}
	var qe *quotaError
	if !errors.As(err, &qe) || qe.ID != 2 {
		t.Fatalf("map: the function's own error is lost: %v", err)
	}

	err = count("filter", data.Range(4).FilterFunc(panics))
	var te *atoll.TaskError
	if !errors.As(err, &fe) || fe.Func != "test.panics" || fe.Op != "filter" || !fe.Panicked || fe.Message != "no predicate for 1" {
		t.Fatalf("filter: %v, FunctionError %+v", err, fe)
	}
	if !errors.As(err, &te) || !strings.Contains(te.RemoteStack, "data_test") {
		t.Fatalf("filter: the TaskError does not show where the function panicked: %+v", te)
	}

	// a column the plan lacks is found before any task runs
	_, err = data.Range(4).Select("nope").Count(ctx)
	var ce *data.ColumnError
	if !errors.As(err, &ce) || ce.Column != "nope" || !slices.Equal(ce.Columns, []string{"id"}) || !errors.Is(err, atoll.ErrInvalidArgument) ||
		errors.Is(err, atoll.ErrTask) {
		t.Fatalf("select: %v, ColumnError %+v", err, ce)
	}
	// after a registered function, the schema is known in the task only
	err = count("select after map", data.Range(4).Map(square).Select("nope"))
	if !errors.As(err, &ce) || ce.Column != "nope" {
		t.Fatalf("select after map: %v, ColumnError %+v", err, ce)
	}

	err = count("late", data.Range(4).Map(lateRowFunc()))
	var nr *data.NotRegisteredError
	if !errors.As(err, &nr) || nr.Name != "test.late" || nr.Kind != "data row function" || !errors.Is(err, atoll.ErrNotFound) {
		t.Fatalf("late: %v, want a NotRegisteredError", err)
	}

	// A write into a directory that cannot be made.
	err = data.Range(4).WriteParquet(ctx, filepath.Join(file, "out"))
	var fle *data.FileError
	if !errors.As(err, &fle) || fle.Op != "write" || !strings.HasPrefix(fle.Path, filepath.Join(file, "out")) || !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("write: %v, FileError %+v", err, fle)
	}
}
