package data

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// sampleSpecs are specs of the shapes the planner makes.
func sampleSpecs() map[string]taskSpec {
	return map[string]taskSpec{
		"read and maps": {Read: &readSpec{Kind: "parquet", Path: "/data/in/part-00003.parquet", RowGroups: []int{7, 8}},
			Ops: []opSpec{{Kind: "map_batches", Fn: "bench.double", BatchSize: 4096}, {Kind: "filter", Fn: "bench.keep"},
				{Kind: "select", Columns: []string{"key", "value"}}, {Kind: "limit", Limit: 10, Offset: 3},
				{Kind: "rename", Columns: []string{"key", "k", "value", "v"}, Checked: true}, {Kind: "sample", Fraction: 0.25, Seed: 9}},
			Out: outSpec{Kind: "blocks", MaxBlocks: 8, TargetMaxBlockSize: 512 << 20, TaskIndex: 3}},
		"range": {Read: &readSpec{Kind: "range", Start: 100, End: 200}, Out: outSpec{Kind: "blocks", MaxBlocks: 8}},
		"csv": {Read: &readSpec{Kind: "csv", Path: "/data/in/a.csv", Schema: encodeSchema(csvArrowSchema([]csvField{{Name: "id", Kind: csvInt},
			{Name: "price", Kind: csvFloat}, {Name: "ok", Kind: csvBool}, {Name: "day", Kind: csvDate}, {Name: "at", Kind: csvTimestamp},
			{Name: "utc", Kind: csvTimestampUTC}, {Name: "note", Kind: csvString}})), CSV: csvDialect{Delimiter: ';', Nulls: []string{"", "NA"}}},
			Out: outSpec{Kind: "blocks", MaxBlocks: 8}},
		"json": {Read: &readSpec{Kind: "json", Path: "/data/in/a.jsonl", Schema: encodeSchema(arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
			{Name: "at", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64})}}, nil))},
			Out: outSpec{Kind: "blocks", MaxBlocks: 8}},
		"sort split": {Out: outSpec{Kind: "split", Parts: 4, Keys: []SortKey{{Column: "k", Descending: true}, {Column: "v"}},
			Bounds: []byte{1, 2, 3}}},
		"sample": {Out: outSpec{Kind: "sort_sample", MaxBlocks: 8, Samples: 64, Keys: []SortKey{{Column: "k"}}}},
		"key sample": {Read: &readSpec{Kind: "parquet", Path: "/data/in/part-00001.parquet", RowGroups: []int{2}, Columns: []string{"k"}},
			Out: outSpec{Kind: "key_sample", Samples: 64, Keys: []SortKey{{Column: "k"}}}},
		"agg map": {Ops: []opSpec{{Kind: "add_column", Fn: "f", Column: "c"}},
			Out: outSpec{Kind: "agg_map", Parts: 3, GroupKeys: []string{"k"}, Aggs: []Agg{Count(), Sum("x"), expr.Col("x").Mul(2).Mean().As("m")}}},
		"expressions": {Ops: []opSpec{{Kind: "where", Exprs: []expr.Expr{expr.Col("x").Gt(3).And(expr.Col("s").IsIn("a", "b"))}},
			{Kind: "with_column", Column: "y", Exprs: []expr.Expr{expr.When(expr.Col("x").IsNull()).Then(0).Otherwise(expr.Col("x").Cast(arrow.PrimitiveTypes.Float32))}},
			{Kind: "project", Exprs: []expr.Expr{expr.Col("y"), expr.Col("s").Contains("q").As("q")}}},
			Out: outSpec{Kind: "blocks", MaxBlocks: 8}},
		"shuffle": {Out: outSpec{Kind: "shuffle_reduce", MaxBlocks: 8, Seed: 42, TaskIndex: 7}},
		"join chunk": {Join: &joinSpec{How: "left", LeftKeys: []string{"k"}, RightKeys: []string{"id"}, Suffix: "_right",
			BuildKey: "join-1/7", Left: 2, ReportLeftMatched: true}, Out: outSpec{Kind: "blocks", MaxBlocks: 8}},
		"join left rest": {Join: &joinSpec{How: "anti", LeftKeys: []string{"k"}, RightKeys: []string{"k"}, Suffix: "_right",
			Left: 3, LeftRest: true, LeftMatched: []byte{0x5a, 0x01}, RightSchema: []byte{1, 2}}, Out: outSpec{Kind: "blocks", MaxBlocks: 8}},
		"zip and write": {Zip: &zipSpec{Skip: 5, Rows: 10},
			Ops: []opSpec{{Kind: "write_parquet", Path: "/out/part-00001.parquet"}}, Out: outSpec{Kind: "blocks", MaxBlocks: 8}},
	}
}

func TestTaskSpecRoundTrip(t *testing.T) {
	for name, s := range sampleSpecs() {
		got, err := decodeTask(encodeTask(&s))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(*got, s) {
			t.Errorf("%s: decoded %+v\nwant %+v", name, *got, s)
		}
	}
}

// Every spec a worker would trip over fails the decode with a
// MalformedError before anything runs.
func TestMalformedTaskSpecs(t *testing.T) {
	base := sampleSpecs()["read and maps"]
	for name, mutate := range map[string]func(*atollpb.DataTask){
		"unknown read":       func(m *atollpb.DataTask) { m.Read.Kind = "ftp" },
		"backward range":     func(m *atollpb.DataTask) { m.Read = &atollpb.DataRead{Kind: "range", Start: 5, End: 2} },
		"negative row group": func(m *atollpb.DataTask) { m.Read.RowGroups = []int64{-1} },
		"csv of no columns":  func(m *atollpb.DataTask) { m.Read = &atollpb.DataRead{Kind: "csv", Path: "a.csv"} },
		"csv of a list": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "csv", Path: "a.csv", Schema: encodeSchema(arrow.NewSchema(
				[]arrow.Field{{Name: "x", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil))}
		},
		"csv column without a name": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "csv", Path: "a.csv", Schema: encodeSchema(arrow.NewSchema(
				[]arrow.Field{{Type: arrow.PrimitiveTypes.Int64}}, nil))}
		},
		"csv delimited by a quote": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "csv", Path: "a.csv", Delimiter: '"', Schema: encodeSchema(csvArrowSchema([]csvField{{Name: "id", Kind: csvInt}}))}
		},
		"csv delimited by no rune": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "csv", Path: "a.csv", Delimiter: -5, Schema: encodeSchema(csvArrowSchema([]csvField{{Name: "id", Kind: csvInt}}))}
		},
		"csv of a huge null": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "csv", Path: "a.csv", Nulls: []string{strings.Repeat("n", maxString+1)},
				Schema: encodeSchema(csvArrowSchema([]csvField{{Name: "id", Kind: csvInt}}))}
		},
		"csv columns that do not decode": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "csv", Path: "a.csv", Schema: []byte("not a schema")}
		},
		"json of a date64": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "json", Path: "a.jsonl", Schema: encodeSchema(arrow.NewSchema(
				[]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Date64}}, nil))}
		},
		"json of a timestamp in no zone": func(m *atollpb.DataTask) {
			m.Read = &atollpb.DataRead{Kind: "json", Path: "a.jsonl", Schema: encodeSchema(arrow.NewSchema(
				[]arrow.Field{{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "../../etc/passwd"}}}, nil))}
		},
		"json without a schema":   func(m *atollpb.DataTask) { m.Read = &atollpb.DataRead{Kind: "json", Path: "a.jsonl"} },
		"unknown op":              func(m *atollpb.DataTask) { m.Ops[0].Kind = "explode" },
		"op without function":     func(m *atollpb.DataTask) { m.Ops[0].Func = "" },
		"negative limit":          func(m *atollpb.DataTask) { m.Ops[3].Limit = -1 },
		"select of nothing":       func(m *atollpb.DataTask) { m.Ops[2].Columns = nil },
		"no output":               func(m *atollpb.DataTask) { m.Out = nil },
		"rename of an odd list":   func(m *atollpb.DataTask) { m.Ops[4].Columns = m.Ops[4].Columns[:3] },
		"rename onto one name":    func(m *atollpb.DataTask) { m.Ops[4].Columns[3] = "k" },
		"rename to no name":       func(m *atollpb.DataTask) { m.Ops[4].Columns[1] = "" },
		"sample of more than all": func(m *atollpb.DataTask) { m.Ops[5].Fraction = 1.5 },
		"sample of NaN":           func(m *atollpb.DataTask) { m.Ops[5].Fraction = math.NaN() },
		"unknown output":          func(m *atollpb.DataTask) { m.Out.Kind = "scatter" },
		"no blocks":               func(m *atollpb.DataTask) { m.Out.MaxBlocks = 0 },
		"too many blocks":         func(m *atollpb.DataTask) { m.Out.MaxBlocks = maxReturns + 1 },
		"split of no parts":       func(m *atollpb.DataTask) { m.Out = &atollpb.DataOutput{Kind: "split"} },
		"key sample's blocks":     func(m *atollpb.DataTask) { m.Out = &atollpb.DataOutput{Kind: "key_sample", MaxBlocks: 8} },
		"negative zip":            func(m *atollpb.DataTask) { m.Zip = &atollpb.DataZip{Skip: -1} },
		"unknown aggregation": func(m *atollpb.DataTask) {
			m.Out.Aggs = []*atollpb.DataAgg{{Func: "median", Input: expr.Col("x").Proto(), Name: "median(x)"}}
		},
		"sum of no column":       func(m *atollpb.DataTask) { m.Out.Aggs = []*atollpb.DataAgg{{Func: "sum", Name: "sum()"}} },
		"where of no expression": func(m *atollpb.DataTask) { m.Ops = []*atollpb.DataOp{{Kind: "where"}} },
		"sort key of nothing":    func(m *atollpb.DataTask) { m.Out.Keys = []*atollpb.DataSortKey{{}} },
		"too many samples":       func(m *atollpb.DataTask) { m.Out.Samples = maxSamples + 1 },
		"write without a path":   func(m *atollpb.DataTask) { m.Ops = []*atollpb.DataOp{{Kind: "write_csv"}} },
		"JSON without a path":    func(m *atollpb.DataTask) { m.Ops = []*atollpb.DataOp{{Kind: "write_json"}} },
		"left rest of an inner join": func(m *atollpb.DataTask) {
			m.Join = &atollpb.DataJoin{How: "inner", LeftKeys: []string{"k"}, RightKeys: []string{"k"}, LeftRest: true}
		},
		"left rest that also joins": func(m *atollpb.DataTask) {
			m.Join = &atollpb.DataJoin{How: "left", LeftKeys: []string{"k"}, RightKeys: []string{"k"}, LeftRest: true, ReportLeftMatched: true}
		},
	} {
		var m atollpb.DataTask
		if err := proto.Unmarshal(encodeTask(&base), &m); err != nil {
			t.Fatal(err)
		}
		mutate(&m)
		b, err := proto.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeTask(b)
		var me *errs.MalformedError
		if !errors.As(err, &me) || me.What != specWhat {
			t.Errorf("%s: %v, want a MalformedError", name, err)
		}
	}
	if _, err := decodeTask([]byte("not a spec")); !errors.Is(err, errs.ErrMalformed) {
		t.Errorf("garbage: %v", err)
	}
}

func TestTaskMetaChecked(t *testing.T) {
	good := &taskMeta{Rows: []int64{3, 4}, Bytes: []int64{30, 40}, Schema: []byte{1}, WallNs: 5, CpuNs: 4, Attempt: 1}
	b, err := encodeMeta(good)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := decodeMeta(b, 2); err != nil || !proto.Equal(m, good) {
		t.Fatalf("decodeMeta = %v, %v", m, err)
	}
	for name, c := range map[string]struct {
		m      *taskMeta
		blocks int
	}{
		"more blocks than returns": {good, 1},
		"rows without bytes":       {&taskMeta{Rows: []int64{1}}, 8},
		"negative rows":            {&taskMeta{Rows: []int64{-1}, Bytes: []int64{1}}, 8},
		"negative attempt":         {&taskMeta{Attempt: -1}, 8},
	} {
		b, err := encodeMeta(c.m)
		if err != nil {
			t.Fatal(err)
		}
		var me *errs.MalformedError
		if _, err := decodeMeta(b, c.blocks); !errors.As(err, &me) || me.What != metaWhat {
			t.Errorf("%s: %v, want a MalformedError", name, err)
		}
	}
}

// FuzzDecodeTask: no bytes make the decoder panic, and what it accepts
// has the counts and kinds a task relies on.
func FuzzDecodeTask(f *testing.F) {
	for _, s := range sampleSpecs() {
		f.Add(encodeTask(&s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeTask(b)
		if err != nil {
			if !errors.Is(err, errs.ErrMalformed) {
				t.Fatalf("a decode error that is not ErrMalformed: %v", err)
			}
			return
		}
		if n := s.Out.numReturns(); (n < 2 && !s.Out.metaOnly()) || n > 1+maxReturns {
			t.Fatalf("accepted a task of %d returns", n)
		}
		for _, o := range s.Ops {
			if _, ok := opKinds[o.Kind]; !ok {
				t.Fatalf("accepted op %q", o.Kind)
			}
		}
		if s.Read != nil && !readKinds[s.Read.Kind] {
			t.Fatalf("accepted read %q", s.Read.Kind)
		}
	})
}

// FuzzDecodeMeta: no bytes make the driver's decoder panic, and what it
// accepts names no more blocks than the task returned.
func FuzzDecodeMeta(f *testing.F) {
	b, _ := encodeMeta(&taskMeta{Rows: []int64{3, 4}, Bytes: []int64{30, 40}, Schema: []byte{1, 2}, Samples: []byte{3}, WallNs: 5})
	f.Add(b, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, blocks uint8) {
		m, err := decodeMeta(b, int(blocks))
		if err != nil {
			if !errors.Is(err, errs.ErrMalformed) {
				t.Fatalf("a decode error that is not ErrMalformed: %v", err)
			}
			return
		}
		if len(m.Rows) > int(blocks) || len(m.Rows) != len(m.Bytes) {
			t.Fatalf("accepted %d rows and %d bytes for %d blocks", len(m.Rows), len(m.Bytes), blocks)
		}
	})
}

// BenchmarkTaskSpec measures a task spec's encoding in the driver and
// its decoding (with the checks) in the worker, once per task.
func BenchmarkTaskSpec(b *testing.B) {
	spec := sampleSpecs()["read and maps"]
	buf := encodeTask(&spec)
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			encodeTask(&spec)
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeTask(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTaskMeta measures a task's metadata: encoded in the worker,
// decoded in the driver, once per task.
func BenchmarkTaskMeta(b *testing.B) {
	meta := &taskMeta{Rows: []int64{262144, 1000}, Bytes: []int64{8 << 20, 32000}, Schema: make([]byte, 200), WallNs: 123456789, CpuNs: 98765432}
	buf, err := encodeMeta(meta)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeMeta(meta); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeMeta(buf, 8); err != nil {
				b.Fatal(err)
			}
		}
	})
}
