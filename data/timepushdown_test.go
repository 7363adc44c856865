package data_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// TestParquetTimePushdown: a filter on a timestamp or a date with a
// time.Time skips the row groups whose statistics rule it out, and keeps
// the rows a read of every row group keeps. The file is written twice:
// as Parquet 2.6, which stores nanoseconds, and as Parquet 1.0, which
// stores the nanosecond column as microseconds (its statistics too)
// while the Arrow schema kept in the file says nanoseconds.
func TestParquetTimePushdown(t *testing.T) {
	ctx := start(t)
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	s := arrow.NewSchema([]arrow.Field{
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
		{Name: "utc", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	for _, version := range []parquet.Version{parquet.V2_6, parquet.V1_0} {
		path := filepath.Join(t.TempDir(), "t.parquet")
		arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
		if version == parquet.V1_0 {
			arrowProps = pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithCoerceTimestamps(arrow.Microsecond))
		}
		// a row group a day: 00:00, 00:01, ... 01:39
		writeRowGroups(t, path, s, parquet.NewWriterProperties(parquet.WithVersion(version)), arrowProps, 4, func(b *array.RecordBuilder, g int) {
			for i := range 100 {
				at := day(g + 1).Add(time.Duration(i) * time.Minute)
				ns, _ := arrow.TimestampFromTime(at, arrow.Nanosecond)
				ms, _ := arrow.TimestampFromTime(at, arrow.Millisecond)
				b.Field(0).(*array.TimestampBuilder).Append(ns)
				b.Field(1).(*array.TimestampBuilder).Append(ms)
				b.Field(2).(*array.Date32Builder).Append(arrow.Date32FromTime(at))
			}
		})
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		unit := pf.MetaData().Schema.Column(0).LogicalType().(schema.TimestampLogicalType).TimeUnit()
		pf.Close()
		if want := map[parquet.Version]schema.TimeUnitType{parquet.V2_6: schema.TimeUnitNanos, parquet.V1_0: schema.TimeUnitMicros}[version]; unit != want {
			t.Fatalf("%s stored the nanosecond column in unit %v, want %v", version, unit, want)
		}
		noPushdown := data.DefaultConfig()
		noPushdown.NoPushdown = true
		for _, c := range []struct {
			cond    expr.Expr
			rows    int64
			skipped string
		}{
			{expr.Col("at").Ge(day(3).Add(30 * time.Minute)), 170, "row groups 2 read, 2 skipped"},
			{expr.Col("at").Gt(day(4).Add(99 * time.Minute)), 0, "row groups 0 read, 4 skipped"},
			{expr.Col("at").Le(day(1).Add(99 * time.Minute)), 100, "row groups 1 read, 3 skipped"},
			{expr.Col("utc").Lt(day(2).Add(time.Millisecond)), 101, "row groups 2 read, 2 skipped"},
			{expr.Col("day").Eq(day(2)), 100, "row groups 1 read, 3 skipped"},
			{expr.Col("day").Ge(day(5)), 0, "row groups 0 read, 4 skipped"},
		} {
			ds := data.ReadParquet(path).Filter(c.cond)
			n, err := ds.Count(ctx)
			if err != nil {
				t.Fatalf("%s: %s: %v", version, c.cond, err)
			}
			all, err := data.ReadParquet(path).WithConfig(noPushdown).Filter(c.cond).Count(ctx)
			if err != nil || n != c.rows || all != c.rows {
				t.Errorf("%s: %s: %d rows, %d without pushdown, want %d (%v)", version, c.cond, n, all, c.rows, err)
			}
			if st := ds.Stats(); !strings.Contains(st, c.skipped) {
				t.Errorf("%s: %s: stats lack %q:\n%s", version, c.cond, c.skipped, st)
			}
		}
	}
}
