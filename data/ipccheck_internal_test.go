package data

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ipcSampleSchema has every part of a schema the checker walks: nested
// children, metadata on the schema and a field, a time zone, a union's
// type codes and a dictionary.
func ipcSampleSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: md},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.ListOf(arrow.BinaryTypes.String)}))},
		{Name: "u", Type: arrow.SparseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, []arrow.UnionTypeCode{7})},
		{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
	}, &md)
}

// TestIPCMetaChecked: every schema and block the writer makes passes
// the check and reads back; bytes flipped in them either fail to decode
// with an error or decode, and never make the reader ask for more
// memory than the process has (a flipped byte of a schema once asked
// arrow-go's reader for 376 GB, which killed the process).
func TestIPCMetaChecked(t *testing.T) {
	s := ipcSampleSchema()
	enc := encodeSchema(s)
	got, err := decodeSchema(enc)
	if err != nil || !got.Equal(s) {
		t.Fatalf("decodeSchema: %v, %v", got, err)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewInt64Array()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 3)
	blk, err := encodeBlock(rec)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeBlock(blk)
	if err != nil || back.NumRows() != 3 {
		t.Fatalf("decodeBlock: %v", err)
	}
	back.Release()
	rec.Release()
	col.Release()
	b.Release()

	r := rand.New(rand.NewPCG(1, 2))
	for _, orig := range [][]byte{enc, blk} {
		for range 20000 {
			m := append([]byte(nil), orig...)
			for range 1 + r.IntN(3) {
				m[8+r.IntN(len(m)-8)] = byte(r.IntN(256))
			}
			if rec, err := decodeBlock(m); err == nil {
				rec.Release()
			}
		}
	}
}

// TestIPCMetaRejects: the checker's own verdicts on metadata the reader
// would have trusted.
func TestIPCMetaRejects(t *testing.T) {
	enc := encodeSchema(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil))
	meta := enc[8 : 8+int(uint32(enc[4])|uint32(enc[5])<<8)]
	if err := checkIPCMeta(meta); err != nil {
		t.Fatalf("a schema the writer made: %v", err)
	}
	c := &ipcChecker{b: meta, budget: len(meta)}
	msg, _ := c.uoffset(0)
	header, _, _ := c.child(msg, 2)
	_, fields, _ := c.vector(header, 1, 4)
	field, _ := c.uoffset(fields)
	n, children, err := c.vector(field, 5, 4)
	if err != nil || n != 1 {
		t.Fatalf("the list's children: %d, %v", n, err)
	}
	for name, mutate := range map[string]func(m []byte){
		"children longer than the buffer": func(m []byte) { m[children-4+3] = 0x7f },
		"a child pointing back at its parent": func(m []byte) {
			to := field - children
			m[children], m[children+1], m[children+2], m[children+3] = byte(to), byte(to>>8), byte(to>>16), byte(to>>24)
		},
		"a field's table out of the buffer": func(m []byte) { m[fields+3] = 0x7f },
	} {
		m := append([]byte(nil), meta...)
		mutate(m)
		if err := checkIPCMeta(m); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// BenchmarkIPCMetaCheck measures the check of a block's messages beside
// the whole decode of that block (which includes it), for a block of
// every type the sample schema has, a thousand rows: the check's share
// of reading a block.
func BenchmarkIPCMetaCheck(b *testing.B) {
	s := ipcSampleSchema()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer bld.Release()
	for i := range 1000 {
		for j, f := range bld.Fields() {
			if j == 0 {
				f.(*array.Int64Builder).Append(int64(i))
				continue
			}
			f.AppendNull()
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	blk, err := encodeBlock(rec)
	if err != nil {
		b.Fatal(err)
	}
	var metas [][]byte // the metadata flatbuffer of each message
	for p := blk; len(p) >= 8; {
		n := int(uint32(p[4]) | uint32(p[5])<<8 | uint32(p[6])<<16 | uint32(p[7])<<24)
		if n == 0 {
			break
		}
		metas = append(metas, p[8:8+n])
		c := &ipcChecker{b: p[8 : 8+n], budget: n}
		root, _ := c.uoffset(0)
		msg, _ := c.table(root)
		body := 0
		if pos, _ := c.scalar(msg, 3, 8); pos != 0 {
			body = int(uint64(p[8+pos]) | uint64(p[8+pos+1])<<8 | uint64(p[8+pos+2])<<16 | uint64(p[8+pos+3])<<24)
		}
		p = p[8+n+body:]
	}
	var check, decode time.Duration
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			for _, m := range metas {
				if err := checkIPCMeta(m); err != nil {
					b.Fatal(err)
				}
			}
		}
		check = b.Elapsed() / time.Duration(b.N)
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			r, err := decodeBlock(blk)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
		decode = b.Elapsed() / time.Duration(b.N)
		if check > 0 {
			b.ReportMetric(float64(check)/float64(decode), "check/decode")
		}
	})
}
