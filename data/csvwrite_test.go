package data_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// TestWriteCSV: a file per task with a header, readable back by ReadCSV.
func TestWriteCSV(t *testing.T) {
	ctx := start(t)
	dir := filepath.Join(t.TempDir(), "csv")
	ds := data.Range(100).WithConfig(withParallelism(4)).MapBatches(double).FilterFunc(even)
	if err := ds.WriteCSV(ctx, dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 4 || filepath.Base(files[0]) != "part-00000.csv" {
		t.Fatalf("files %v, want part-00000.csv .. part-00003.csv", files)
	}
	b, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "id,x" || lines[1] != "26,52" || len(lines) != 1+12 {
		t.Fatalf("part-00001.csv:\n%s", b)
	}
	rows, err := data.ReadCSV(dir).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, rows, "x"); len(got) != 50 || !slices.IsSorted(got) || got[49] != 196 {
		t.Fatalf("read back %v", got)
	}
	if err := ds.WriteCSV(ctx, ""); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("WriteCSV(\"\"): %v", err)
	}
}
