package data

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkWriteJSON: a write task's JSON lines for a million rows
// (int64, float64, string, timestamp), against arrow-go's own
// array.RecordToJSON (what a program without atoll would call) writing
// the same record to a file, timed after the loop the same number of
// times. RecordToJSON writes each row as a Go map, so its keys come out
// sorted by name, not in the schema's order.
func BenchmarkWriteJSON(b *testing.B) {
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "price", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String}, {Name: "at", Type: arrow.FixedWidthTypes.Timestamp_us}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer bld.Release()
	const n = 1 << 20
	at := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for i := range n {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Float64Builder).Append(float64(i%10000) / 100)
		bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("item %d", i%5000))
		bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Add(time.Duration(i) * time.Second).UnixMicro()))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(b.TempDir(), "part.json")
	start := time.Now()
	for range b.N {
		if err := writeJSONFile(path, []arrow.RecordBatch{rec}); err != nil {
			b.Fatal(err)
		}
	}
	ours := time.Since(start)
	b.StopTimer()
	start = time.Now()
	for range b.N {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if err := array.RecordToJSON(rec, w); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	theirs := time.Since(start)
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N*n), "ns/row")
	b.ReportMetric(float64(theirs.Nanoseconds())/float64(b.N*n), "record_to_json_ns/row")
	b.ReportMetric(float64(ours)/float64(theirs), "ratio")
}
