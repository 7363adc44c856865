package data

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/csv"

	"github.com/atoll-runtime/atoll"
)

// WriteCSV writes the dataset to dir as files part-NNNNN.csv with a
// header line, one per task of the last stage, written by the tasks
// themselves (the write fuses with the maps before it, as WriteParquet's
// does). Nulls are written as empty fields; a task with no rows writes no
// file.
func (d *Dataset) WriteCSV(ctx context.Context, dir string) error {
	return d.writeFiles(ctx, "WriteCSV", "write_csv", dir)
}

// writeFiles runs the plan with a write op of kind last, each task of
// the last stage writing its file in dir; method names the caller for
// the error of no directory.
func (d *Dataset) writeFiles(ctx context.Context, method, kind, dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: data: %s needs a directory", atoll.ErrInvalidArgument, method)
	}
	w := &logicalOp{name: "write", kind: kindMap, op: opSpec{Kind: kind, Path: dir}}
	return d.execute(ctx, func(block) (bool, error) { return true, nil }, false, w)
}

// writeExt is the file extension of a write op's files ("" for an op that
// writes none): the executor names each task's file part-N<ext>.
func writeExt(kind string) string {
	switch kind {
	case "write_parquet":
		return ".parquet"
	case "write_csv":
		return ".csv"
	case "write_json":
		return ".json"
	}
	return ""
}

// writeCSVFile writes recs to path as CSV with a header (through a
// temporary file renamed at the end, so a retried task leaves no half
// file).
func writeCSVFile(path string, recs []arrow.RecordBatch) error {
	return writeFileAtomic(path, recs, func(f io.Writer) error {
		w := csv.NewWriter(f, recs[0].Schema(), csv.WithHeader(true), csv.WithNullWriter(""))
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				return err
			}
		}
		return w.Flush()
	})
}
